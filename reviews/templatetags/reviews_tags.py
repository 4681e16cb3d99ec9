"""What the review pages show of git's output: one meaningful line, the rest behind a toggle."""

from __future__ import annotations

import re

from django import template

register = template.Library()

# Lines git prints around the reason: progress, advice, the remote it talked to.
_NOISE = re.compile(r"^(hint:|To |From |remote: *$|Everything up-to-date|\s*$)")
_REASON = re.compile(r"^(error|fatal):\s*", re.IGNORECASE)


def error_summary_line(text: str) -> str:
    """The first `error:`/`fatal:` line of git's text (without the prefix), else its first
    line that is not noise; the text itself when it is one line."""
    lines = [line.rstrip() for line in (text or "").splitlines()]
    for line in lines:
        if _REASON.match(line.strip()):
            return _REASON.sub("", line.strip(), count=1)
    for line in lines:
        if not _NOISE.match(line):
            return line.strip()
    return (text or "").strip()


@register.filter
def error_summary(text: str) -> str:
    return error_summary_line(text)


@register.filter
def has_more_lines(text: str) -> bool:
    """Whether the full text says more than its summary (the toggle is worth showing)."""
    return bool(text) and text.strip() != error_summary_line(text)


@register.filter
def get_item(mapping: dict, key: object) -> object:  # type: ignore[type-arg]
    return mapping.get(key, "") if isinstance(mapping, dict) else ""
