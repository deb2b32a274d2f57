"""Published MCP servers for the benchmarks: install them, start them, read their tools live.

The servers come from the npm registry and from PyPI at pinned versions, installed into a
cache folder (``~/.cache/jupyter_toolhost/bench-mcp/``, or ``$JUPYTER_TOOLHOST_BENCH_MCP``):
npm packages with ``npm install --prefix <cache>/npm``, each PyPI package into a venv of its
own at ``<cache>/pypi/<server>`` made with ``python -m venv`` (their SDK pins differ), so the
project's venv is untouched.
An install is skipped when the pinned version is already there. Each server is then started
over stdio by the project's own MCP client (`McpManager`), and its tool list is read at run
time; nothing of it is stored in the repository. Every server here starts and lists its
tools with no credentials and no network: where one insists on a token or a URL it gets a
dummy, and where one needs a folder or a database file it gets one in a temporary folder.

A server that cannot be installed or started is left out and said so (`Catalog.failed`);
the others go on. Use::

    catalog = load_catalog()          # or: await start_catalog(...)
    catalog.tools                     # Tool objects named mcp__<server>__<tool>
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from jupyter_toolhost.core.tool import Tool
from jupyter_toolhost.mcp import McpManager, McpServerConfig

CACHE_ENV = "JUPYTER_TOOLHOST_BENCH_MCP"
DEFAULT_CACHE = Path("~/.cache/jupyter_toolhost/bench-mcp")
CONNECT_TIMEOUT = 120.0
DUMMY_TOKEN = "bench-dummy-token-not-a-real-credential"


@dataclass(frozen=True, slots=True)
class Server:
    """One published MCP server: where it comes from and how to start it.

    In `args` and `env` values, ``{tmp}`` is a temporary folder of the run (holding an empty
    git repository at ``{tmp}/repo`` and a ``{tmp}/files`` folder).
    """

    name: str
    """The server name, so its tools are ``mcp__<name>__<tool>``."""
    registry: Literal["npm", "pypi"]
    package: str
    version: str
    command: str
    """The executable the package installs (``node_modules/.bin`` or the venv's ``bin``)."""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    pins: tuple[str, ...] = ()
    """Extra exact pins for a PyPI server's dependencies (each PyPI server has its own venv)."""

    @property
    def spec(self) -> str:
        return f"{self.package}@{self.version}" if self.registry == "npm" else self.pinned

    @property
    def pinned(self) -> str:
        return f"{self.package}=={self.version}"

    @property
    def label(self) -> str:
        return f"{self.package}@{self.version}"


SERVERS: tuple[Server, ...] = (
    # npm
    Server(
        "filesystem",
        "npm",
        "@modelcontextprotocol/server-filesystem",
        "2026.8.31",
        "mcp-server-filesystem",
        ("{tmp}/files",),
    ),
    Server(
        "memory",
        "npm",
        "@modelcontextprotocol/server-memory",
        "2026.8.31",
        "mcp-server-memory",
        env={"MEMORY_FILE_PATH": "{tmp}/memory.jsonl"},
    ),
    Server(
        "everything",
        "npm",
        "@modelcontextprotocol/server-everything",
        "2026.8.31",
        "mcp-server-everything",
        ("stdio",),
    ),
    Server(
        "sequential-thinking",
        "npm",
        "@modelcontextprotocol/server-sequential-thinking",
        "2026.8.31",
        "mcp-server-sequential-thinking",
    ),
    Server(
        "github",
        "npm",
        "@modelcontextprotocol/server-github",
        "2025.4.8",
        "mcp-server-github",
        env={"GITHUB_PERSONAL_ACCESS_TOKEN": DUMMY_TOKEN},
    ),
    Server(
        "gitlab",
        "npm",
        "@modelcontextprotocol/server-gitlab",
        "2025.4.25",
        "mcp-server-gitlab",
        env={
            "GITLAB_PERSONAL_ACCESS_TOKEN": DUMMY_TOKEN,
            "GITLAB_API_URL": "http://127.0.0.1:9/api/v4",
        },
    ),
    Server(
        "slack",
        "npm",
        "@modelcontextprotocol/server-slack",
        "2025.4.25",
        "mcp-server-slack",
        env={"SLACK_BOT_TOKEN": "xoxb-" + DUMMY_TOKEN, "SLACK_TEAM_ID": "T00000000"},
    ),
    Server(
        "google-maps",
        "npm",
        "@modelcontextprotocol/server-google-maps",
        "0.6.2",
        "mcp-server-google-maps",
        env={"GOOGLE_MAPS_API_KEY": DUMMY_TOKEN},
    ),
    Server(
        "brave-search",
        "npm",
        "@modelcontextprotocol/server-brave-search",
        "0.6.2",
        "mcp-server-brave-search",
        env={"BRAVE_API_KEY": DUMMY_TOKEN},
    ),
    Server(
        "puppeteer",
        "npm",
        "@modelcontextprotocol/server-puppeteer",
        "2025.5.12",
        "mcp-server-puppeteer",
        env={"PUPPETEER_SKIP_DOWNLOAD": "1"},
    ),
    Server(
        "notion",
        "npm",
        "@notionhq/notion-mcp-server",
        "2.5.2",
        "notion-mcp-server",
        env={"NOTION_TOKEN": DUMMY_TOKEN},
    ),
    Server(
        "postgres",
        "npm",
        "@modelcontextprotocol/server-postgres",
        "0.6.2",
        "mcp-server-postgres",
        ("postgresql://bench@127.0.0.1:9/bench",),
    ),
    # PyPI
    Server(
        "git",
        "pypi",
        "mcp-server-git",
        "2026.10.19",
        "mcp-server-git",
        ("--repository", "{tmp}/repo"),
    ),
    Server(
        "time",
        "pypi",
        "mcp-server-time",
        "2026.10.19",
        "mcp-server-time",
        ("--local-timezone", "UTC"),
    ),
    Server("fetch", "pypi", "mcp-server-fetch", "2026.10.24", "mcp-server-fetch"),
    Server(
        "sqlite",
        "pypi",
        "mcp-server-sqlite",
        "2025.4.25",
        "mcp-server-sqlite",
        ("--db-path", "{tmp}/bench.sqlite"),
        # It was written against the 1.x SDK and does not start under mcp 2.x.
        pins=("mcp==1.30.0",),
    ),
    Server("excel", "pypi", "excel-mcp-server", "2.2.2", "excel-mcp-server", ("stdio",)),
    Server("duckduckgo", "pypi", "duckduckgo-mcp-server", "0.7.0", "duckduckgo-mcp-server"),
    Server(
        "arxiv",
        "pypi",
        "arxiv-mcp-server",
        "0.8.2",
        "arxiv-mcp-server",
        ("--storage-path", "{tmp}/papers"),
    ),
)


@dataclass(slots=True)
class Catalog:
    """What a run got: the tools of the servers that started, and why the others did not."""

    servers: list[Server]
    tools: list[Tool[Any]]
    counts: dict[str, int]
    """Server name → number of tools it listed (started servers only)."""
    failed: dict[str, str]
    """Server name → why it is missing (install or start)."""


def cache_dir() -> Path:
    """The folder the servers are installed into."""
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE).expanduser()


def _log(message: str) -> None:
    print(f"mcp_catalog: {message}", file=sys.stderr, flush=True)


# ── installing ───────────────────────────────────────────────────────────────────────────


def _npm_installed(cache: Path, server: Server) -> bool:
    manifest = cache / "npm" / "node_modules" / server.package / "package.json"
    if not manifest.is_file():
        return False
    match = re.search(r'"version"\s*:\s*"([^"]+)"', manifest.read_text(encoding="utf-8"))
    return match is not None and match.group(1) == server.version


def _pypi_venv(cache: Path, server: Server) -> Path:
    return cache / "pypi" / server.name


def _pypi_installed(cache: Path, server: Server) -> bool:
    dist = re.sub(r"[-_.]+", "_", server.package).lower()
    lib = _pypi_venv(cache, server) / "lib"
    return any(lib.glob(f"python*/site-packages/{dist}-{server.version}.dist-info"))


def _run(command: Sequence[str], env: Mapping[str, str] | None = None) -> str | None:
    """Run an install command; None when it worked, else the tail of its output."""
    merged = {**os.environ, **(env or {})}
    done = subprocess.run(list(command), capture_output=True, text=True, env=merged, check=False)
    if done.returncode == 0:
        return None
    tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
    return f"exit {done.returncode}: " + " | ".join(tail)


def _install_npm(cache: Path, servers: Sequence[Server]) -> dict[str, str]:
    npm = shutil.which("npm")
    if npm is None:
        return {s.name: "npm is not installed" for s in servers}
    prefix = cache / "npm"
    prefix.mkdir(parents=True, exist_ok=True)
    base = [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--save-exact"]
    # Puppeteer's own browser download is not wanted (and could not be fetched).
    env = {"PUPPETEER_SKIP_DOWNLOAD": "1"}
    _log(f"npm install {' '.join(s.spec for s in servers)}")
    if _run([*base, *(s.spec for s in servers)], env) is None:
        return {}
    # One at a time, so that one bad package does not cost the others.
    failed: dict[str, str] = {}
    for server in servers:
        problem = _run([*base, server.spec], env)
        if problem is not None:
            failed[server.name] = f"npm install {server.spec} failed ({problem})"
    return failed


def _install_pypi(cache: Path, server: Server) -> str | None:
    """Make the server's own venv and install it there; None when that worked."""
    venv = _pypi_venv(cache, server)
    python = venv / "bin" / "python"
    if not python.exists():
        problem = _run([sys.executable, "-m", "venv", "--clear", str(venv)])
        if problem is not None:
            return f"python -m venv failed ({problem})"
    specs = [server.pinned, *server.pins]
    _log(f"pip install {' '.join(specs)} (into {venv})")
    problem = _run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *specs]
    )
    return None if problem is None else f"pip install {' '.join(specs)} failed ({problem})"


def install(servers: Sequence[Server] = SERVERS, cache: Path | None = None) -> dict[str, str]:
    """Install the servers that are not in the cache yet; server name → why it failed.

    npm's install and the PyPI venvs are made side by side.
    """
    cache = cache or cache_dir()
    npm = [s for s in servers if s.registry == "npm" and not _npm_installed(cache, s)]
    pypi = [s for s in servers if s.registry == "pypi" and not _pypi_installed(cache, s)]
    failed: dict[str, str] = {}
    if not npm and not pypi:
        return failed
    with ThreadPoolExecutor(max_workers=1 + len(pypi)) as pool:
        npm_job = pool.submit(_install_npm, cache, npm) if npm else None
        pypi_jobs = {s.name: pool.submit(_install_pypi, cache, s) for s in pypi}
        if npm_job is not None:
            failed.update(npm_job.result())
        for name, job in pypi_jobs.items():
            problem = job.result()
            if problem is not None:
                failed[name] = problem
    return failed


def executable(server: Server, cache: Path | None = None) -> Path:
    """Where the installed server's command is."""
    cache = cache or cache_dir()
    if server.registry == "npm":
        return cache / "npm" / "node_modules" / ".bin" / server.command
    return _pypi_venv(cache, server) / "bin" / server.command


# ── starting ─────────────────────────────────────────────────────────────────────────────


def _prepare(tmp: Path) -> None:
    (tmp / "files").mkdir()
    repo = tmp / "repo"
    repo.mkdir()
    git = shutil.which("git")
    if git is not None:
        subprocess.run([git, "init", "-q", str(repo)], check=False, capture_output=True)


async def start_catalog(
    servers: Sequence[Server] = SERVERS, cache: Path | None = None, *, install_missing: bool = True
) -> Catalog:
    """Install what is missing, start every server, read their tools, and stop them again."""
    cache = cache or cache_dir()
    failed = install(servers, cache) if install_missing else {}
    configs: list[McpServerConfig] = []
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as name:
        tmp = Path(name)
        _prepare(tmp)
        for server in servers:
            if server.name in failed:
                continue
            command = executable(server, cache)
            if not command.exists():
                failed[server.name] = f"{command} is not installed"
                continue
            configs.append(
                McpServerConfig.stdio(
                    server.name,
                    str(command),
                    *(arg.format(tmp=tmp) for arg in server.args),
                    env={key: value.format(tmp=tmp) for key, value in server.env.items()},
                    connect_timeout=CONNECT_TIMEOUT,
                )
            )
        manager = McpManager(configs)
        try:
            await manager.start()
            tools = [t for t in manager.tools() if t.name.startswith("mcp__")]
            counts: dict[str, int] = {}
            for status in manager.status():
                if status.state == "connected":
                    counts[status.name] = status.tool_count
                else:
                    failed[status.name] = f"{status.state}: {status.error}"
        finally:
            await manager.close()
    for name, why in sorted(failed.items()):
        _log(f"server {name} left out — {why}")
    return Catalog(list(servers), tools, counts, failed)


def load_catalog(
    servers: Sequence[Server] = SERVERS, cache: Path | None = None, *, install_missing: bool = True
) -> Catalog:
    """`start_catalog` for synchronous callers."""
    return asyncio.run(start_catalog(servers, cache, install_missing=install_missing))


def main() -> int:
    """Print every tool's name and description (for writing queries; not stored)."""
    catalog = load_catalog()
    for tool in catalog.tools:
        print(f"{tool.name}\n    {' '.join(tool.description().split())}\n")
    print(f"{len(catalog.tools)} tools from {len(catalog.counts)} servers: {catalog.counts}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
