"""The option grammar of both front ends: the ``%%agent`` line and ``python -m jupyter_toolhost``.

`values` checks and converts one option's text (a permission mode, a thinking budget...);
`grammar` lists the options a session runs with (`RUN_OPTIONS`) and puts them on an
argparse parser, and holds `OptionParser`, the argparse parser a notebook line uses (it
raises `UsageError` where argparse would print and exit). The command line (`__main__`) and
the magic (`jupyter.magic.options`) both build their parsers here, so neither front end owns
the options. Nothing heavy is imported: the command line's ``--help`` loads no session,
model or tool.
"""
