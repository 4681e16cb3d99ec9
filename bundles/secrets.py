"""Chunk text that looks like a credential: MemoryRail's secret scanner, reused, not copied.

`chunk_secret_findings` names (rule, line) and never the value; `mask_secrets` hides the matched
spans wherever a chunk is shown (the Brain page, the admin), so the value is never displayed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from formats.memoryrail import RULES, scan_text

_PATTERNS = dict(RULES)
SCAN_CHARS = 200_000  # like the prompt-injection check, only the head of a huge chunk


def chunk_secret_findings(content: str) -> list[dict[str, Any]]:
    """[{"rule", "line"}] of every rule that matches, in line order (no value, no span)."""
    return [{"rule": f.rule, "line": f.line} for f in scan_text(content[:SCAN_CHARS], path="chunk")]


def describe_findings(findings: Iterable[Mapping[str, Any]], limit: int = 5) -> str:
    """`aws-access-key-id on line 2, jwt on line 5` (rule and line only, never the value)."""
    items = list(findings)
    text = ", ".join(f"{f.get('rule')} on line {f.get('line')}" for f in items[:limit])
    return text + (f" and {len(items) - limit} more" if len(items) > limit else "")


def mask_secrets(content: str, findings: Iterable[Mapping[str, Any]] | None) -> str:
    """The content with every span of a finding's rule on a finding's line replaced by
    `[secret: <rule>]`. Lines are numbered as the scanner numbers them (str.splitlines)."""
    wanted: dict[int, list[str]] = {}
    for finding in findings or ():
        rule, line = finding.get("rule"), finding.get("line")
        if isinstance(line, int) and rule in _PATTERNS:
            wanted.setdefault(line, []).append(rule)
    if not wanted:
        return content
    lines = content.splitlines(keepends=True)
    for number, rules in wanted.items():
        if not 1 <= number <= len(lines):
            continue
        line = lines[number - 1]
        body = line.rstrip("\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
        ending = line[len(body) :]
        for rule in rules:
            body = _PATTERNS[rule].sub(f"[secret: {rule}]", body)
        lines[number - 1] = body + ending
    return "".join(lines)
