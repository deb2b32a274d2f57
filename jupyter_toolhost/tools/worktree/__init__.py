"""EnterWorktree and ExitWorktree: a git worktree on a new branch, and the session's cwd.

git runs closed (`permissions.git_state`): the repository is found by reading its files, a
repository whose state would send git elsewhere (a planted ``commondir``, alternates,
``config.worktree``, includes, a promisor remote) is refused with the reason, and every git
call runs with no hooks (``post-checkout`` included), no fsmonitor, no filter, diff or merge
driver, no user or system configuration, no lazy fetch and no transport. So a checkout runs
nothing the repository names; a filter such as Git LFS's is not applied (its files are
checked out as stored).

The session's working directory is kept in the app state (`AppState.working_directory`) so
it outlives one call; each call's `context.cwd` is a per-call copy, so these tools also hand
the orchestrator a context modifier that moves the running context, and move the Bash
tool's shell (`AppState.shell_cwd`) with it. `effective_cwd(context)` is where a tool should
resolve paths when it cannot rely on the session honouring `working_directory`. The active
worktree is the tool's own state, `extras["worktree"]` (a `Worktree`).
"""

from __future__ import annotations

import os
import re
import secrets
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ...core.context import AppState, ToolUseContext
from ...core.private import private_folder
from ...core.process import run_capture
from ...core.tool import Tool, ToolOutput, build_tool
from ...core.types import ToolInputError
from ...permissions.git_state import GitRepo, Unreadable, closed_argv, closed_env, find_repo
from ..tasks.state import set_extra
from .prompt import ENTER, ENTER_DESCRIPTION, EXIT, EXIT_DESCRIPTION

WORKTREE_KEY = "worktree"
BRANCH_PREFIX = "toolhost/"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
GIT_TIMEOUT = 60.0


@dataclass(frozen=True, slots=True)
class Worktree:
    """The worktree the session is in."""

    name: str
    path: Path
    branch: str
    repo_root: Path
    base_commit: str
    original_cwd: Path


def effective_cwd(context: ToolUseContext) -> Path:
    """The session's working directory: the app state's if a tool moved it, else the call's."""
    moved = context.get_app_state().working_directory
    return moved if moved is not None else context.cwd


def current_worktree(context: ToolUseContext) -> Worktree | None:
    found = context.get_app_state().extras.get(WORKTREE_KEY)
    return found if isinstance(found, Worktree) else None


class EnterWorktreeInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(
        default=None, description="A name for the worktree and its branch (default: random)."
    )


class ExitWorktreeInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["keep", "remove"] = Field(description="Keep it on disk, or remove it.")
    discard_changes: bool = Field(
        default=False, description="With remove: delete even uncommitted changes or commits."
    )


def _repo(where: Path) -> GitRepo:
    """The repository around `where`, vetted; a clear error when there is none or its state
    can't be trusted."""
    repo = find_repo(os.fspath(where))
    if repo is None:
        raise ToolInputError(
            f"{where} is not inside a git repository, so no worktree can be made here. "
            "Use `git init` or work in a repository."
        )
    if isinstance(repo, Unreadable):
        raise ToolInputError(
            f"git is not run in {repo.top}: {repo.reason}. Ask the user to look at that "
            "file; remove it if nobody meant it to be there."
        )
    return repo


async def _git(context: ToolUseContext, repo: GitRepo, *args: str) -> tuple[int | None, str, str]:
    result = await run_capture(
        closed_argv(repo, *args),
        cwd=repo.top,
        env=closed_env(repo, optional_locks=True),
        max_bytes=1 << 20,
        time_limit=GIT_TIMEOUT,
        abort=context.abort,
    )
    out = result.stdout.decode("utf-8", errors="replace").strip()
    err = result.stderr.decode("utf-8", errors="replace").strip()
    return result.exit_code, out, err


async def enter_worktree(input: EnterWorktreeInput, context: ToolUseContext) -> ToolOutput:
    if current_worktree(context) is not None:
        raise ToolInputError("Already in a worktree; leave it with ExitWorktree first.")
    name = input.name or f"wt-{secrets.token_hex(3)}"
    if not _NAME.match(name):
        raise ToolInputError(
            f"Invalid worktree name {name!r}: use letters, digits, '.', '_' or '-' (max 64)."
        )
    cwd = effective_cwd(context)
    if not cwd.is_dir():
        raise ToolInputError(f"The working directory {cwd} does not exist.")
    repo = _repo(cwd)
    root = Path(repo.real_top)
    code, head, _ = await _git(context, repo, "rev-parse", "--verify", "HEAD")
    if code != 0:
        raise ToolInputError(f"The repository at {root} has no commits yet; commit first.")
    path = root / ".toolhost" / "worktrees" / name
    branch = BRANCH_PREFIX + name
    if path.exists():
        raise ToolInputError(f"{path} exists already; choose another name.")
    code, _, _ = await _git(
        context, repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"
    )
    if code == 0:
        raise ToolInputError(f"The branch {branch} exists already; choose another name.")
    private_folder(path.parent)
    ignore = path.parent / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n", encoding="utf-8")
    code, _, err = await _git(context, repo, "worktree", "add", "-b", branch, str(path), head)
    if code != 0:
        raise ToolInputError(f"git worktree add failed: {err}")
    try:
        inside = path / cwd.resolve().relative_to(root)
    except ValueError:
        inside = path
    new_cwd = inside if inside.is_dir() else path
    tree = Worktree(name, path, branch, root, head, cwd)
    set_extra(context, WORKTREE_KEY, tree)
    _move_session(context, new_cwd)
    text = (
        f"Created worktree {path} on new branch {branch} (from {head[:12]}). "
        f"The working directory is now {new_cwd}."
    )
    return ToolOutput(text, context_modifier=_move_to(new_cwd))


async def exit_worktree(input: ExitWorktreeInput, context: ToolUseContext) -> ToolOutput:
    tree = current_worktree(context)
    if tree is None:
        raise ToolInputError("Not in a worktree made by EnterWorktree; nothing to exit.")
    if input.action == "remove":
        if tree.path.exists() and not input.discard_changes:
            await _refuse_if_work_would_be_lost(context, tree)
        main = _repo(tree.repo_root)
        if tree.path.exists():
            code, _, err = await _git(
                context, main, "worktree", "remove", "--force", str(tree.path)
            )
            if code != 0:
                raise ToolInputError(f"git worktree remove failed: {err}")
        await _git(context, main, "branch", "-D", tree.branch)
        done = f"Removed worktree {tree.path} and branch {tree.branch}."
    else:
        done = f"Kept worktree {tree.path} on branch {tree.branch}."
    set_extra(context, WORKTREE_KEY, None)
    _move_session(context, tree.original_cwd)
    text = f"{done} The working directory is back to {tree.original_cwd}."
    return ToolOutput(text, context_modifier=_move_to(tree.original_cwd))


async def _refuse_if_work_would_be_lost(context: ToolUseContext, tree: Worktree) -> None:
    repo = _repo(tree.path)
    _, status, _ = await _git(context, repo, "status", "--porcelain")
    _, count, _ = await _git(context, repo, "rev-list", "--count", f"{tree.base_commit}..HEAD")
    problems = []
    if status:
        problems.append(f"uncommitted changes:\n{status}")
    if count.isdigit() and int(count) > 0:
        problems.append(f"{count} new commit(s) on {tree.branch}")
    if problems:
        raise ToolInputError(
            f"The worktree {tree.path} has " + " and ".join(problems) + ". Keep it "
            "(action: keep), or confirm with the user and pass discard_changes: true."
        )


def _move_session(context: ToolUseContext, cwd: Path) -> None:
    """Record the session's new working directory (the Bash tool's shell follows it)."""

    def move(state: AppState) -> AppState:
        return replace(state, working_directory=cwd, shell_cwd=str(cwd))

    context.set_app_state(move)


def _move_to(cwd: Path) -> Any:
    def modify(context: ToolUseContext) -> None:
        context.cwd = cwd

    return modify


def make_tools() -> list[Tool[Any]]:
    """Fresh EnterWorktree and ExitWorktree tools."""
    return [
        build_tool(
            name=ENTER,
            input_model=EnterWorktreeInput,
            call=enter_worktree,
            description=ENTER_DESCRIPTION,
            should_defer=True,
            search_hint="git worktree isolated branch checkout",
        ),
        build_tool(
            name=EXIT,
            input_model=ExitWorktreeInput,
            call=exit_worktree,
            description=EXIT_DESCRIPTION,
            destructive=lambda input: input.action == "remove",
            should_defer=True,
            search_hint="leave remove git worktree",
        ),
    ]
