"""`ToolHost`: the traitlets-configurable defaults of the `%%agent` magic.

Set them where Jupyter users set kernel options, e.g. in `ipython_config.py` or
`ipython_kernel_config.py`: ``c.ToolHost.model = "claude-sonnet-4-5"``,
``c.ToolHost.permission_mode = "dontAsk"``, ``c.ToolHost.approval_timeout = 60``,
``c.ToolHost.small_model = "claude-haiku-4-5"``.
Options given on a `%%agent` line win over these. `permission_mode` is what `--mode` sets;
`cassette_mode` is what `--cassette-mode` sets (auto, record, replay); `disclosure` is what
`--disclosure` sets; `think` is what `--think` sets (a budget in tokens, or "off").
"""

from __future__ import annotations

from traitlets import Bool, Float, Integer, List, TraitError, Unicode, Union, validate
from traitlets.config import Configurable

from ..core.types import PERMISSION_MODES
from .magic.options import CASSETTE_MODES, DISCLOSURES, UsageError, parse_think


class ToolHost(Configurable):
    """Defaults for `%%agent` cells in this kernel."""

    model = Unicode(
        None, allow_none=True, help="Model name (else JUPYTER_TOOLHOST_MODEL, else a default)."
    ).tag(config=True)
    small_model = Unicode(
        None,
        allow_none=True,
        help=(
            "Fast model that answers WebFetch's prompt, on the same client (else "
            'JUPYTER_TOOLHOST_SMALL_MODEL, else claude-haiku-4-5; "" or "none" turns it off).'
        ),
    ).tag(config=True)
    permission_mode = Unicode(
        None,
        allow_none=True,
        help=(
            "Permission mode (what %%agent --mode sets): default, acceptEdits, "
            "bypassPermissions, dontAsk, plan, auto."
        ),
    ).tag(config=True)
    max_turns = Integer(None, allow_none=True, help="Model requests per cell at most.").tag(
        config=True
    )
    cassette = Unicode(
        None, allow_none=True, help="Replay/record model answers from this cassette file."
    ).tag(config=True)
    cassette_mode = Unicode(
        None,
        allow_none=True,
        help=(
            "What the cassette does: auto (replay if the file exists, else record with a "
            "key; the default), record, replay. Same as %%agent --cassette-mode."
        ),
    ).tag(config=True)
    tools = List(
        Unicode(), default_value=None, allow_none=True, help="Only offer these tools (names)."
    ).tag(config=True)
    kernel_tools = Bool(
        True, help="Offer PythonExec, ListVariables and InspectVariable to the model."
    ).tag(config=True)
    approval_timeout = Float(
        None,
        allow_none=True,
        help=(
            "Seconds an approval prompt waits for a click before it denies (for headless "
            "runs); None waits until a click or an interrupt. Env: "
            "JUPYTER_TOOLHOST_APPROVAL_TIMEOUT."
        ),
    ).tag(config=True)

    root_dir = Unicode(
        None,
        allow_none=True,
        help=(
            "The working folder of the agent (and the kernel): where paths, Bash, settings "
            "files and saved results are. Else KERNEL_TOOLHOST_ROOT, else the notebook's "
            "folder when the front end says where it is, else the kernel's own folder. For "
            "kernels behind a gateway, which start them in the gateway's folder."
        ),
    ).tag(config=True)

    disclosure = Unicode(
        None,
        allow_none=True,
        help=(
            "How deferred (MCP) tools reach the model: auto (the default), defer_loading, "
            "discovered, server_bm25, server_regex. Same as %%agent --disclosure."
        ),
    ).tag(config=True)

    think = Union(
        [Integer(), Unicode()],
        default_value=None,
        allow_none=True,
        help=(
            "Extended thinking: a budget in tokens (at least 1024), or 'off' (the default). "
            "Thinking tokens are billed as output tokens. Same as %%agent --think."
        ),
    ).tag(config=True)

    @validate("think")
    def _check_think(self, proposal: dict) -> int | None:
        value = proposal["value"]
        if value is None:
            return None
        try:
            return parse_think(value, name="c.ToolHost.think")
        except UsageError as exc:
            raise TraitError(str(exc)) from None

    @validate("disclosure")
    def _check_disclosure(self, proposal: dict) -> str | None:
        value = proposal["value"]
        if value is not None and value not in DISCLOSURES:
            raise TraitError(f"disclosure {value!r} is not one of: {', '.join(DISCLOSURES)}")
        return value

    @validate("permission_mode")
    def _check_mode(self, proposal: dict) -> str | None:
        value = proposal["value"]
        if value is not None and value not in PERMISSION_MODES:
            hint = " (that is a cassette mode: set cassette_mode)"
            raise TraitError(
                f"permission_mode {value!r} is not one of: {', '.join(PERMISSION_MODES)}"
                + (hint if value in CASSETTE_MODES else "")
            )
        return value

    @validate("cassette_mode")
    def _check_cassette_mode(self, proposal: dict) -> str | None:
        value = proposal["value"]
        if value is not None and value not in CASSETTE_MODES:
            hint = " (that is a permission mode: set permission_mode)"
            raise TraitError(
                f"cassette_mode {value!r} is not one of: {', '.join(CASSETTE_MODES)}"
                + (hint if value in PERMISSION_MODES else "")
            )
        return value
