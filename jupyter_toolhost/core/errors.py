"""The errors jupyter_toolhost raises: one tree, rooted in `ToolhostError`.

``except ToolhostError`` catches anything this package raises on purpose; a narrower class
catches one kind. Each class lives beside the code that raises it (a higher layer subclasses
the bases here, never the other way round), and the package root exports the ones a user of
the library meets. Where a class was a ``ValueError`` or a ``RuntimeError`` before the tree
existed, it still is, so ``except ValueError`` code keeps working.

The whole tree (where each class is defined, below ``jupyter_toolhost.``)::

    ToolhostError                         core.errors
    ├── ConfigurationError                core.errors: a file or setting the user wrote is
    │   │                                   wrong; the message says where and what to write
    │   ├── SettingsError                 permissions.settings.settings_file
    │   ├── RuleError                     permissions.rules.rules (also ValueError)
    │   ├── McpConfigError                mcp.config (also ValueError)
    │   ├── ThinkingConfigError           model.thinking (also ValueError)
    │   └── FrontMatterError              tools.skill.frontmatter (also ValueError)
    ├── UsageError                        core.errors: options on a `%%agent` line or the
    │                                       command line that make no sense (also ValueError)
    ├── CheckError                        permissions.check: a call that cannot be checked
    │                                       as given (also ValueError)
    ├── ParseError                        core.errors: text that is not in the grammar it
    │   │                                   claims (also ValueError)
    │   ├── ShellSyntaxError              shell.words: a command line not followed exactly
    │   │   └── Unchecked                 shell.subset: bash outside the understood subset
    │   ├── TooManyWords                  shell.words: a brace expansion too large
    │   └── ScheduleError                 tools.cron.schedule: a cron line or interval
    ├── ToolError                         core.types: a tool's failure, shown to the model
    │   ├── ToolInputError                core.types: an input that makes no sense
    │   └── ToolInputValidationError      orchestration.pipeline: an input off the schema
    ├── ModelError                        model.base: the model gave no usable answer
    │   ├── ModelAPIError                 model.base: the API answered with an error
    │   ├── ModelUnreachable              model.base: no connection to the API
    │   ├── StreamBroken                  model.base: the stream ended before its end
    │   ├── MissingCredentials            model.anthropic_model: no API key
    │   └── CassetteError                 model.cassette_format: a cassette that cannot be read
    │       └── CassetteMismatch          model.cassette_miss: a request the cassette lacks
    ├── McpError                          core.errors: an MCP server or one of its tools
    │   ├── McpUnavailable                mcp.connection: the server is not connected
    │   ├── McpCallError                  mcp.connection: a request to it failed
    │   └── UnmappableSchema              mcp.naming: a schema the API cannot take (also
    │                                       ValueError)
    ├── ModelFilesUnavailable             disclosure.model_download: ToolSearch's model
    │                                       files can't be downloaded or aren't the pinned
    │                                       ones (also RuntimeError)
    ├── AgentFailed                       jupyter.host: the cell's error when the agent
    │                                       stopped on a failure (also RuntimeError)
    ├── InvalidRequest                    testing.invalid_request: what the loopback
    │                                       Messages API server answers with a 400
    └── (inside one module, never raised out of it: _Cancelled in orchestration.pipeline,
         _Redirected in tools.web_fetch, _Failure in testing.messages_server)

One class stands outside on purpose: ``jupyter.host.AgentInterrupted`` is a
``KeyboardInterrupt``, so that an interrupted cell stops as any interrupted cell does and no
``except Exception`` (nor ``except ToolhostError``) swallows it.

`tests/core/test_errors.py` checks that every exception class of the package is in this tree
and derives from `ToolhostError`.
"""

from __future__ import annotations

__all__ = [
    "ConfigurationError",
    "McpError",
    "ParseError",
    "ToolhostError",
    "UsageError",
]


class ToolhostError(Exception):
    """The root: anything jupyter_toolhost raises on purpose."""


class ConfigurationError(ToolhostError):
    """A file or setting the user wrote is wrong; the message says where and what to write."""


class UsageError(ToolhostError, ValueError):
    """Options that make no sense; the message says what is wrong and what is expected."""


class ParseError(ToolhostError, ValueError):
    """Text that is not in the grammar it claims (a shell line, a cron expression...)."""


class McpError(ToolhostError):
    """An MCP server, or a request to one of its tools, failed."""
