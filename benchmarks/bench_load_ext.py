"""How long `%load_ext jupyter_toolhost` takes, in a fresh interpreter and in a real kernel.

Run with ``python -m benchmarks load_ext`` (or ``python -m benchmarks.bench_load_ext
[--repeats N] [--kernel-repeats N]``). The target is at most 150 ms (`targets.py` says why).
Every sample is a new process, so nothing one sample imported helps the next (the operating
system's file cache and Python's byte-code caches are warm for all of them, as they are for a
user whose machine has run Python before; ``PYTHONDONTWRITEBYTECODE`` is dropped for the samples).

In a fresh interpreter (a new Python process that builds IPython's `InteractiveShell`, outside
the timing; then `shell.run_line_magic("load_ext", ...)` is timed):

- **cold**: nothing else imported first, so everything the extension needs beyond IPython
  itself is imported inside the timing. This is the first `%load_ext` a user runs.
- **warm**: the same, but first (outside the timing) the modules the extension shares with a
  running Jupyter kernel or a notebook that shows widgets are imported: asyncio, ssl,
  subprocess (every ipykernel has them loaded), pydantic and ipywidgets. What is left inside
  the timing is this package's own import and its registration: the part this project
  controls.

In a real kernel (`jupyter_client`, the venv's python3 kernel, a temp working folder), from
sending the execute_request to receiving its execute_reply, as a front end sees it:

- **cold**: `%load_ext jupyter_toolhost` is the fresh kernel's first cell.
- **warm**: a first cell `import ipywidgets, pydantic` ran (outside the timing), then
  `%load_ext jupyter_toolhost`.

References, measured the same way in the same run (labelled as references, with no target):
`%load_ext autoreload` (an extension that ships with IPython) in a fresh interpreter and as a
fresh kernel's first cell; an empty first cell (`pass`) in a fresh kernel, the floor of any
first cell's round trip; and `import ipywidgets` and `import anthropic` in a fresh interpreter
with IPython built, the imports this package keeps out of `%load_ext` (anthropic is imported
on the first `%%agent` cell). Each figure is the median of its samples (the note gives the
fastest too).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .common import Measure, median, print_table, write_results

NAME = "bench_load_ext"
REPEATS = 7
KERNEL_REPEATS = 5
TARGET_MS = 150.0
KERNEL_TIMEOUT_S = 120.0
WARM_IMPORTS = ("asyncio", "ssl", "subprocess", "pydantic", "ipywidgets")

# Each shell case: (what is imported first, outside the timing; the timed statement; a check
# that the timed statement did its job). Run by CHILD in a new interpreter.
SHELL_CASES: dict[str, tuple[tuple[str, ...], str, str]] = {
    "cold": ((), "shell.run_line_magic('load_ext', 'jupyter_toolhost')", "agent_loaded()"),
    "warm": (
        WARM_IMPORTS,
        "shell.run_line_magic('load_ext', 'jupyter_toolhost')",
        "agent_loaded()",
    ),
    "ref_autoreload": (
        (),
        "shell.run_line_magic('load_ext', 'autoreload')",
        "'autoreload' in shell.magics_manager.magics['line']",
    ),
    "ref_import_ipywidgets": ((), "import ipywidgets", "'ipywidgets' in sys.modules"),
    "ref_import_anthropic": ((), "import anthropic", "'anthropic' in sys.modules"),
}
SHELL_LABELS = {
    "cold": "%load_ext jupyter_toolhost, fresh interpreter, cold",
    "warm": "%load_ext jupyter_toolhost, fresh interpreter, warm",
    "ref_autoreload": "reference: %load_ext autoreload, fresh interpreter",
    "ref_import_ipywidgets": "reference: import ipywidgets, fresh interpreter",
    "ref_import_anthropic": "reference: import anthropic, fresh interpreter",
}
CHILD = """
import importlib, json, sys, time
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
def agent_loaded():
    return "agent" in shell.magics_manager.magics["cell"]
first, timed, check = json.loads(sys.argv[1])
for name in first:
    importlib.import_module(name)
began = time.perf_counter()
exec(timed)
seconds = time.perf_counter() - began
print(json.dumps({"seconds": seconds, "ok": bool(eval(check))}))
"""

# Each kernel case: (an untimed first cell or None, the timed cell).
KERNEL_CASES: dict[str, tuple[str | None, str]] = {
    "cold": (None, "%load_ext jupyter_toolhost"),
    "warm": ("import ipywidgets, pydantic", "%load_ext jupyter_toolhost"),
    "ref_empty_cell": (None, "pass"),
    "ref_autoreload": (None, "%load_ext autoreload"),
}
KERNEL_LABELS = {
    "cold": "%load_ext jupyter_toolhost, fresh kernel, first cell (cold)",
    "warm": "%load_ext jupyter_toolhost, fresh kernel after import ipywidgets, pydantic (warm)",
    "ref_empty_cell": "reference: an empty first cell (pass), fresh kernel",
    "ref_autoreload": "reference: %load_ext autoreload, fresh kernel, first cell",
}
CHECK_LOADED = "assert 'agent' in get_ipython().magics_manager.magics['cell'], 'not loaded'"


class MeasureFailed(Exception):
    """A sample that did not do what it times (the run stops: no figure is better)."""


def child_env(home: Path) -> dict[str, str]:
    """The user's environment, with IPython's profile (history, startup files) in a temp dir
    and byte-code caches on, as on a user's machine (the warm-up sample writes them)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return env | {"IPYTHONDIR": str(home / "ipython")}


def shell_sample(case: str, folder: Path) -> float:
    """One new interpreter: seconds the case's timed statement took."""
    first, timed, check = SHELL_CASES[case]
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps([list(first), timed, check])],
        cwd=folder,
        env=child_env(folder),
        capture_output=True,
        text=True,
        timeout=KERNEL_TIMEOUT_S,
    )
    if done.returncode != 0:
        raise MeasureFailed(
            f"{case}: the interpreter exited {done.returncode}: {done.stderr[-500:]}"
        )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if not result["ok"]:
        raise MeasureFailed(f"{case}: the timed statement did not take effect")
    return float(result["seconds"])


def kernel_sample(case: str, folder: Path) -> float:
    """One fresh kernel: seconds from the timed cell's execute_request to its execute_reply."""
    from jupyter_client.manager import KernelManager

    first, timed = KERNEL_CASES[case]
    manager = KernelManager(kernel_name="python3")
    # The kernel's stderr (its "running over TCP" warning) would drown the table.
    manager.start_kernel(cwd=str(folder), env=child_env(folder), stderr=subprocess.DEVNULL)
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=KERNEL_TIMEOUT_S)
        if first is not None:
            _execute(client, first)
        began = time.perf_counter()
        reply = _execute(client, timed)
        seconds = time.perf_counter() - began
        if reply["content"]["status"] != "ok":
            raise MeasureFailed(f"{case}: {timed!r} failed: {reply['content']}")
        if "jupyter_toolhost" in timed:
            check = _execute(client, CHECK_LOADED)
            if check["content"]["status"] != "ok":
                raise MeasureFailed(f"{case}: the extension did not load: {check['content']}")
        return seconds
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def _execute(client: Any, code: str) -> dict[str, Any]:
    """Send one execute_request and wait for its execute_reply (other replies are skipped)."""
    msg_id = client.execute(code, store_history=False)
    deadline = time.monotonic() + KERNEL_TIMEOUT_S
    while True:
        reply = client.get_shell_msg(timeout=max(deadline - time.monotonic(), 0.1))
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply


def sample_all(
    cases: Sequence[str], repeats: int, take: Any, folder: Path
) -> dict[str, list[float]]:
    """`repeats` rounds, each case once per round (interleaved), after one warm-up each."""
    for case in cases:
        take(case, folder)  # fills the file cache and byte-code caches, not counted
    samples: dict[str, list[float]] = {case: [] for case in cases}
    for _ in range(repeats):
        for case in cases:
            samples[case].append(take(case, folder))
    return samples


def measures(prefix: str, labels: dict[str, str], samples: dict[str, list[float]]) -> list[Measure]:
    found = []
    for case, runs in samples.items():
        target = "" if case.startswith("ref_") else f"; target <= {TARGET_MS:.0f} ms"
        note = f"median of {len(runs)}, fastest {min(runs) * 1e3:.0f} ms{target}"
        found.append(Measure(f"{prefix}.{case}_ms", labels[case], median(runs) * 1e3, "ms", note))
    return found


def main(repeats: int, kernel_repeats: int) -> list[Measure]:
    with tempfile.TemporaryDirectory(prefix="bench-load-ext-") as tmp:
        folder = Path(tmp)
        shell = sample_all(list(SHELL_CASES), repeats, shell_sample, folder)
        found = measures("shell", SHELL_LABELS, shell)
        if kernel_repeats > 0:
            kernel = sample_all(list(KERNEL_CASES), kernel_repeats, kernel_sample, folder)
            found += measures("kernel", KERNEL_LABELS, kernel)
    return found


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--kernel-repeats", type=int, default=KERNEL_REPEATS)
    args = parser.parse_args()
    started = time.perf_counter()
    results = main(args.repeats, args.kernel_repeats)
    print_table(f"%load_ext jupyter_toolhost (target <= {TARGET_MS:.0f} ms)", results)
    extra = {"repeats": args.repeats, "kernel_repeats": args.kernel_repeats}
    print(f"\nwritten to {write_results(NAME, results, extra)}")
    print(f"({time.perf_counter() - started:.0f} s)")
