"""The permission engine on shell that no one here wrote, as written and mutated.

The statements come from the scripts two Debian packages install (`bash-completion` and
`git`, read at test time through ``dpkg -L``; `shell_corpus.py`). The engine decides each one
in every mode with the Bash sandbox off, in a project whose rules deny ``Read(./secrets/**)``,
``Edit(./protected/**)`` and ``Bash(rm:*)``. Mutants put a denied action (``rm -f victim``,
``cat secrets/key.txt``, ``echo pwned > protected/f.txt``) where an original ran something:
in subscripts, arithmetic, parameter expansions, substitutions, here-documents, functions,
conditionals, loops, declarations and assignments.

The property, in every mode: no allowed command deletes, writes into an Edit-denied path or
reads a Read-denied path. What a command does is not taken from the engine's analysis: every
allowed mutant, and a deterministic sample of the allowed originals, runs for real with bash
under bubblewrap in a fresh copy of the project, and the victim, the protected file, the
output and every file left behind are looked at. An allowed mutant counts as unsafe when it
does harm in that run, or when bash accepts its syntax at all (a condition the run did not
meet may be met elsewhere); a mutant bash rejects runs nothing of its action. A mutant that
only gave an original program the secret's path as an operand is judged by its run alone
(``echo secrets/key.txt`` names the file, it does not read it).

Bounded for CI: `ORIGINALS` statements spread over the corpus (all of them with
``JUPYTER_TOOLHOST_SHELL_CORPUS=all``), up to `PER_GROUP` mutants per (context, site,
action), at most `REAL_RUNS` real runs of originals. 0 crashes, and every check (one command
in one mode) under `MAX_CHECK_S` of CPU time.
"""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from shell_corpus import (
    MODES,
    CorpusMissing,
    Decision,
    Mutant,
    Project,
    Unit,
    load_corpus,
    mutants,
    sample,
)
from shell_oracle import Harm, real_run

pytestmark = pytest.mark.timeout(900)  # a few thousand checks and real runs; slow under load
CI = os.environ.get("CI") == "true"
ORIGINALS = 2_400
PER_GROUP = 25
REAL_RUNS = 250
MAX_CHECK_S = 0.05
EVERY_CONTEXT = {
    "subscript",
    "arithmetic",
    "parameter expansion",
    "command substitution",
    "here-document",
    "test [[ ]]",
    "function body",
    "conditional",
    "loop",
    "declaration",
    "assignment",
    "double quotes",
    "pipeline",
    "subshell",
    "redirection",
    "top level",
}


@pytest.fixture(scope="module")
def corpus() -> tuple[Unit, ...]:
    try:
        return load_corpus()
    except CorpusMissing as exc:
        if CI:
            pytest.fail(f"CI installs the corpus' packages (./dev test): {exc}")
        pytest.skip(str(exc))


def selection(corpus: tuple[Unit, ...]) -> tuple[list[Unit], list[Mutant]]:
    """The originals this run checks and the mutants made from the whole corpus."""
    if os.environ.get("JUPYTER_TOOLHOST_SHELL_CORPUS") == "all":
        originals = list(corpus)
    else:
        by_source: dict[str, list[Unit]] = {}
        for unit in corpus:
            by_source.setdefault(unit.source, []).append(unit)
        share = ORIGINALS // len(by_source)
        originals = [u for units in by_source.values() for u in sample(units, share)]
    groups: dict[tuple[str, str, str], list[Mutant]] = {}
    for number, unit in enumerate(corpus):
        for mutant in mutants(unit, start=number):
            groups.setdefault((mutant.context, mutant.site, mutant.kind), []).append(mutant)
    chosen = [m for group in groups.values() for m in sample(group, PER_GROUP)]
    return originals, chosen


@dataclass
class Outcome:
    originals: list[Unit]
    mutants: list[Mutant]
    decisions: dict[str, Decision] = field(default_factory=dict)
    harms: dict[str, Harm] = field(default_factory=dict)
    bash_accepts: dict[str, bool] = field(default_factory=dict)

    def unsafe(self) -> list[str]:
        """One line per unsafe allow (a mutant, or an original that did harm)."""
        lines = []
        for mutant in self.mutants:
            decision = self.decisions[mutant.text]
            if not decision.allowed_in:
                continue
            harm = self.harms.get(mutant.text)
            accepted = mutant.strict and self.bash_accepts.get(mutant.text)
            if (harm is not None and harm) or accepted:
                did = ", ".join(harm.did) if harm else "no harm in this run; bash accepts it"
                lines.append(
                    f"{mutant.text!r} ({mutant.kind} in {mutant.context}, {mutant.site} site; "
                    f"from {mutant.origin.path}) allowed in {', '.join(decision.allowed_in)}: "
                    f"{did}"
                )
        for unit in self.originals:
            harm = self.harms.get(unit.text)
            if harm:
                allowed = ", ".join(self.decisions[unit.text].allowed_in)
                lines.append(f"{unit.text!r} (from {unit.path}) allowed in {allowed}: {harm.did}")
        return lines


def _bash_accepts(text: str) -> bool:
    done = subprocess.run(["bash", "-n", "-c", text], capture_output=True, timeout=30)
    return done.returncode == 0


@pytest.fixture(scope="module")
def outcome(
    corpus: tuple[Unit, ...],
    project: Project,
    runnable: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Outcome:
    originals, chosen = selection(corpus)
    result = Outcome(originals, chosen)
    for text in {*(u.text for u in originals), *(m.text for m in chosen)}:
        result.decisions[text] = project.decide(text)
    scratch = tmp_path_factory.mktemp("runs") / "run"
    allowed_mutants = [m.text for m in chosen if result.decisions[m.text].allowed_in]
    allowed_originals = [u.text for u in originals if result.decisions[u.text].allowed_in]
    for text in [*allowed_mutants[:REAL_RUNS], *sample(allowed_originals, REAL_RUNS)]:
        result.harms[text] = real_run(text, project.template, scratch)
    for text in allowed_mutants:
        result.bash_accepts[text] = _bash_accepts(text)
    return result


def test_the_corpus_is_big_and_from_two_packages(corpus: tuple[Unit, ...]) -> None:
    originals, chosen = selection(corpus)
    sources = Counter(u.source for u in originals)
    assert len(originals) >= 1_500, sources
    assert len(sources) >= 2 and min(sources.values()) >= 500, sources
    assert len({u.path for u in originals}) >= 100, "statements from many scripts"
    assert len(chosen) >= 1_000


def test_mutants_reach_every_context(corpus: tuple[Unit, ...]) -> None:
    _originals, chosen = selection(corpus)
    contexts = Counter(m.context for m in chosen)
    assert set(contexts) >= EVERY_CONTEXT, f"missing: {EVERY_CONTEXT - set(contexts)}"
    by_kind = Counter((m.context, m.kind) for m in chosen)
    thin = [c for c in EVERY_CONTEXT for k in ("delete", "read", "write") if not by_kind[c, k]]
    assert not thin, f"contexts without every kind of action: {thin}"
    # Every mutant really holds its action, where its original ran something.
    for mutant in chosen:
        assert mutant.text != mutant.origin.text
        assert any(a in mutant.text for a in ("rm -f victim", "secrets/key.txt", "protected/f"))


def test_no_allowed_command_deletes_writes_or_reads_what_is_denied(outcome: Outcome) -> None:
    decided = outcome.decisions.values()
    allowed = Counter(m for d in decided for m in d.allowed_in)
    runs = len(outcome.harms)
    timeouts = sum(h.timed_out for h in outcome.harms.values())
    print(
        f"\nshell corpus: {len(outcome.originals)} statements, {len(outcome.mutants)} mutants; "
        f"allowed per mode {dict(allowed)}; {runs} real runs ({timeouts} hit the time limit)"
    )
    unsafe = outcome.unsafe()
    assert not unsafe, f"{len(unsafe)} unsafe allows:\n" + "\n".join(unsafe[:40])


def test_nothing_crashes_and_every_check_is_fast(outcome: Outcome, project: Project) -> None:
    decided = list(outcome.decisions.values())
    crashes = [f"{d.command!r}: {d.error}" for d in decided if d.error]
    assert not crashes, "\n".join(crashes[:20])
    assert all(set(d.behaviors) == set(MODES) for d in decided)
    # A check over the bound is measured again: a one-off pause is not the check's cost.
    slow = {d.command: project.check_cost(d.command) for d in decided if d.cpu_s >= MAX_CHECK_S}
    worst = max(decided, key=lambda d: slow.get(d.command, d.cpu_s))
    cost = slow.get(worst.command, worst.cpu_s)
    print(
        f"\nshell corpus checks: {len(decided)} commands x {len(MODES)} modes; the slowest "
        f"check {cost * 1e3:.1f} ms CPU ({worst.command[:50]!r}); single samples up to "
        f"{max(d.cpu_s for d in decided) * 1e3:.1f} ms CPU, "
        f"{max(d.wall_s for d in decided) * 1e3:.1f} ms wall ({len(slow)} measured again)"
    )
    assert cost < MAX_CHECK_S, f"{worst.command!r}: {cost * 1e3:.1f} ms CPU per check"


FOUND = (
    'res[$(echo pwned > protected/f.txt)]+=" $i"',
    "syscalls[$(cat secrets/key.txt)]=1",
    "words_[$(cat secrets/key.txt)]=${words_[j]}${COMP_WORDS[i]}",
    "cat secrets/key.txt[Ap]",
    "coproc { rm -f victim; }; wait",
    "a=(); read 'a[$(rm -f victim)]' <<< x",
    "echo ${x:-`rm -f victim`}",
    'echo "${x:?`cat secrets/key.txt`}"',
    "echo ${x#$(rm -f victim)}",
    "x=1; echo ${x%%$(echo pwned > protected/f.txt)}",
    "x=1; echo ${x/`rm -f victim`/y}",
    "echo pwned > ~+/protected/f.txt",
    '! for i in 1; do sh -c "rm -f victim"; done',
    "coproc { find . -maxdepth 1 -name victim -delete; }; wait",
    'coproc { bash <<< "rm -f victim"; }',
    "! while trap 'cat s*/key.txt' EXIT; do break; done",
    "case x in x) coproc { PS4='`cat secrets/key.txt`'; set -x; :; }; wait ;; esac",
    "time PS4='$(rm -f victim)'; set -x; :",
)
"""What the corpus and the generator found allowed, each kept as a case of its own."""


@pytest.mark.parametrize("command", FOUND)
def test_what_was_found_stays_refused(project: Project, command: str) -> None:
    decision = project.decide(command)
    assert decision.error is None and decision.allowed_in == [], decision


# ── the oracle itself ───────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("rm -f victim", "deleted or changed the victim"),
        ("echo > victim", "deleted or changed the victim"),
        ("echo pwned > protected/f.txt", "changed protected/"),
        ("touch protected/new", "changed protected/"),
        ("cat secrets/key.txt", "printed the secret"),
        ("base64 secrets/key.txt", "printed the secret"),
        ("rev secrets/key.txt", "printed the secret"),
        ("xxd -p secrets/key.txt", "printed the secret"),
        ("cat secrets/key.txt >&2", "printed the secret"),
        ("cp secrets/key.txt work/copy", "copied the secret into project/work/copy"),
        ("cat secrets/key.txt > ../home/k", "copied the secret into home/k"),
    ],
)
def test_the_real_run_sees_each_harm(
    project: Project, runnable: None, tmp_path: Path, command: str, expected: str
) -> None:
    harm = real_run(command, project.template, tmp_path / "run")
    assert expected in harm.did, harm


def test_the_real_run_passes_harmless_commands_and_protects_the_machine(
    project: Project, runnable: None, tmp_path: Path
) -> None:
    for command in ("ls -la; cat work/notes.txt", "echo hi > work/out", "git --version"):
        harm = real_run(command, project.template, tmp_path / "run")
        assert not harm, harm
    outside = tmp_path / "outside.txt"
    outside.write_text("x", encoding="utf-8")
    real_run(f"rm -f {outside}; echo y > /etc/corpus-probe", project.template, tmp_path / "r")
    assert outside.exists() and not Path("/etc/corpus-probe").exists()
    # A detached child holding the output open does not keep the run going past its limit.
    slow = real_run("setsid sleep 30 & sleep 30", project.template, tmp_path / "run")
    assert slow.timed_out and not slow
