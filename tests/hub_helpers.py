"""A real JupyterHub on loopback with real system users, for the classroom tests.

`running_hub(...)` creates system users (`useradd`, each with a password for PAM, a home
of mode 0755 and the default umask: the loosest a hub is commonly set up with, so that what
keeps one student's files from another is what this package creates, not the home's mode),
writes a `jupyterhub_config.py` and starts `jupyterhub` as root with its proxy,
`configurable-http-proxy` (npm), all on 127.0.0.1. The hub's `LocalProcessSpawner` starts
each user's `jupyterhub-singleuser` as that user, in `~/notebooks` (`notebook_dir`), with
the environment a teacher's config gives it (docs/classroom.md): the user's own key, read by
the hub from a root-only file, and `ANTHROPIC_BASE_URL` pointing at that user's own
scripted loopback Messages API server. Each user's server is started through the hub's REST
API (an admin service token), then `login(page, user)` logs a Chromium page in through the
hub's login form (PAM) as a person would.

The users' servers run this environment's Python with its packages (jupyter_toolhost and
its built lab extension included), so the interpreter, the venv and the package's source
must be readable by every user. A pyenv interpreter under `/root` (mode 0700) is not: then
its installation (without its own site-packages and test suite) is hard-linked (copied
across file systems) once into a world-readable folder under the hub's base, and a thin venv
there sees this venv's site-packages through a `.pth` file; its libpython is found through
`LD_LIBRARY_PATH`, and this venv's Jupyter data and config (the lab extensions, the server
extensions' switches) through `JUPYTER_PATH` and `JUPYTER_CONFIG_PATH`.

To extend: `environment` adds variables the spawner passes to every user's server (a policy
file's path, a budget), `config` adds lines to the hub's config, and `root_files` writes
files (root-owned, mode 0644) before the hub starts, such as a policy file.

Needs root, `useradd`, JupyterHub (the test extra), `configurable-http-proxy` on PATH or in
this venv's `bin/` (`./dev test` installs it from npm) and the lab extension built. Outside
CI a missing piece skips the module; under CI=true it fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from lab_browser import ARTIFACTS, _free_port, _installed_extension, _write_settings

from jupyter_toolhost.testing import MessagesServer

ADMIN_SERVICE = "classroom-test-admin"
NOTEBOOKS = "notebooks"
"""Each user's notebook folder under their home (the spawner's `notebook_dir`)."""
START_TIMEOUT = 60.0


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI installs it: ./dev test)")
    pytest.skip(reason, allow_module_level=True)


def proxy_command() -> str | None:
    """`configurable-http-proxy` on PATH, or where `./dev test` puts it (this venv's bin)."""
    found = shutil.which("configurable-http-proxy")
    if found:
        return found
    beside = Path(sys.prefix) / "bin" / "configurable-http-proxy"
    return str(beside) if beside.exists() else None


def require_hub() -> None:
    """Skip the module (fail under CI=true) without root, useradd, JupyterHub or the proxy."""
    if os.geteuid() != 0:
        _missing("the hub test creates system users and runs JupyterHub as root")
    for program in ("useradd", "userdel", "chpasswd", "runuser"):
        if shutil.which(program) is None:
            _missing(f"{program} is not installed (Debian's passwd and util-linux packages)")
    try:
        import jupyterhub  # noqa: F401
    except ImportError:
        _missing("jupyterhub is not installed (the test extra has it)")
    if proxy_command() is None:
        _missing("configurable-http-proxy is not installed (npm install configurable-http-proxy)")


@dataclass
class HubUser:
    """One student: a system user with a password, a key and a scripted model of their own."""

    name: str
    password: str
    key: str
    home: Path
    server: MessagesServer

    @property
    def notebooks(self) -> Path:
        """The notebook folder the user's server starts in."""
        return self.home / NOTEBOOKS

    @property
    def uid(self) -> int:
        return pwd.getpwnam(self.name).pw_uid

    def write(self, relative: str, content: str) -> Path:
        """A file in the user's notebook folder, owned by them (as they would save it)."""
        path = self.notebooks / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        gid = pwd.getpwnam(self.name).pw_gid
        for made in (path, *path.relative_to(self.notebooks).parents):
            os.chown(self.notebooks / made, self.uid, gid)
        return path


@dataclass
class Hub:
    """A running JupyterHub and its users."""

    url: str
    base: Path
    users: dict[str, HubUser]
    log: Path
    api_token: str

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """A call to the hub's REST API (`/hub/api/...`) with the admin service's token."""
        headers = {"Authorization": f"token {self.api_token}"}
        return httpx.request(
            method, f"{self.url}/hub/api/{path}", headers=headers, timeout=30, **kwargs
        )

    def lab_url(self, user: HubUser, notebook: str) -> str:
        return f"{self.url}/user/{user.name}/lab/tree/{notebook}?reset"


def run_as(user: str, command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """`command` run as system user `user` (with their login environment's basics)."""
    return subprocess.run(
        ["runuser", "-u", user, "--", *command],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        **kwargs,
    )


def _create_user(name: str, home: Path) -> None:
    subprocess.run(
        ["useradd", "--create-home", "--home-dir", str(home), "--shell", "/bin/bash",
         "--user-group", name],
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    home.chmod(0o755)


def _remove_user(name: str) -> None:
    try:
        uid = pwd.getpwnam(name).pw_uid
    except KeyError:
        return
    for _ in range(50):  # the hub stops the servers; kernels they started may linger
        procs = Path("/proc").iterdir()
        left = [int(p.name) for p in procs if p.name.isdigit() and _owner(p) == uid]
        if not left:
            break
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
    subprocess.run(["userdel", "--remove", name], capture_output=True, timeout=30, check=False)


def _owner(proc: Path) -> int | None:
    try:
        return proc.stat().st_uid
    except OSError:
        return None


def _users_python(base: Path, probe_user: str) -> tuple[Path, dict[str, str]]:
    """An interpreter every user can run that sees this environment's packages, and the
    variables it needs (see the module docstring)."""
    if run_as(probe_user, [sys.executable, "-c", "import site"]).returncode == 0:
        return Path(sys.executable), {}
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    source = Path(sys.base_prefix)
    linked = base / "python"
    skip = {source / "lib" / version / "site-packages", source / "lib" / version / "test"}
    for folder, dirs, files in os.walk(source):
        here = Path(folder)
        dirs[:] = [d for d in dirs if here / d not in skip]
        target = linked / here.relative_to(source)
        target.mkdir(parents=True, exist_ok=True)
        for name in [d for d in dirs if (here / d).is_symlink()]:
            dirs.remove(name)  # (os.walk lists a link to a folder there, and enters none)
            (target / name).symlink_to(os.readlink(here / name))
        for name in files:
            if (here / name).is_symlink():
                (target / name).symlink_to(os.readlink(here / name))
                continue
            try:
                os.link(here / name, target / name)
            except OSError:
                shutil.copy2(here / name, target / name)
        for name in [d for d in dirs if (here / d).is_symlink()]:
            dirs.remove(name)  # (os.walk lists a link to a folder there, and enters none)
            (target / name).symlink_to(os.readlink(here / name))
    (linked / "lib" / version / "site-packages").mkdir(parents=True, exist_ok=True)
    venv = base / "venv"
    (venv / "bin").mkdir(parents=True)
    site = venv / "lib" / version / "site-packages"
    site.mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(
        f"home = {linked / 'bin'}\ninclude-system-site-packages = false\n"
        f"version = {'.'.join(map(str, sys.version_info[:3]))}\n"
    )
    python = venv / "bin" / "python"
    python.symlink_to(linked / "bin" / Path(sys.executable).resolve().name)
    ours = sysconfig.get_paths()["purelib"]
    (site / "_classroom_test_env.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    for path in (base, linked, venv):
        path.chmod(0o755)
    env = {
        "LD_LIBRARY_PATH": str(linked / "lib"),
        # Jupyter looks under sys.prefix, now the thin venv: the server extensions' switches
        # and the lab extensions are where this venv keeps them.
        "JUPYTER_PATH": str(Path(sys.prefix) / "share" / "jupyter"),
        "JUPYTER_CONFIG_PATH": str(Path(sys.prefix) / "etc" / "jupyter"),
        # JupyterLab's own pages too: 4.4 looks for them under sys.prefix only (the thin
        # venv, where they are not; 4.5 also looks beside its package) and answers each page
        # with a 500.
        "JUPYTERLAB_DIR": str(Path(sys.prefix) / "share" / "jupyter" / "lab"),
    }
    check = run_as(probe_user, [str(python), "-c", "import site"], env={**os.environ, **env})
    assert check.returncode == 0, f"the users' Python does not start:\n{check.stderr[-2000:]}"
    return python, env


CONFIG = """\
import json, pathlib

settings = json.loads(pathlib.Path({settings!r}).read_text())
keys = pathlib.Path({keys!r})


def user_key(spawner):
    # The key of each student, from a file only root can read (docs/classroom.md).
    return (keys / spawner.user.name).read_text().strip()


c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = settings["port"]
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = settings["hub_port"]
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{{settings['proxy_api_port']}}"
c.ConfigurableHTTPProxy.command = [settings["proxy"]]
c.ConfigurableHTTPProxy.pid_file = settings["proxy_pid_file"]
c.JupyterHub.cookie_secret_file = settings["cookie_secret_file"]
c.JupyterHub.db_url = settings["db_url"]
c.JupyterHub.authenticator_class = "pam"
c.PAMAuthenticator.open_sessions = False
c.Authenticator.allowed_users = set(settings["users"])
c.JupyterHub.services = [{{"name": {admin!r}, "api_token": settings["api_token"]}}]
c.JupyterHub.load_roles = [{{"name": "admin", "services": [{admin!r}]}}]
c.JupyterHub.spawner_class = "localprocess"
c.JupyterHub.tornado_settings = {{"slow_spawn_timeout": 0}}  # start both servers at once
c.Spawner.cmd = [settings["python"], "-m", "jupyterhub.singleuser"]
c.Spawner.args = ["--LabApp.expose_app_in_browser=True"]
c.Spawner.notebook_dir = "~/{notebooks}"
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 60
c.Spawner.http_timeout = 60
c.Spawner.environment = {{
    **settings["environment"],
    "ANTHROPIC_API_KEY": user_key,
    "ANTHROPIC_BASE_URL": lambda spawner: settings["base_urls"][spawner.user.name],
}}
"""


@contextlib.contextmanager
def running_hub(
    names: tuple[str, ...] = ("a", "b"),
    *,
    environment: Mapping[str, str] | None = None,
    config: str = "",
    root_files: Mapping[Path, str] | None = None,
    log_name: str = "jupyterhub.log",
) -> Iterator[Hub]:
    """A hub with one system user per name in `names` (made unique per run), each with a
    server already started; everything is stopped and the users removed afterwards."""
    require_hub()
    ARTIFACTS.mkdir(exist_ok=True)
    # Not under pytest's base temp (mode 0700): the users must reach their homes and Python.
    base = Path(tempfile.mkdtemp(prefix="toolhost-hub-"))
    base.chmod(0o755)
    run = secrets.token_hex(3)
    users: dict[str, HubUser] = {}
    servers: list[MessagesServer] = []
    process: subprocess.Popen[bytes] | None = None
    log = ARTIFACTS / log_name
    try:
        (base / "home").mkdir(mode=0o755)
        for short in names:
            name = f"th{short}{run}"
            home = base / "home" / name
            _create_user(name, home)
            server = MessagesServer().start()
            servers.append(server)
            user = HubUser(
                name=name,
                password=secrets.token_urlsafe(12),
                key=f"sk-ant-test-{short}-{secrets.token_hex(8)}",
                home=home,
                server=server,
            )
            users[short] = user
            subprocess.run(
                ["chpasswd"], input=f"{name}:{user.password}\n", text=True, check=True,
                timeout=30,
            )  # fmt: skip
            _prepare_home(user)
        first = next(iter(users.values())).name
        python, python_env = _users_python(base, first)
        if _installed_extension({**os.environ, **python_env}) is None:
            _missing("the jupyter-toolhost lab extension is not built (`pip install -e .`)")
        hub_dir = base / "hub"
        hub_dir.mkdir(mode=0o700)
        keys = hub_dir / "keys"
        keys.mkdir(mode=0o700)
        for user in users.values():
            (keys / user.name).write_text(user.key + "\n")
        for path, text in (root_files or {}).items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            path.chmod(0o644)
        api_token = secrets.token_hex(16)
        settings = {
            "port": _free_port(),
            "hub_port": _free_port(),
            "proxy_api_port": _free_port(),
            "proxy": proxy_command(),
            "proxy_pid_file": str(hub_dir / "proxy.pid"),
            "cookie_secret_file": str(hub_dir / "cookie_secret"),
            "db_url": f"sqlite:///{hub_dir / 'jupyterhub.sqlite'}",
            "users": [user.name for user in users.values()],
            "api_token": api_token,
            "python": str(python),
            "base_urls": {user.name: user.server.base_url for user in users.values()},
            "environment": {
                "PATH": f"{python.parent}:/usr/local/bin:/usr/bin:/bin",
                **python_env,
                **(environment or {}),
            },
        }
        (hub_dir / "settings.json").write_text(json.dumps(settings))
        (hub_dir / "jupyterhub_config.py").write_text(
            CONFIG.format(
                settings=str(hub_dir / "settings.json"),
                keys=str(keys),
                admin=ADMIN_SERVICE,
                notebooks=NOTEBOOKS,
            )
            + config
        )
        hub_env = {
            **os.environ,
            "PATH": f"{Path(proxy_command() or '').parent}:{os.environ.get('PATH', '')}",
        }
        with log.open("wb") as sink:
            process = subprocess.Popen(
                [sys.executable, "-m", "jupyterhub", "-f", str(hub_dir / "jupyterhub_config.py")],
                cwd=hub_dir,
                env=hub_env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                umask=0o022,  # the usual one, which the servers and kernels inherit
            )
        hub = Hub(
            url=f"http://127.0.0.1:{settings['port']}",
            base=base,
            users=users,
            log=log,
            api_token=api_token,
        )
        _wait_for_hub(hub, process)
        for user in users.values():
            started = hub.api("POST", f"users/{user.name}/server")
            assert started.status_code in (201, 202), (started.status_code, started.text)
        for user in users.values():
            _wait_for_server(hub, user, process)
        yield hub
    finally:
        if process is not None:
            process.send_signal(signal.SIGTERM)  # the hub stops the users' servers and proxy
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        for server in servers:
            server.close()
        for user in users.values():
            _remove_user(user.name)
        shutil.rmtree(base, ignore_errors=True)


def _prepare_home(user: HubUser) -> None:
    """The notebook folder and JupyterLab settings that keep pop-ups away, owned by the user."""
    user.notebooks.mkdir()
    settings = user.home / ".jupyter" / "lab" / "user-settings"
    settings.parent.mkdir(parents=True)
    _write_settings(settings)
    uid, gid = pwd.getpwnam(user.name).pw_uid, pwd.getpwnam(user.name).pw_gid
    for folder, dirs, files in os.walk(user.home):
        for name in (*dirs, *files):
            os.chown(Path(folder) / name, uid, gid)


def _wait_for_hub(hub: Hub, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"jupyterhub exited early:\n{hub.log.read_text()[-4000:]}")
        try:
            if hub.api("GET", "").is_success:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"jupyterhub did not start:\n{hub.log.read_text()[-4000:]}")


def _wait_for_server(hub: Hub, user: HubUser, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"jupyterhub exited:\n{hub.log.read_text()[-4000:]}")
        model = hub.api("GET", f"users/{user.name}").json()
        server = model.get("servers", {}).get("", {})
        if server.get("ready"):
            return
        if not model.get("pending") and not server:
            raise AssertionError(
                f"{user.name}'s server did not start:\n{hub.log.read_text()[-4000:]}"
            )
        time.sleep(0.3)
    raise AssertionError(f"{user.name}'s server did not start:\n{hub.log.read_text()[-4000:]}")


def login(page: Any, hub: Hub, user: HubUser) -> None:
    """Log `page` in through the hub's login form, as the student would."""
    page.goto(f"{hub.url}/hub/login")
    page.fill("input[name=username]", user.name)
    page.fill("input[name=password]", user.password)
    page.click("input[type=submit], button[type=submit]")
    page.wait_for_url(f"**/user/{user.name}/**")
