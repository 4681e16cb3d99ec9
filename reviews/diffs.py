"""An inline diff of two memory texts, line by line with the changed words marked.

Every piece of text is escaped here before it is wrapped in <ins>/<del>: memory text is
untrusted, and the diff is shown as is (never through Markdown)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

_WORDS = re.compile(r"(\s+)")
MAX_LINES = 2000  # beyond this a reviewer reads the two texts, not a diff
WORD_DIFF_RATIO = 0.5  # below this much in common, a changed line is shown changed as a whole


@dataclass(frozen=True)
class DiffLine:
    kind: str  # "same", "added", "removed"
    old_number: int | None
    new_number: int | None
    html: SafeString

    @property
    def sign(self) -> str:
        return {"same": " ", "added": "+", "removed": "-"}[self.kind]


def _words(old: str, new: str) -> tuple[SafeString, SafeString]:
    """The two lines with the words that differ wrapped in <del> and <ins>."""
    a, b = _WORDS.split(old), _WORDS.split(new)
    matcher = SequenceMatcher(lambda token: token.isspace(), a, b, autojunk=False)
    if matcher.ratio() < WORD_DIFF_RATIO:  # a rewritten line: marking every word says nothing
        return mark_safe(f"<del>{escape(old)}</del>"), mark_safe(f"<ins>{escape(new)}</ins>")  # noqa: S308
    left: list[str] = []
    right: list[str] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        removed, added = escape("".join(a[i1:i2])), escape("".join(b[j1:j2]))
        if tag == "equal":
            left.append(removed)
            right.append(added)
            continue
        if removed:
            left.append(f"<del>{removed}</del>")
        if added:
            right.append(f"<ins>{added}</ins>")
    return mark_safe("".join(left)), mark_safe("".join(right))  # noqa: S308 - escaped above


def inline_diff(old: str, new: str) -> list[DiffLine] | None:
    """The lines of `new` against `old`; None when they are equal or too long to diff."""
    a, b = old.splitlines(), new.splitlines()
    if a == b or len(a) + len(b) > MAX_LINES:
        return None
    lines: list[DiffLine] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            lines += [
                DiffLine("same", i1 + k + 1, j1 + k + 1, escape(a[i1 + k])) for k in range(i2 - i1)
            ]
            continue
        paired = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        removed, added = [], []
        for k in range(paired):  # a changed line: its changed words marked on both sides
            left, right = _words(a[i1 + k], b[j1 + k])
            removed.append(DiffLine("removed", i1 + k + 1, None, left))
            added.append(DiffLine("added", None, j1 + k + 1, right))
        removed += [DiffLine("removed", i + 1, None, escape(a[i])) for i in range(i1 + paired, i2)]
        added += [DiffLine("added", None, j + 1, escape(b[j])) for j in range(j1 + paired, j2)]
        lines += removed + added
    return lines
