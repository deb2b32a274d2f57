"""The `%agent` / `%%agent` magic: reading a line and dispatching it.

`transformer` turns a `%%agent` cell into one top-level ``await`` (of `jupyter.cell`);
`magics` is the thin IPython shell; `cell_line` and `options` read the `%%agent` line and the
`%agent` subcommands with argparse (the grammar shared with the command line is in
`jupyter_toolhost.options`); `help_text` holds each subcommand's grammar and help;
`commands` runs the subcommands, `mcp_command` and `undo` the ones that await.
"""
