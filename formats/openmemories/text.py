"""OpenMemories 0.1: strings no text column can hold, RFC 3339 timestamps and absolute URIs.
No Django import."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from formats.openmemories.model import ABSOLUTE_URI_RE, SURROGATE_RE, TIMESTAMP_RE

# ----------------------------------------------------------------------------- strings


STRING_FAULTS = {
    "nul-byte": "a NUL character (\\u0000)",
    "lone-surrogate": "half of a surrogate pair (like \\ud800)",
}


def _label(value: Any) -> str:
    """A key as ASCII text that is safe to put in a message (escapes shown)."""
    return json.dumps(str(value))[1:-1]


def string_fault(text: str) -> str | None:
    """Why no text column or JSON document can hold `text`: a NUL character (JSON's \\u0000,
    YAML's \\0) or an unpaired surrogate (a lone \\ud800 escape); None when it can."""
    if "\x00" in text:
        return "nul-byte"
    if SURROGATE_RE.search(text):
        return "lone-surrogate"
    return None


def _any_fault(value: Any) -> bool:
    """Whether some string in `value` (keys and values of nested objects and arrays) is one
    `string_fault` refuses: one pass with no message built, so that the clean case, nearly
    every record and manifest entry, costs no labels (`string_problem` words the fault)."""
    stack = [value]
    pop, extend = stack.pop, stack.extend
    while stack:
        item = pop()
        if isinstance(item, str):
            if "\x00" in item or SURROGATE_RE.search(item):
                return True
        elif isinstance(item, dict):
            extend(item)
            extend(item.values())
        elif isinstance(item, list | tuple):
            extend(item)
    return False


def string_problem(value: Any, where: str) -> tuple[str, str] | None:
    """(code, message) for the first string in `value` (a string, or the keys and values of
    nested objects and arrays) that `string_fault` refuses. `where` names `value` in the
    message, like `name` or `memories[3]`; a key is named by where it is, never quoted."""
    if not _any_fault(value):
        return None
    stack: list[tuple[Any, str]] = [(value, f"'{where}'")]
    while stack:
        item, at = stack.pop()
        if isinstance(item, str):
            code = string_fault(item)
            if code is not None:
                return code, f"{at} contains {STRING_FAULTS[code]}"
        elif isinstance(item, dict):
            for key, sub in item.items():
                stack.append((sub, f"{at[:-1]}.{_label(key)}'"))
                stack.append((key, f"a key in {at}"))
        elif isinstance(item, list | tuple):
            stack.extend((sub, f"{at[:-1]}[{index}]'") for index, sub in enumerate(item))
    return None


def mapping_problem(mapping: Mapping[Any, Any], what: str) -> tuple[str, str, Any] | None:
    """string_problem over a top-level mapping: (code, message, the key it concerns)."""
    if not _any_fault(mapping):
        return None
    for key, value in mapping.items():
        code = string_fault(key) if isinstance(key, str) else None
        if code is not None:
            return code, f"a key of {what} contains {STRING_FAULTS[code]}", key
        problem = string_problem(value, _label(key))
        if problem is not None:
            return problem[0], f"{what}: {problem[1]}", key
    return None


def _clean(value: Any) -> str | None:
    """`value` when it is a string that is safe to keep on a rejection, else None."""
    return value if isinstance(value, str) and string_fault(value) is None else None


# ----------------------------------------------------------------------------- timestamps


def parse_timestamp(value: str) -> datetime | None:
    """An RFC 3339 UTC timestamp ending in Z, or None when it is not one."""
    if len(value) == 20 and value[4::3] == "--T::Z" and value.isascii():
        # The usual shape, YYYY-MM-DDTHH:MM:SSZ: C's ISO reader checks what the pattern and
        # datetime() below check (ASCII digits, ranges) in a fifth of the time.
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return None
    return _timestamp_by_pattern(value)


def _timestamp_by_pattern(value: str) -> datetime | None:
    """`parse_timestamp` for any text: its fraction, non-ASCII digits, any length."""
    match = TIMESTAMP_RE.match(value)
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction = match.groups()
    micro = int((fraction[1:] + "000000")[:6]) if fraction else 0
    try:
        return datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second), micro, tzinfo=UTC
        )
    except ValueError:
        return None


def format_timestamp(value: datetime) -> str:
    value = value.astimezone(UTC)
    text = value.strftime("%Y-%m-%dT%H:%M:%S")
    if value.microsecond:
        text += f".{value.microsecond:06d}".rstrip("0")
    return text + "Z"


def is_absolute_uri(value: str) -> bool:
    return bool(ABSOLUTE_URI_RE.match(value)) and "#" not in value
