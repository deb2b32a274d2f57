"""Rules from every source compiled once into fast matchers, one set per behaviour.

`compile_rules` takes the rule strings of a `ToolPermissionContext` (source → behaviour →
rules) and the `RuleSource` of each (where its file is, what ``/path`` patterns are relative
to) and builds name lookups and combined regexes. Deny and ask rules compare case- and
width-insensitively (a look-alike is still caught); allow rules compare exactly.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ...core.types import DecisionReason, RuleBehavior
from ..hosts import canonical_host
from ..paths import MEMO_SIZE, CompiledPattern, PathRuleSet, compile_pattern
from .rules import Rule, RuleError, parse_rule
from .shell_rules import ShellPattern, ShellRuleSet, compile_shell_pattern

USER = "userSettings"
PROJECT = "projectSettings"
LOCAL = "localSettings"
SESSION = "session"
CELL = "cell"
"""Rules a person allowed "for this cell": they hold until the cell (or the run) ends."""
BEHAVIORS: tuple[RuleBehavior, ...] = ("deny", "ask", "allow")


@dataclass(frozen=True, slots=True)
class RuleSource:
    """Where rules of one source come from."""

    label: str
    """Shown in decision reasons: the settings file path, or ``session``."""
    root: str
    """What ``/path`` patterns in these rules are relative to."""


@dataclass(frozen=True, slots=True)
class SourcedRule:
    """A parsed rule with its behaviour and where it came from."""

    rule: Rule
    behavior: RuleBehavior
    source: str
    label: str
    _reason: DecisionReason = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Built once, for speed: every decision by this rule carries the same (frozen) reason.
        reason = DecisionReason("rule", f"{self.behavior} rule {self.rule.text}", self.label)
        object.__setattr__(self, "_reason", reason)

    def reason(self) -> DecisionReason:
        return self._reason


@dataclass(slots=True)
class BehaviorRules:
    """All rules of one behaviour, ready to match."""

    tools: dict[str, SourcedRule] = field(default_factory=dict[str, SourcedRule])
    """Whole-tool rules by tool name (``Bash``, ``Read``, ``mcp__s__t``, ``MyTool``)."""
    servers: dict[str, SourcedRule] = field(default_factory=dict[str, SourcedRule])
    """``mcp__server`` and ``mcp__server__*`` rules by server."""
    classes: dict[str, SourcedRule] = field(default_factory=dict[str, SourcedRule])
    """Whole-class rules (bare ``Bash``, ``Read``, ``Edit``, ``WebFetch``) by rule kind."""
    shell: ShellRuleSet[SourcedRule] = field(default_factory=lambda: ShellRuleSet([], folded=False))
    read: PathRuleSet[SourcedRule] = field(default_factory=lambda: PathRuleSet([], folded=False))
    edit: PathRuleSet[SourcedRule] = field(default_factory=lambda: PathRuleSet([], folded=False))
    domains: tuple[tuple[str, SourcedRule], ...] = ()
    contents: dict[str, tuple[tuple[str, SourcedRule], ...]] = field(
        default_factory=dict[str, tuple[tuple[str, SourcedRule], ...]]
    )
    """``Tool(specifier)`` rules of tools outside the classes, by tool name (``Skill(review)``):
    matched against what the tool declares as its `rule_content`."""
    lines: dict[str, SourcedRule] = field(default_factory=dict[str, SourcedRule])
    """Bash rules by their whole specifier, unescaped: a rule that names a command line
    exactly allows that line (`exact_line`)."""
    empty: bool = True
    _domain_cache: tuple[dict[str, list[tuple[int, SourcedRule]]], ...] | None = None
    _domain_memo: dict[tuple[str, bool], SourcedRule | None] = field(
        default_factory=dict[tuple[str, bool], SourcedRule | None]
    )
    """What `domain` answered per host (a pure function of the host and the rules)."""

    def mcp_rule(
        self, server: str, tool: str, *, aliases: tuple[str, ...] = ()
    ) -> SourcedRule | None:
        """The rule naming MCP server `server` whole (``mcp__S``, ``mcp__S__*``), matched by
        the server's name, never by a split of a tool name. `aliases` are other names of the
        same server (its configured name, when it was renamed): a rule naming the server or
        this `tool` of it by one of them counts too (deny and ask pass them; allow does not,
        so a renamed server is allowed only by its new name)."""
        hit = self.servers.get(server)
        for alias in aliases if hit is None else ():
            hit = (
                self.servers.get(alias)
                or self.tools.get(f"mcp__{alias}")
                or self.tools.get(f"mcp__{alias}__{tool}")
            )
            if hit is not None:
                break
        return hit

    def domain(self, host: str, *, subdomains: bool) -> SourcedRule | None:
        """The rule for `host`: ``*.x`` covers subdomains; with `subdomains`, ``x`` does too."""
        if not self.domains:
            return None
        memo = self._domain_memo
        key = (host, subdomains)
        if key not in memo:
            if len(memo) >= MEMO_SIZE:
                memo.clear()
            memo[key] = self._domain(host, subdomains)
        return memo[key]

    def content(self, tool: str, content: str, *, folded: bool = False) -> SourcedRule | None:
        """The first ``tool(specifier)`` rule whose specifier names `content`: the same
        text, or a prefix of it before a closing ``:*`` or `` *``; `folded` (deny and ask
        rules) ignores case."""
        if folded:
            content = content.casefold()
        for spec, sourced in self.contents.get(tool, ()):
            spec = spec.casefold() if folded else spec
            if spec == content or any(
                spec.endswith(tail) and _starts_word(content, spec[: -len(tail)])
                for tail in (":*", " *")
            ):
                return sourced
        return None

    def exact_line(self, line: str) -> SourcedRule | None:
        """The Bash rule that names this whole command line, as written (surrounding
        whitespace aside): the person read and allowed exactly this text."""
        return self.lines.get(line.strip()) if self.lines else None

    def _domain(self, host: str, subdomains: bool) -> SourcedRule | None:
        exact, wildcard = self._domain_index()
        parts = host.split(".")
        found: list[tuple[int, SourcedRule]] = []
        for i in range(len(parts)):
            suffix = ".".join(parts[i:])
            if i == 0 or subdomains:
                found.extend(exact.get(suffix, ()))
            if i > 0:
                found.extend(wildcard.get(suffix, ()))
        return min(found, key=lambda e: e[0])[1] if found else None

    def _domain_index(self) -> tuple[dict[str, list[tuple[int, SourcedRule]]], ...]:
        if self._domain_cache is None:
            exact: dict[str, list[tuple[int, SourcedRule]]] = {}
            wildcard: dict[str, list[tuple[int, SourcedRule]]] = {}
            for index, (domain, sourced) in enumerate(self.domains):
                if domain.startswith("*."):
                    wildcard.setdefault(domain[2:], []).append((index, sourced))
                else:
                    exact.setdefault(domain, []).append((index, sourced))
            self._domain_cache = (exact, wildcard)
        return self._domain_cache


@dataclass(slots=True)
class CompiledRules:
    """Deny, ask and allow rules of every source, compiled."""

    deny: BehaviorRules
    ask: BehaviorRules
    allow: BehaviorRules
    problems: tuple[str, ...] = ()
    """Rules that could not be parsed (they are reported when settings load)."""
    count: int = 0

    def of(self, behavior: RuleBehavior) -> BehaviorRules:
        return {"deny": self.deny, "ask": self.ask, "allow": self.allow}[behavior]


def default_sources(*, cwd: str, home: str) -> dict[str, RuleSource]:
    """The sources of a session and their pattern roots when no settings say otherwise."""
    return {
        USER: RuleSource(f"{home}/.toolhost/settings.json", home),
        PROJECT: RuleSource(f"{cwd}/.toolhost/settings.json", cwd),
        LOCAL: RuleSource(f"{cwd}/.toolhost/settings.local.json", cwd),
        SESSION: RuleSource(SESSION, cwd),
        CELL: RuleSource("this cell", cwd),
    }


def compile_rules(
    rules: Mapping[str, Mapping[RuleBehavior, Sequence[str]]],
    *,
    cwd: str,
    home: str,
    sources: Mapping[str, RuleSource] | None = None,
) -> CompiledRules:
    """Compile every rule of every source; unparseable ones are listed in `problems`."""
    known = dict(default_sources(cwd=cwd, home=home))
    known.update(sources or {})
    problems: list[str] = []
    built: dict[RuleBehavior, BehaviorRules] = {}
    count = 0
    for behavior in BEHAVIORS:
        folded = behavior != "allow"
        target = BehaviorRules()
        shell: list[tuple[SourcedRule, ShellPattern]] = []
        read: list[tuple[SourcedRule, CompiledPattern]] = []
        edit: list[tuple[SourcedRule, CompiledPattern]] = []
        domains: list[tuple[str, SourcedRule]] = []
        contents: dict[str, list[tuple[str, SourcedRule]]] = {}
        for source_name, by_behavior in rules.items():
            source = known.get(source_name, RuleSource(source_name, cwd))
            for text in by_behavior.get(behavior, ()):
                try:
                    rule = parse_rule(text)
                except RuleError as exc:
                    problems.append(f"{source.label}: {exc}")
                    continue
                count += 1
                sourced = SourcedRule(rule, behavior, source_name, source.label)
                if rule.kind == "mcp_server":
                    target.servers.setdefault(rule.server or "", sourced)
                elif rule.specifier is None:
                    target.tools.setdefault(rule.tool, sourced)
                    if rule.kind != "tool":
                        target.classes.setdefault(rule.kind, sourced)
                elif rule.kind == "tool":
                    contents.setdefault(rule.tool, []).append((rule.specifier, sourced))
                elif rule.kind == "shell":
                    shell.append((sourced, compile_shell_pattern(rule.specifier)))
                    target.lines.setdefault(rule.specifier.strip(), sourced)
                elif rule.kind == "web":
                    domains.append((_domain(rule.specifier), sourced))
                else:
                    pattern = compile_pattern(
                        rule.specifier, cwd=cwd, home=home, settings_root=source.root
                    )
                    (read if rule.kind == "read" else edit).append((sourced, pattern))
        target.shell = ShellRuleSet(shell, folded=folded)
        target.read = PathRuleSet(read, folded=folded)
        target.edit = PathRuleSet(edit, folded=folded)
        target.domains = tuple(domains)
        target.contents = {tool: tuple(found) for tool, found in contents.items()}
        target.empty = not (
            target.tools or target.servers or shell or read or edit or domains or contents
        )
        built[behavior] = target
    return CompiledRules(built["deny"], built["ask"], built["allow"], tuple(problems), count)


_RECENT = 8
"""How many compiled forms `compiled_rules` keeps (a session has one or two at a time)."""
_recent: list[tuple[object, str, str, object, CompiledRules]] = []
_recent_lock = threading.Lock()


def compiled_rules(
    rules: Mapping[str, Mapping[RuleBehavior, Sequence[str]]],
    *,
    cwd: str,
    home: str,
    sources: Mapping[str, RuleSource] | None = None,
) -> CompiledRules:
    """`compile_rules`, remembered: the engine, the tools that withhold denied files and the
    sandbox all ask for the same rules, several times per call.

    A rules mapping is recognised by identity (the app state replaces it, never changes it),
    with the directory, the home `~` stands for and the settings sources it was compiled for.
    """
    with _recent_lock:
        for known, where, known_home, known_sources, compiled in _recent:
            same = known is rules and known_sources is sources
            if same and where == cwd and known_home == home:
                return compiled
    compiled = compile_rules(rules, cwd=cwd, home=home, sources=sources)
    with _recent_lock:
        _recent.insert(0, (rules, cwd, home, sources, compiled))
        del _recent[_RECENT:]
    return compiled


def _starts_word(text: str, prefix: str) -> bool:
    """Whether `text` is `prefix`, or starts with it followed by a space or a ``:``."""
    return text == prefix or (text.startswith(prefix) and text[len(prefix)] in " :")


def _domain(spec: str) -> str:
    """A rule's domain in the form hosts are compared in (``*.`` kept in front)."""
    wild = spec.strip().startswith("*.")
    host = canonical_host(spec.strip()[2:] if wild else spec)
    return f"*.{host}" if wild else host
