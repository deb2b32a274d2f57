"""Is anyone there to click? How a prompt learns whether a front end shows its widgets.

A prompt must never wait for a click that cannot come (nbclient, papermill,
`jupyter nbconvert --execute`, `jupyter console`, plain IPython). The signals, all real:

- **No kernel, no comms.** Plain IPython has no `shell.kernel` (or no comm manager): nothing
  can show a widget, so a prompt is answered at once.
- **A widget front end has told this kernel it renders widgets.** The prompt is displayed
  with ipywidgets' `_view_count` set to 0; a front end that renders the view (JupyterLab,
  Notebook 7, VS Code, Voilà — every `@jupyter-widgets/base` manager) raises it to 1 and
  syncs that back, measured here at 0.08–0.15 s in JupyterLab 4.6 with Chromium. nbclient,
  papermill, nbconvert and `jupyter console` never do.
- **The widget control comm.** JupyterLab's widget manager opens `jupyter.widget.control`
  when it connects to the kernel; ipywidgets keeps it as `Widget._control_comm`. It only
  lands if ipywidgets was already imported then (after a page reload, not in a fresh
  kernel, where the kernel closes it as an unknown target), so it is a sufficient sign,
  not a necessary one.

Once a view was rendered (or the control comm seen, or a prompt answered), the kernel is
known to have a front end and later prompts wait without probing. Until then a prompt waits
`PROBE_SECONDS` for its view to be rendered, then denies with a message that names the fix.
An explicit approval timeout replaces all of this: the prompt waits that long, anywhere.
The `_view_count` callback only resolves a future (see `approval`'s module docstring).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any, Literal, TypeAlias

from IPython import get_ipython

PROBE_SECONDS = 3.0
"""How long a prompt waits for a front end to report that it rendered it (measured: 0.15 s)."""

Outcome: TypeAlias = Literal["answered", "timeout", "headless"]


def headless_message(what: str) -> str:
    """Why nobody was asked, and how to run unattended (or make the prompt wait)."""
    return (
        f"No front end that shows widgets is connected to this kernel (nbclient, papermill, "
        f"nbconvert --execute, jupyter console or plain IPython), so nobody could answer the "
        f"prompt for {what}. For unattended runs use permission mode dontAsk with allow "
        "rules for what the agent may do (%%agent --mode dontAsk, plus %agent allow <rule> or "
        "permissions.allow in .toolhost/settings.json); to wait for a click anyway, set "
        "JUPYTER_TOOLHOST_APPROVAL_TIMEOUT (seconds) or c.ToolHost.approval_timeout."
    )


class FrontEnd:
    """What this kernel knows about the front end that would show its prompts."""

    def __init__(self, shell: Any = None) -> None:
        self.shell = shell
        """The IPython shell (None: the running one, if any)."""
        self.seen = False
        """A front end has rendered a prompt, or a person answered one, in this kernel."""
        self.blocked = False
        """The kernel cannot take clicks right now (the cell-magic fallback blocks it)."""

    def can_show_widgets(self) -> bool:
        """False when no widget can reach anyone: no kernel, no comm manager, or blocked."""
        if self.blocked:
            return False
        shell = self.shell if self.shell is not None else _running_shell()
        kernel = getattr(shell, "kernel", None)
        return kernel is not None and getattr(kernel, "comm_manager", None) is not None

    def known(self) -> bool:
        """A widget front end is known to be there (no need to probe)."""
        if self.seen:
            return True
        widgets = sys.modules.get("ipywidgets")
        control = getattr(getattr(widgets, "Widget", None), "_control_comm", None)
        if control is not None:
            self.seen = True
        return self.seen

    async def wait(self, answer: asyncio.Future[Any], view: Any, *, limit: float | None) -> Outcome:
        """Wait for `answer`: up to `limit` s when one is set; without one, for as long
        as it takes once a front end is known to show `view`, else `PROBE_SECONDS`.

        `view` is the displayed widget; it must have been made with `_view_count=0`.
        """
        if limit is not None:
            done, _ = await asyncio.wait({answer}, timeout=limit)
            return self._answered() if done else "timeout"
        if not self.known():
            rendered = asyncio.get_running_loop().create_future()

            def counted(change: dict[str, Any]) -> None:
                if (change.get("new") or 0) > 0 and not rendered.done():
                    rendered.set_result(None)

            view.observe(counted, names="_view_count")
            try:
                if (view._view_count or 0) > 0:  # pyright: ignore[reportPrivateUsage]
                    rendered.set_result(None)
                done, _ = await asyncio.wait(
                    {answer, rendered}, timeout=PROBE_SECONDS, return_when=asyncio.FIRST_COMPLETED
                )
            finally:
                rendered.cancel()
                view.unobserve(counted, names="_view_count")
            if answer in done:
                return self._answered()
            if not done and not self.known():
                return "headless"
            self.seen = True
        await asyncio.wait({answer})
        return self._answered()

    def _answered(self) -> Outcome:
        self.seen = True
        return "answered"


def _running_shell() -> Any:
    return get_ipython()
