"""How much disk an extra of this package adds: the installed files of every distribution
its requirements pull in, beyond those the package itself already requires.

Read from the installed distributions' metadata (their RECORD), so the figure is the one
this venv has, not a guess from wheel sizes. The package's own requirements are read from
the checkout's pyproject.toml when there is one (an editable install's metadata keeps the
requirements of when it was installed).
"""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

PACKAGE = "jupyter-toolhost"
PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def _declared(dist: str) -> list[str]:
    """`dist`'s requirement lines: this checkout's pyproject.toml for the package itself,
    the installed metadata otherwise."""
    if canonicalize_name(dist) == PACKAGE and PYPROJECT.is_file():
        project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
        lines = list(project.get("dependencies", []))
        for extra, names in project.get("optional-dependencies", {}).items():
            lines += [f'{name}; extra == "{extra}"' for name in names]
        return lines
    return metadata.requires(dist) or []


def _requirements(dist: str, extra: str = "") -> list[Requirement]:
    """The requirements of `dist` that apply here, with `extra` selected ("" = none)."""
    env = {**default_environment(), "extra": extra}
    found = []
    for line in _declared(dist):
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate(env):
            found.append(requirement)
    return found


def closure(names: list[str]) -> set[str]:
    """Every installed distribution reachable from `names` through their requirements."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen:
            continue
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen.add(name)
        todo.extend(r.name for r in _requirements(name))
    return seen


def megabytes(dists: set[str]) -> float:
    """The installed size of `dists` in MB (10^6 bytes), from each one's RECORD."""
    total = 0
    for name in dists:
        for file in metadata.distribution(name).files or []:
            path = file.locate()
            if path.is_file():
                total += path.stat().st_size
    return total / 1e6


def extra_sizes(extra: str) -> dict[str, float]:
    """What `pip install jupyter-toolhost[extra]` adds over `pip install jupyter-toolhost`:
    each added distribution's installed MB, largest first."""
    plain = _requirements(PACKAGE)
    base = closure([r.name for r in plain])
    extra_only = [r.name for r in _requirements(PACKAGE, extra) if r not in plain]
    adds = closure(extra_only) - base - {canonicalize_name(PACKAGE)}
    sizes = {name: megabytes({name}) for name in adds}
    return dict(sorted(sizes.items(), key=lambda item: -item[1]))
