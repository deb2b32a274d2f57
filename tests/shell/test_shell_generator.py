"""A grammar-driven generator of denied actions, against the permission engine.

`shell_grammar.py` holds ways to spell each denied action (delete the victim under a
``Bash(rm:*)`` deny, read the ``Read(./secrets/**)`` secret, write into the
``Edit(./protected/**)`` folder) and layers that put a command where bash runs it: as a
command in every compound the grammar has, or as a substitution in every kind of word and
expansion. First each layer and each spelling is run for real, to prove it does what it
says (a layer around ``rm -f victim`` deletes the victim). Then:

- every layer around every kind of action, every spelling alone, and every layer inside each
  of the layers that take a whole compound (`PAIR_OUTER`) is checked, on every run;
- hypothesis nests random spellings in random stacks of up to four layers.

The property, in every mode with the Bash sandbox off: no such command is allowed. An allowed
one is also run for real (under bubblewrap, in a fresh copy of the project) and what it did
is part of the failure. The project and the engine are `shell_corpus.py`'s, the oracle is
`shell_oracle.py`'s.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shell_corpus import PAYLOADS, Project
from shell_grammar import LAYERS, SPELLINGS, STYLES, Layer, nest
from shell_oracle import real_run

CI = os.environ.get("CI") == "true"
EXAMPLES = 300
MAX_CHECK_S = 0.05
pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("generated") / "run"


def assert_not_allowed(project: Project, scratch: Path, command: str) -> None:
    """The property: no mode allows `command`; a crash or a slow check fails too."""
    decision = project.decide(command)
    assert decision.error is None, f"{command!r} crashed the check: {decision.error}"
    if decision.cpu_s >= MAX_CHECK_S:  # measured again: a one-off pause is not its cost
        cost = project.check_cost(command)
        assert cost < MAX_CHECK_S, f"{command!r}: {cost * 1e3:.1f} ms CPU per check"
    if decision.allowed_in:
        harm = real_run(command, project.template, scratch)
        did = ", ".join(harm.did) or "nothing in this run"
        pytest.fail(f"{command!r} is allowed in {', '.join(decision.allowed_in)}; run: {did}")


# ── the generator's own parts, against bash ─────────────────────────────────────────────


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("layer", LAYERS, ids=[layer.name for layer in LAYERS])
def test_each_layer_really_runs_the_command(
    project: Project, runnable: None, scratch: Path, layer: Layer, style: str
) -> None:
    command = layer.wrap(PAYLOADS["delete"], style)
    harm = real_run(command, project.template, scratch)
    assert harm.did == ["deleted or changed the victim"], (command, harm)


@pytest.mark.parametrize(
    ("kind", "spelling"), [(k, s) for k, spellings in SPELLINGS.items() for s in spellings]
)
def test_each_spelling_really_does_its_harm(
    project: Project, runnable: None, scratch: Path, kind: str, spelling: str
) -> None:
    harm = real_run(spelling, project.template, scratch)
    expected = {
        "delete": "deleted or changed the victim",
        "read": "printed the secret",
        "write": "changed protected/",
    }[kind]
    assert expected in harm.did, (spelling, harm)


# ── the property ────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("kind", "spelling"), [(k, s) for k, spellings in SPELLINGS.items() for s in spellings]
)
def test_no_spelling_is_allowed(
    project: Project, runnable: None, scratch: Path, kind: str, spelling: str
) -> None:
    assert_not_allowed(project, scratch, spelling)


@pytest.mark.parametrize("kind", list(PAYLOADS))
@pytest.mark.parametrize("layer", LAYERS, ids=[layer.name for layer in LAYERS])
def test_no_layer_hides_an_action(
    project: Project, runnable: None, scratch: Path, layer: Layer, kind: str
) -> None:
    for style in STYLES:
        assert_not_allowed(project, scratch, layer.wrap(PAYLOADS[kind], style))


PAIR_OUTER = ("negation", "time", "coprocess", "background", "subshell", "function")
"""Layers that take a whole compound: each is put around every other layer, in turn."""


def test_no_pair_of_layers_hides_an_action(project: Project, runnable: None, scratch: Path) -> None:
    by_name = {layer.name: layer for layer in LAYERS}
    allowed = []
    for outer in PAIR_OUTER:
        for inner in LAYERS:
            command = nest(PAYLOADS["delete"], [inner, by_name[outer]], ["dollar"])
            decision = project.decide(command)
            assert decision.error is None, f"{command!r} crashed the check: {decision.error}"
            if decision.allowed_in:
                did = ", ".join(real_run(command, project.template, scratch).did) or "nothing"
                allowed.append(f"{command!r} in {', '.join(decision.allowed_in)}; run: {did}")
    assert not allowed, "\n".join(allowed)


_SPELLING = st.sampled_from([s for spellings in SPELLINGS.values() for s in spellings])


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=CI,  # the same examples on every CI run; new ones on every local run
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    spelling=_SPELLING,
    layers=st.lists(st.sampled_from(LAYERS), min_size=1, max_size=4),
    styles=st.lists(st.sampled_from(STYLES), min_size=1, max_size=4),
)
def test_nested_actions_are_never_allowed(
    project: Project,
    runnable: None,
    scratch: Path,
    spelling: str,
    layers: list[Layer],
    styles: list[str],
) -> None:
    assert_not_allowed(project, scratch, nest(spelling, layers, styles))
