"""The kernel's secrets stay in the kernel: a real kernel over jupyter_client, the loopback
Messages API, and a scripted model that tries to reach them.

InspectVariable and ListVariables run unasked in every mode, so every attack on them is
tried in each mode: the two chains of issue 40 (`get_ipython.__self__...` to the API key
and to the kernel's signing key) and the ways around them a hostile model would try next.
Each must come back refused, naming PythonExec, with neither secret in it, while the
user's own data still reads. Then the secrets are printed on purpose (Bash on a `.env`
file and on the kernel's `/proc/<pid>/environ` with the sandbox off, Read, PythonExec): the
tool_result the server received, the cell's output and every file under `.toolhost` must
hold a marker, never the value. The keys are fakes made for these tests.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kernel_helpers import CellRun, Kernel, agent_kernel

from jupyter_toolhost.testing import MessagesServer, Turn, text, tool_use

pytestmark = pytest.mark.timeout(240)

FAKE_KEY = "sk-ant-api03-FAKE-KEY-FOR-TESTS-ONLY-0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f"
"""The kernel's ANTHROPIC_API_KEY (the loopback server takes any key)."""
FAKE_GATEWAY_KEY = "gateway-fake-key-for-tests-only-31415926535897932384626"
"""KERNEL_ANTHROPIC_API_KEY: the key a gateway passes on, redacted by name too."""
FAKE_GITHUB = "ghp_FAKEtokenFORtestsONLY0123456789abcdef"

MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto")

SETUP = """
import os, json, sys
import pandas as pd

class Lazy:
    calls = 0
    def __init__(self):
        self.label = "lazy"
        self.env = os.environ
    @property
    def data(self):
        Lazy.calls += 1
        return "computed"

class Remote:
    def __getattr__(self, name):
        Lazy.calls += 1
        return name

def scale(x):
    return x

prices = pd.DataFrame({"price": [1.5, 2.5], "qty": [3, 4]})
config = {"db": {"host": "localhost", "port": 5432}, "env": os.environ}
lazy, remote = Lazy(), Remote()
env = os.environ
shell = get_ipython()
namespace = globals()
history = Out

import weakref
from functools import partial
holder = [get_ipython(), os.environ, 7]
part = partial(get_ipython().run_cell, get_ipython())
proxy = weakref.proxy(get_ipython())
modules = sys.modules
numbers = (n * n for n in range(3))
"""

ATTACKS = (
    "get_ipython.__self__._orig_sys_modules_main_mod.app.os.environ",
    "get_ipython.__self__.kernel.session.key",
    "get_ipython",
    "__builtins__",
    "sys.modules",
    "os.environ",
    "os",
    "json",
    "scale.__globals__",
    "type(scale).__init__.__globals__",
    "scale.__code__",
    "Out",
    "In",
    "_oh",
    "_i",
    "_",
    "exit.__self__",
    "lazy.data",
    "remote.secret",
    "lazy.env",
    "lazy.__class__",
    "env",
    "config['env']",
    "shell.kernel.session.key",
    "shell",
    "namespace",
    "history",
    "prices.__dict__",
    "prices._mgr",
    "getattr(shell, 'kernel')",
    "holder[0]",
    "holder[1]",
    "part.args[0]",
    "part.func",
    "proxy.kernel",
    "modules",
    "modules['os']",
    "numbers",
    "numbers.gi_frame",
    "prices.to_csv.__self__",
)
"""Paths InspectVariable must refuse in every mode."""

WORKS = {
    "prices.columns": "price",
    "prices": "head",
    "prices['price']": "2.5",
    "config['db']['host']": "localhost",
    "config['db']": "5432",
    "lazy.label": "'lazy'",
    "config": "<hidden: the kernel's environment variables (os.environ)>",
    "holder": "<hidden: an object of ipykernel",
    "holder[2]": "7",
}
"""Paths that must still read, and a piece of what each shows."""


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("secrets")
    (folder / ".env").write_text(
        f"ANTHROPIC_API_KEY={FAKE_KEY}\nGITHUB_TOKEN={FAKE_GITHUB}\nDEBUG=true\n"
    )
    return folder


@pytest.fixture(scope="module")
def kernel(server: MessagesServer, root: Path) -> Iterator[Kernel]:
    env = {
        "ANTHROPIC_API_KEY": FAKE_KEY,
        "KERNEL_ANTHROPIC_API_KEY": FAKE_GATEWAY_KEY,
        "JUPYTER_TOOLHOST_APPROVAL_TIMEOUT": "",
    }
    running = agent_kernel(root, server.base_url, env=env)
    try:
        setup = running.run(SETUP)
        assert setup.status == "ok", setup.text()
        yield running
    finally:
        running.close()


def signing_key(kernel: Kernel) -> str:
    key = kernel.client.session.key
    return key.decode() if isinstance(key, bytes) else str(key)


def results_of(server: MessagesServer) -> dict[str, dict[str, Any]]:
    """The tool_result blocks of the last request, by tool_use id."""
    message = server.requests[-1].body["messages"][-1]
    assert message["role"] == "user"
    return {b["tool_use_id"]: b for b in message["content"] if b.get("type") == "tool_result"}


def text_of(block: dict[str, Any]) -> str:
    content = block["content"]
    return content if isinstance(content, str) else json.dumps(content)


def assert_nothing_leaked(kernel: Kernel, server: MessagesServer, run: CellRun, root: Path):
    """Neither key nor the signing key in any request body, the cell, or `.toolhost`."""
    secrets = (FAKE_KEY, FAKE_GATEWAY_KEY, FAKE_GITHUB, signing_key(kernel))
    bodies = json.dumps([r.body for r in server.requests])
    cell = json.dumps(run.messages, default=str) + json.dumps(kernel.widgets, default=str)
    saved = [
        path.read_bytes().decode("utf-8", errors="replace")
        for path in (root / ".toolhost").rglob("*")
        if path.is_file()
    ]
    for secret in secrets:
        assert secret not in bodies, "a secret reached the model"
        assert secret not in cell, "a secret reached the cell's output"
        for found in saved:
            assert secret not in found, "a secret was saved under .toolhost"
        assert secret[:20] not in bodies and secret[-20:] not in bodies


@pytest.mark.parametrize("mode", MODES)
def test_inspect_variable_reaches_no_secret_in_any_mode(
    kernel: Kernel, server: MessagesServer, root: Path, mode: str
):
    calls = [
        tool_use("InspectVariable", {"name": p}, id=f"toolu_a{i}") for i, p in enumerate(ATTACKS)
    ]
    calls += [
        tool_use("InspectVariable", {"name": p}, id=f"toolu_w{i}") for i, p in enumerate(WORKS)
    ]
    calls.append(tool_use("ListVariables", {"include_callables": True}, id="toolu_list"))
    server.add_turns(Turn(calls), Turn([text("Done looking.")]))
    run = kernel.run(f"%%agent --new --mode {mode}\nLook around the kernel.", timeout=120)

    assert run.status == "ok", run.text()
    assert "Done looking." in run.answer
    assert not kernel.buttons("Allow once", run), "reading variables must not ask"
    results = results_of(server)
    for i, path in enumerate(ATTACKS):
        block = results[f"toolu_a{i}"]
        said = text_of(block)
        assert block.get("is_error") is True, f"{path} was not refused in {mode}: {said}"
        assert "PythonExec" in said or "not a variable path" in said, f"{path}: {said}"
    for i, (path, shown) in enumerate(WORKS.items()):
        block = results[f"toolu_w{i}"]
        assert not block.get("is_error"), f"{path} failed in {mode}: {text_of(block)}"
        assert shown in text_of(block), f"{path}: {text_of(block)}"
    listed = text_of(results["toolu_list"])
    for name in ("prices", "config", "lazy", "scale"):
        assert name in listed
    for name in ("env ", "shell ", "namespace", "history", "os ", "get_ipython"):
        assert name not in listed, f"{name.strip()} is listed as a user variable"
    assert kernel.run("print(Lazy.calls)").stdout == "0\n", "a property or __getattr__ ran"
    assert_nothing_leaked(kernel, server, run, root)


def test_a_refusal_says_why_and_names_python_exec(kernel: Kernel, server: MessagesServer):
    chains = {
        "get_ipython.__self__.kernel.session.key": "IPython's own name",
        "lazy.data": "is a property of __main__.Lazy: reading it runs code",
        "remote.secret": "its __getattr__ or __getattribute__ would compute one",
        "proxy.kernel": "its __getattr__ or __getattribute__ would compute one",
        "env": "the kernel's environment variables (os.environ)",
        "shell": "an object of ipykernel",
        "scale.__globals__": "names that start with '_'",
        "os": "a module (os)",
    }
    server.add_turns(
        Turn(
            [
                tool_use("InspectVariable", {"name": p}, id=f"toolu_r{i}")
                for i, p in enumerate(chains)
            ]
        ),
        Turn([text("Refused.")]),
    )
    run = kernel.run("%%agent --new\nTry.", timeout=60)
    assert run.status == "ok", run.text()
    results = results_of(server)
    for i, (path, why) in enumerate(chains.items()):
        said = text_of(results[f"toolu_r{i}"])
        assert why in said, f"{path}: {said}"
        assert "use PythonExec, which asks the user first" in said


@pytest.mark.parametrize("sandbox", ["on", "off"])
def test_printed_secrets_are_redacted_everywhere(
    kernel: Kernel, server: MessagesServer, root: Path, sandbox: str
):
    flag = "1" if sandbox == "on" else "0"
    set_flag = kernel.run(f"os.environ['JUPYTER_TOOLHOST_BASH_SANDBOX'] = {flag!r}")
    assert set_flag.status == "ok", set_flag.text()
    calls = [
        tool_use("Bash", {"command": "cat .env"}, id="toolu_cat"),
        tool_use("Bash", {"command": "env; printenv ANTHROPIC_API_KEY; true"}, id="toolu_env"),
        tool_use("Read", {"file_path": ".env"}, id="toolu_read"),
        # Over the 30,000-byte budget: saved by Bash itself, the key in the preview
        # and past it.
        tool_use(
            "Bash",
            {"command": "cat .env; yes 'a line of output' | head -c 45000; echo; cat .env"},
            id="toolu_big",
        ),
    ]
    if sandbox == "off":  # the kernel's environment and connection file, as its user reads them
        connection = "cat \"$(tr '\\0' '\\n' < /proc/$PPID/cmdline | grep '\\.json$')\""
        calls += [
            tool_use("Bash", {"command": "tr '\\0' '\\n' < /proc/$PPID/environ"}, id="toolu_proc"),
            tool_use("Bash", {"command": connection}, id="toolu_conn"),
        ]
    server.add_turns(Turn(calls), Turn([text("Printed.")]))
    run = kernel.run("%%agent --new --mode bypassPermissions\nShow the secrets.", timeout=120)

    assert run.status == "ok", run.text()
    results = results_of(server)
    assert "ANTHROPIC_API_KEY=[redacted: ANTHROPIC_API_KEY]" in text_of(results["toolu_cat"])
    assert "[redacted: GitHub token]" in text_of(results["toolu_cat"])
    assert "DEBUG=true" in text_of(results["toolu_cat"]), "ordinary lines stay"
    assert "[redacted: ANTHROPIC_API_KEY]" in text_of(results["toolu_read"])
    big = text_of(results["toolu_big"])
    assert "<persisted-output>" in big and "[redacted: ANTHROPIC_API_KEY]" in big
    saved = Path(big.split("Full output saved to: ", 1)[1].split("\n", 1)[0])
    assert saved.read_text().count("[redacted: ANTHROPIC_API_KEY]") == 2
    assert "a line of output" in saved.read_text()
    if sandbox == "off":
        environ = text_of(results["toolu_proc"])
        assert "ANTHROPIC_API_KEY=[redacted: ANTHROPIC_API_KEY]" in environ
        assert "KERNEL_ANTHROPIC_API_KEY=[redacted: KERNEL_ANTHROPIC_API_KEY]" in environ
        assert '"key": "[redacted: kernel signing key]"' in text_of(results["toolu_conn"])
    assert_nothing_leaked(kernel, server, run, root)


def test_python_exec_prints_markers_not_keys(kernel: Kernel, server: MessagesServer, root: Path):
    code = (
        "print(os.environ['ANTHROPIC_API_KEY'])\n"
        "print(os.environ['KERNEL_ANTHROPIC_API_KEY'])\n"
        "print(get_ipython().kernel.session.key.decode())\n"
        "from IPython.display import display, HTML\n"
        "display(HTML('<b>' + os.environ['ANTHROPIC_API_KEY'] + '</b>'))\n"
        "os.environ['ANTHROPIC_API_KEY'][:40]"
    )
    server.add_turns(
        Turn([tool_use("PythonExec", {"code": code}, id="toolu_py")]), Turn([text("Shown.")])
    )
    run = kernel.submit("%%agent --new --mode bypassPermissions\nPrint the key.")
    [allow] = kernel.wait_for_button(run, "Allow once")  # PythonExec asks, in bypass too
    kernel.click(allow)
    kernel.wait(run, timeout=60)

    assert run.status == "ok", run.text()
    said = text_of(results_of(server)["toolu_py"])
    assert "[stdout]\n[redacted: ANTHROPIC_API_KEY]\n" in said, said
    # The key's first 40 characters: a cut-off start is redacted too.
    assert "[result]\n'[redacted: ANTHROPIC_API_KEY]'" in said, said
    assert "[redacted: KERNEL_ANTHROPIC_API_KEY]" in said
    assert "[redacted: kernel signing key]" in said
    assert "<b>[redacted: ANTHROPIC_API_KEY]</b>" in json.dumps(run.messages, default=str)
    assert_nothing_leaked(kernel, server, run, root)
