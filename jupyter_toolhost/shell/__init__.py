"""The bash analysis library: what a command line would run, read without running it.

It knows nothing of permissions; the decision (`permissions`) and the Bash tool build on it.

- ``subset``: the bash the analysis understands, in one place (the rest can't be checked).
- ``parse``: every simple command of a line, from tree-sitter-bash's syntax tree;
  ``source``: where that grammar reads a line differently from bash.
- ``words``: `Word`, `Redirect`, ANSI-C quotes and brace expansion; ``wrappers``: programs
  that run another program (``env``, ``sudo``, ``/bin/`` prefixes...).
- ``commands``: `analyze()`, command lines as rules see them, with their risks.
- ``safety``: which commands only read, read whole trees, or hide code in options;
  ``globs``: globs checked by what they can match.
"""
