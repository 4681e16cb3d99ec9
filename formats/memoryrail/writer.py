"""Write memory files: every front matter value as JSON, key order kept, the body untouched.

Values the reader can produce that JSON cannot hold (non-string mapping keys inside a value,
NaN and infinities) are written as the equivalent YAML flow syntax so nothing is lost.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from formats.memoryrail.fields import format_timestamp, parse_timestamp
from formats.memoryrail.model import Memory

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")
# Words some YAML readers (1.1 or 1.2) resolve to booleans or null: always quote them as keys.
_YAML_WORDS = frozenset({"true", "false", "null", "yes", "no", "on", "off", "y", "n", "nan", "inf"})
# Printable in JSON but special to YAML (line breaks in YAML 1.1, or non-printable in YAML).
_YAML_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")


class WriteError(ValueError):
    """A value that cannot be written as a MemoryRail front matter value."""


_SURROGATE = re.compile("[\ud800-\udfff]")


def _string(text: str) -> str:
    if not text.isascii() and _SURROGATE.search(text):
        raise WriteError("text contains a lone surrogate, which UTF-8 cannot hold")
    encoded = json.dumps(text, ensure_ascii=False)
    return _YAML_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", encoded)


def encode_value(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        return json.dumps(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(encode_value(item) for item in value) + "]"
    if isinstance(value, dict):
        pairs = (f"{encode_value(k)}: {encode_value(v)}" for k, v in value.items())
        return "{" + ", ".join(pairs) + "}"
    raise WriteError(f"cannot write a {type(value).__name__} value")


def encode_key(key: str) -> str:
    plain = _PLAIN_KEY.fullmatch(key) and key.lower() not in _YAML_WORDS  # "$" allows "\n"
    return key if plain else _string(key)


def render(meta: dict[str, Any], body: str) -> str:
    """The file text for `meta` (in its order) followed by `body` exactly as given."""
    lines = [f"{encode_key(key)}: {encode_value(value)}\n" for key, value in meta.items()]
    return "---\n" + "".join(lines) + "---\n" + body


def updated_meta(meta: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """A copy of `meta` with `changes` applied: existing keys keep their place, new ones append."""
    result = dict(meta)
    result.update(changes)
    return result


def advance(previous: str, now: str) -> str:
    """`now`, unless that would not be after `previous` (clock skew): then previous + 1 ms."""
    before, current = parse_timestamp(previous), parse_timestamp(now)
    if before is None or current is None or current > before:
        return now
    from datetime import timedelta

    return format_timestamp(before + timedelta(milliseconds=1))


def approve(memory: Memory, *, now: str) -> str:
    meta = updated_meta(memory.meta, {"status": "active", "updated": advance(memory.updated, now)})
    return render(meta, memory.body)


def supersede(memory: Memory, *, by: str, now: str) -> str:
    changes = {
        "status": "superseded",
        "superseded_by": by,
        "updated": advance(memory.updated, now),
    }
    return render(updated_meta(memory.meta, changes), memory.body)
