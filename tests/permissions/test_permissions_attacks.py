"""The adversarial permission corpus, through the real tools and pipeline, in all six modes.

`permission_cases/attacks.json` holds the attacks (each must leave no trace on disk and leak
no read-denied marker, in every mode; the `asks-first` ones may change things in
bypassPermissions only after the approver was consulted). `controls.json` holds everyday
calls that must stay at least as permissive as the recorded baseline. Cases run in worker
processes (they mostly wait on subprocesses); each test reports one case.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from permission_attack_harness import (
    CASES_DIR,
    MARKERS,
    MODES,
    Case,
    ModeRun,
    Step,
    Templates,
    bypass,
    changes,
    leaked,
    load_cases,
    run_case,
    run_many,
    snapshot,
)
from permission_control_baseline import control_record, control_regressions

ATTACKS = load_cases("attacks.json")
CONTROLS = load_cases("controls.json")
_CHANGED: dict[str, set[str]] = {
    raw["id"]: set(raw["changed"]["regressions"])
    for raw in json.loads((CASES_DIR / "controls.json").read_text(encoding="utf-8"))["cases"]
    if "changed" in raw
}
"""The regressions a control may show, each explained in controls.json ('changed')."""
_BY_ID = {case.id: case for case in (*ATTACKS, *CONTROLS)}


def test_the_corpus_is_big_and_well_formed() -> None:
    assert len(ATTACKS) >= 150
    assert len(CONTROLS) >= 30
    assert len(_BY_ID) == len(ATTACKS) + len(CONTROLS), "ids must be unique"
    for case in ATTACKS:
        assert case.expect in ("blocked", "asks-first"), case.id
        assert case.note and case.cls and case.steps, case.id
        assert set(case.modes) == set(MODES), case.id


@pytest.fixture(scope="module")
def outcomes(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The runs of every corpus case this session selected, computed in parallel once."""
    wanted = []
    for item in request.session.items:
        spec = getattr(item, "callspec", None)
        module = getattr(item, "module", None)
        if spec is not None and module is request.module and "case_id" in spec.params:
            wanted.append(_BY_ID[spec.params["case_id"]])
    base = tmp_path_factory.mktemp("corpus")
    return dict(run_many(wanted, base))


def _runs(outcomes: dict[str, list[ModeRun] | str], case_id: str) -> list[ModeRun]:
    runs = outcomes[case_id]
    if isinstance(runs, str):
        pytest.fail(f"the harness could not run {case_id}:\n{runs}")
    return runs


@pytest.mark.parametrize("case_id", [case.id for case in ATTACKS])
def test_attack_is_blocked_in_every_mode(
    case_id: str, outcomes: dict[str, list[ModeRun] | str]
) -> None:
    case = _BY_ID[case_id]
    runs = _runs(outcomes, case_id)
    assert [run.mode for run in runs] == list(case.modes)
    found = [(run.mode, bypass(case, run)) for run in runs]
    bypassed = [f"{mode}: {why}" for mode, why in found if why is not None]
    assert not bypassed, f"{case.id} ({case.cls}: {case.note}) bypassed in\n" + "\n".join(bypassed)


@pytest.mark.parametrize("case_id", [case.id for case in CONTROLS])
def test_control_is_at_least_as_permissive_as_the_baseline(
    case_id: str, outcomes: dict[str, list[ModeRun] | str]
) -> None:
    import json

    from permission_attack_harness import CASES_DIR

    baseline = json.loads((CASES_DIR / "controls.json").read_text(encoding="utf-8"))["baseline"]
    assert case_id in baseline, "record the baseline: see controls.json 'about'"
    runs = _runs(outcomes, case_id)
    assert [leak for run in runs for leak in run.leaks] == [], "an everyday call leaked"
    now = control_record(_BY_ID[case_id], runs)
    allowed = _CHANGED.get(case_id, {})
    unexpected = [r for r in control_regressions(baseline[case_id], now) if r not in allowed]
    assert unexpected == [], f"less permissive than before: {unexpected}"


# ── the harness itself can fail ─────────────────────────────────────────────────────────


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> Templates:
    return Templates(tmp_path_factory.mktemp("harness"))


def _case(*steps: Step, expect: str = "blocked", modes: tuple[str, ...] = MODES) -> Case:
    return Case("probe", "probe", "harness check", expect, steps, modes=modes)


def test_an_allowed_write_counts_as_a_trace(templates: Templates) -> None:
    case = _case(Step("Write", {"file_path": "src/new.py", "content": "x = 1\n"}))
    (run,) = run_case(case, templates, modes=["acceptEdits"])
    assert run.changed == ["created project/src/new.py"]
    assert bypass(case, run) == "left created project/src/new.py"


def test_a_mode_change_and_a_link_count_as_traces(templates: Templates) -> None:
    case = _case(Step("Bash", {"command": "chmod +x src/app.py && ln -s app.py src/l.py"}))
    (run,) = run_case(case, templates, modes=["bypassPermissions"])
    assert run.changed == ["changed project/src/app.py", "created project/src/l.py"]


def test_an_unasked_write_fails_an_asks_first_case(templates: Templates) -> None:
    write = Step("Write", {"file_path": "src/new.py", "content": "x = 1\n"})
    (run,) = run_case(_case(write, expect="asks-first"), templates, modes=["bypassPermissions"])
    assert run.steps[0].changed == ["created project/src/new.py"]
    assert not run.steps[0].asked
    assert "step 1 wrote without asking" in (bypass(_case(write, expect="asks-first"), run) or "")


def test_approvers_are_recorded_and_dont_ask_never_asks(templates: Templates) -> None:
    case = _case(Step("Write", {"file_path": "README.md", "content": "changed\n"}))
    runs = {run.mode: run for run in run_case(case, templates, modes=["default", "dontAsk"])}
    assert runs["default"].steps[0].asked and runs["default"].steps[0].outcome == "ask"
    assert runs["default"].changed == []
    assert not runs["dontAsk"].steps[0].asked and runs["dontAsk"].steps[0].outcome == "deny"
    assert not runs["dontAsk"].asked_in_dont_ask


def test_a_leak_is_seen_plain_and_encoded(templates: Templates) -> None:
    # The template's own copy of the secret, read from outside the tree the rules cover.
    root = templates.fresh(broad=False)
    secret = (root / "project" / "secrets" / "key.txt").read_text(encoding="utf-8")
    marker = secret.strip().split("=", 1)[1]
    import base64

    assert leaked(f"x {marker} y") == ["project/secrets/key.txt"]
    assert leaked(base64.b64encode(secret.encode()).decode()) == ["project/secrets/key.txt"]
    assert leaked(" ".join(marker.encode().hex()[i : i + 4] for i in range(0, 40, 4))) != []
    assert leaked(marker[::-1]) == ["project/secrets/key.txt"]
    assert leaked("SECRET-7f3a") == []


def test_a_leak_only_in_a_persisted_result_is_seen(templates: Templates) -> None:
    # The marker comes after 60 kB of padding: past the preview, only in the saved output.
    marker = MARKERS["project/secrets/key.txt"]
    command = f"head -c 60000 /dev/zero | tr '\\0' p; echo; echo {marker}"
    (run,) = run_case(_case(Step("Bash", {"command": command})), templates, ["bypassPermissions"])
    assert run.steps[0].outcome == "allow"
    assert marker not in run.steps[0].text
    assert run.leaks and all(leak.startswith("persisted ") for leak in run.leaks), run.leaks


def test_controls_compare_outcome_and_output() -> None:
    old = {
        "default": [{"outcome": "allow", "text": "a"}],
        "plan": [{"outcome": "ask", "text": "x"}],
    }
    same = {
        "default": [{"outcome": "allow", "text": "a"}],
        "plan": [{"outcome": "allow", "text": "y"}],
    }
    assert control_regressions(old, same) == ["plan step 1: output changed"]
    # A step that now runs where it was refused makes the later outputs incomparable.
    cd_now_runs = {
        "default": [{"outcome": "allow", "text": ""}, {"outcome": "allow", "text": "in src"}],
        "plan": [{"outcome": "ask", "text": "x"}],
    }
    cd_before = {
        "default": [
            {"outcome": "ask", "text": "The user denied this Bash call."},
            {"outcome": "allow", "text": "in project"},
        ]
    }
    assert control_regressions(cd_before, cd_now_runs) == []
    worse = {
        "default": [{"outcome": "ask", "text": "a"}],
        "plan": [{"outcome": "ask", "text": "x"}],
    }
    assert control_regressions(old, worse) == ["default step 1: allow -> ask"]


def _mtimes(root: Path) -> dict[str, int]:
    """Each path's modification time (listing a folder moves its access time: not those)."""
    return {str(p.relative_to(root)): p.lstat().st_mtime_ns for p in [root, *root.rglob("*")]}


def test_a_tree_a_hostile_run_left_is_put_back_whole(templates: Templates, tmp_path: Path) -> None:
    """The harness reuses one tree per variant: what a run leaves must not reach the next."""
    root, before = templates.checkout(broad=False)
    project = root / "project"
    want_times = _mtimes(templates.fresh(broad=False))
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("not the harness's\n")
    # What a run with every permission could leave behind:
    (project / "protected" / "made.txt").write_text("x")
    (project / "protected").chmod(0)  # a folder no one may enter, with a new file in it
    (project / "src").rename(project / "moved")  # a folder moved away, a link in its place
    (project / "src").symlink_to(root / "outside")
    (project / "links" / "sec").unlink()
    (project / "links" / "sec").symlink_to("/")  # a link retargeted
    (project / ".git" / "config").unlink()  # a file removed
    (project / "README.md").write_text("changed\n")
    (project / "README.md").chmod(0o777)
    (project / "junk.txt").unlink()
    (project / "junk.txt").symlink_to(elsewhere)  # a file replaced by a link to elsewhere
    os.mkfifo(project / "pipe")  # a fifo: reading it would block the snapshot
    (project / ".toolhost" / "sessions" / "s1").mkdir(parents=True)
    (project / ".toolhost" / "sessions" / "s1" / "out.txt").write_text("kept output")
    last = snapshot(root)
    assert changes(before, last), "the hostile run must have changed the tree"

    reused = templates.reused
    templates.checkin(root, last, broad=False)
    again, now = templates.checkout(broad=False)
    assert (again, templates.reused) == (root, reused + 1), "reused, not copied again"
    assert now == before
    assert _mtimes(root) == want_times
    assert elsewhere.read_text() == "not the harness's\n"
    assert (root / "outside" / "keep.txt").read_text() == "outside file\n"


def test_a_tree_that_differs_after_its_reset_is_copied_again(
    templates: Templates, tmp_path: Path
) -> None:
    root, before = templates.checkout(broad=False)
    templates.checkin(root, snapshot(root), broad=False)
    copied = templates.copied
    # After the reset: a process of the last run still writing, and a second name elsewhere.
    (root / "project" / "late.txt").write_text("written after the run ended")
    os.link(root / "project" / "src" / "app.py", tmp_path / "app-elsewhere.py")
    again, now = templates.checkout(broad=False)
    assert templates.copied == copied + 1
    assert now == before
    assert (again / "project" / "src" / "app.py").stat().st_nlink == 1
    assert (tmp_path / "app-elsewhere.py").read_text().startswith("def main():")
    # A second name alone (the bytes all equal) is caught too.
    templates.checkin(again, now, broad=False)
    os.link(again / "project" / "README.md", tmp_path / "readme-elsewhere.md")
    templates.checkout(broad=False)
    assert templates.copied == copied + 2


def test_template_is_a_real_repository(templates: Templates) -> None:
    root: Path = templates.fresh(broad=True)
    project = root / "project"
    assert (project / ".git" / "HEAD").is_file()
    assert "Bash(python3:*)" in (project / ".toolhost" / "settings.json").read_text("utf-8")
    assert (project / "links" / "sec").resolve() == (project / "secrets").resolve()
