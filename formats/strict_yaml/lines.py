"""The plainest front matter, read line by line with regular expressions.

No Django import. Most front matter is a column of `key: scalar` lines, the scalar on one line
(plain, or quoted with no escape) or a block list of such scalars, in printable ASCII. That
narrow grammar is read here by `re` alone, which costs a fraction of libyaml's event or node
objects; a source with any line outside it, a duplicate key or a key that does not read as a
string gives None, and the libyaml paths of `fast` read it as before (and defer what they must
to the reference). Plain scalars are read by `scalars.plain_value`, as those paths read them.
"""

from __future__ import annotations

import re
from typing import Any

from formats.strict_yaml.scalars import STRING_KEYS, Defer, is_string_key, plain_value

# One-line scalars, printable ASCII only (no tab, no control character): single-quoted with
# no '' inside, double-quoted with no escape, and plain ones that cannot be anything else
# (no indicator first, no '#' anywhere, ':' only before a non-space; trailing blanks trimmed).
_SINGLE = r"[ -&(-~]*"  # inside '...'
_DOUBLE = r"[ !#-\[\]-~]*"  # inside "..."
_PLAIN = r"(?:-(?=[!-~])|[A-Za-z0-9_./~=+(<])(?:[ -\"$-9;-~]|:(?=[!-~]))*"
_SCALAR = f"(?:'({_SINGLE})'|\"({_DOUBLE})\"|({_PLAIN}))"
_UNCAPTURED = f"(?:'{_SINGLE}'|\"{_DOUBLE}\"|{_PLAIN})"

# A top-level key (plain: a letter, then letters, digits, '_' and '-') with its one-line
# scalar, or with nothing on its line and then a block list of one-line scalars at one indent.
_ENTRY = re.compile(
    rf"([A-Za-z][A-Za-z0-9_-]*):(?: +{_SCALAR} *\n"
    rf"| *\n((( *)- +{_UNCAPTURED} *\n)(?:\7- +{_UNCAPTURED} *\n)*)?)"
)
_ITEM = re.compile(rf" *- +{_SCALAR} *\n")


def read_mapping(source: str) -> tuple[dict[str, Any], dict[str, int]] | None:
    """The mapping `source` holds and each key's file line, if every line is in the grammar."""
    if not source.isascii():
        return None
    try:
        return _read(source)
    except Defer:  # a plain number Python cannot hold, maybe on a line the grammar refuses
        return None  # the libyaml paths decide, having read the whole source


def _read(source: str) -> tuple[dict[str, Any], dict[str, int]] | None:
    result: dict[str, Any] = {}
    key_lines: dict[str, int] = {}
    match = _ENTRY.match
    position, end, line = 0, len(source), 2
    while position < end:
        entry = match(source, position)
        if entry is None:
            return None
        key, single, double, plain, items = entry.group(1, 2, 3, 4, 5)
        if key in result or (key not in STRING_KEYS and not is_string_key(key)):
            return None  # a duplicate, or a key like `true` or `null`
        key_lines[key] = line
        if single is not None:
            result[key] = single
        elif double is not None:
            result[key] = double
        elif plain is not None:
            result[key] = plain_value(plain.rstrip(" "))
        elif items is not None:
            result[key] = [_item(item) for item in _ITEM.finditer(items)]
            line += len(result[key])
        else:
            result[key] = plain_value("")  # `key:` alone: an empty plain scalar, null
        line += 1
        position = entry.end()
    return (result, key_lines) if result else None


def _item(item: re.Match[str]) -> Any:
    single, double, plain = item.group(1, 2, 3)
    if single is not None:
        return single
    if double is not None:
        return double
    return plain_value(plain.rstrip(" "))
