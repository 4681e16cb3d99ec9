"""What both strict YAML readers share: the error, the tag sets, the depth limit, line counting."""

from __future__ import annotations

import re
from dataclasses import dataclass

CORE = "tag:yaml.org,2002:"
# The non-specific "!" is refused too: it would make `! 12` a string, a rarely meant subtlety.
ALLOWED_EXPLICIT_TAGS = frozenset(
    CORE + name for name in ("str", "int", "float", "bool", "null", "seq", "map")
)
SCALAR_TAGS = frozenset(
    CORE + name for name in ("str", "int", "float", "bool", "null", "timestamp", "merge", "value")
)
# Implicit tags whose scalar stays the string written: timestamps (each format validates its
# own), '<<' as a value and YAML 1.1's '='.
STRING_TAGS = frozenset(CORE + name for name in ("str", "timestamp", "merge", "value"))
MAX_DEPTH = 32

LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class FrontMatterError(Exception):
    """A document the strict reader refuses: `code` is stable, `line` is 1-based in the file."""

    code: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f" (line {self.line})" if self.line else ""
        return f"{self.code}: {self.message}{where}"


def line_of(text: str, position: int, first: int = 1) -> int:
    """The line `position` of `text` is on, counting YAML's line breaks from `first`."""
    return len(LINE_BREAK.findall(text, 0, position)) + first
