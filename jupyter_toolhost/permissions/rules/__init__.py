"""Permission rules: rule strings parsed, compiled once into matchers, Bash specifiers.

- ``rules``: rule strings in Claude Code's syntax parsed into `Rule` values.
- ``ruleset``: rules of every source compiled to fast matchers, one set per behaviour.
- ``shell_rules``: Bash rule specifiers matched against normalised command text.
"""
