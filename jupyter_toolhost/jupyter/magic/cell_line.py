"""The `%%agent` line's grammar: the run options (`options.grammar`) with the cell's help.

`CELL_PARSER` is the argparse parser the line is read with (`options.parse_cell_line`);
`CELL_USAGE` and `OPTION_LIST` (`%agent help options`) are argparse's text for it, so the
help lists exactly what the parser takes.
"""

from __future__ import annotations

from ...core.types import CASSETTE_MODES
from ...options.grammar import OptionParser, add_run_options

CELL_HELP = {
    "--model": "model name (else c.ToolHost.model, JUPYTER_TOOLHOST_MODEL, a default)",
    "--mode": "the permission mode (as python -m jupyter_toolhost --mode and "
    "Session(permission_mode=...)): default | acceptEdits | bypassPermissions | dontAsk | "
    "plan | auto",
    "--max-turns": "at most N model requests for this cell",
    "--cassette": "replay (or record) model answers from a cassette file: works offline",
    "--cassette-mode": "what the cassette does; auto (the default) replays when the file "
    "exists and records (with ANTHROPIC_API_KEY) when it does not",
    "--tools": "offer only these tools",
    "--disclosure": "how deferred (MCP) tools reach the model: auto (the default: the API's "
    "defer_loading when the model supports it, so a discovery keeps the prompt cache; else "
    "discovered) | defer_loading | discovered | server_bm25 | server_regex (the API's own "
    "tool search)",
    "--think": "extended thinking with a budget of N tokens (at least 1024), or off (the "
    'default). The thinking streams into a collapsed "Thinking" section above the turn\'s '
    "tool cards; its tokens are billed as output tokens, up to N per model response",
}
"""What each run option says in `%agent help options` (the command line says it shorter)."""


def _cell_parser() -> OptionParser:
    # The cell's usage spells a choice as "a|b|c", as the rest of `%agent help` does.
    choices = {"--cassette-mode": "|".join(CASSETTE_MODES)}
    parser = OptionParser("%%agent")
    add_run_options(parser, ("--model", "--mode"), read_values=False, help=CELL_HELP)
    parser.add_argument("--new", action="store_true", help="start a new conversation")
    parser.add_argument(
        "--trust-folder",
        action="store_true",
        help="trust the working folder's own settings (.toolhost/settings.json: hooks, MCP "
        "servers, allow rules, a wider mode) for the conversation this cell starts, without "
        "asking: the way for headless runs",
    )
    parser.add_argument(
        "--with",
        dest="attach",
        default=None,
        metavar="A,B",
        help="attach these kernel variables (names or paths such as df.columns) to the "
        "prompt: a compact description of each, as @name in the prompt does",
    )
    add_run_options(
        parser,
        ("--max-turns", "--cassette", "--cassette-mode", "--tools", "--disclosure", "--think"),
        read_values=False,
        help=CELL_HELP,
        metavars=choices,
    )
    return parser


CELL_PARSER = _cell_parser()
CELL_USAGE = f"{CELL_PARSER.one_line_usage()}\n<prompt lines>"
CELL_PARSER.usage_hint = CELL_USAGE
OPTION_LIST = CELL_PARSER.option_list()
"""`--model M        model name (...)`, one aligned entry per option, from the parser."""
