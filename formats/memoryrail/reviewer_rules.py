"""Reviewer routing rules, like CODEOWNERS: parse `pattern-or-type: user1 user2` lines and match.

No Django here: the service (reviews.services.routing) checks the user names against the team.

- A pattern that is a MemoryRail type (`decision`, `constraint`, …) matches proposals of that type.
- Anything else is a glob on the memory's `links` and on its file path: `src/db/` matches the
  folder and everything under it, `src/db` and `src/*` match a path or any of its parent folders,
  a pattern without `/` (`*.sql`, `schema.sql`) matches a file name at any depth.
- Every matching rule adds its reviewers (a union, not CODEOWNERS' last-match-wins): routing
  says who should look, it never hides a proposal from anyone else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from formats.memoryrail import TYPE_PREFIXES

MAX_RULES = 200
MAX_PATTERN = 500
MAX_REVIEWERS = 20
_USERNAME = re.compile(r"^[\w.@+-]{1,150}$")


@dataclass(frozen=True)
class Rule:
    pattern: str
    reviewers: tuple[str, ...]
    line: int = 0

    @property
    def is_type(self) -> bool:
        return self.pattern in TYPE_PREFIXES

    def as_dict(self) -> dict[str, Any]:
        return {"pattern": self.pattern, "reviewers": list(self.reviewers)}


@dataclass(frozen=True)
class RuleError:
    line: int
    message: str

    def __str__(self) -> str:
        return f"Line {self.line}: {self.message}"


def parse_rules(text: str) -> tuple[list[Rule], list[RuleError]]:
    """Parse one rule per line; blank lines and `#` comments are skipped. Errors name the line."""
    rules: list[Rule] = []
    errors: list[RuleError] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        # User names never contain ':', so the last one separates the pattern from the users.
        pattern, colon, users = line.rpartition(":")
        pattern = pattern.strip()
        if not colon or not pattern:
            errors.append(RuleError(number, "write `pattern-or-type: user1 user2`."))
            continue
        if len(pattern) > MAX_PATTERN or any(ord(ch) < 32 for ch in pattern):
            errors.append(RuleError(number, "the pattern is too long or has control characters."))
            continue
        if ".." in pattern.split("/"):
            errors.append(RuleError(number, "a pattern cannot leave the repository (`..`)."))
            continue
        names = users.split()
        if not names:
            errors.append(RuleError(number, f"name at least one reviewer for `{pattern}`."))
            continue
        bad = [name for name in names if not _USERNAME.match(name)]
        if bad:
            errors.append(RuleError(number, f"not a user name: {', '.join(bad)}."))
            continue
        if len(names) > MAX_REVIEWERS:
            errors.append(RuleError(number, f"at most {MAX_REVIEWERS} reviewers per rule."))
            continue
        rules.append(Rule(pattern, tuple(dict.fromkeys(names)), number))
    if len(rules) > MAX_RULES:
        errors.append(RuleError(rules[MAX_RULES].line, f"at most {MAX_RULES} rules."))
    return rules, errors


def rules_from_json(data: Iterable[dict[str, Any]]) -> list[Rule]:
    return [Rule(str(d["pattern"]), tuple(d["reviewers"])) for d in data]


def render_rules(rules: Iterable[Rule]) -> str:
    return "".join(f"{rule.pattern}: {' '.join(rule.reviewers)}\n" for rule in rules)


def _normalise(path: str) -> str:
    path = path.strip()
    while path.startswith("./"):
        path = path[2:]
    return path.strip("/")


def glob_matches(pattern: str, path: str) -> bool:
    path = _normalise(path)
    if not path:
        return False
    if pattern.endswith("/"):
        folder = _normalise(pattern)
        return path == folder or path.startswith(folder + "/") or fnmatchcase(path, folder + "/*")
    pattern = _normalise(pattern)
    if not pattern:
        return False
    if "/" not in pattern and fnmatchcase(path.rsplit("/", 1)[-1], pattern):
        return True
    parts = path.split("/")
    return any(fnmatchcase("/".join(parts[:end]), pattern) for end in range(len(parts), 0, -1))


def rule_matches(rule: Rule, *, memory_type: str, paths: Iterable[str]) -> bool:
    if rule.is_type:
        return rule.pattern == memory_type
    return any(glob_matches(rule.pattern, path) for path in paths)


def memory_paths(path: str, front_matter: dict[str, Any]) -> list[str]:
    """The file path and every string in `links` (what a path rule is matched against)."""
    links = front_matter.get("links")
    found = [path]
    if isinstance(links, list):
        found += [link for link in links if isinstance(link, str)]
    return found


def match_reviewers(rules: Iterable[Rule], *, memory_type: str, paths: list[str]) -> list[str]:
    """User names of every rule that matches, in rule order, without repeats."""
    names: dict[str, None] = {}
    for rule in rules:
        if rule_matches(rule, memory_type=memory_type, paths=paths):
            names.update(dict.fromkeys(rule.reviewers))
    return list(names)
