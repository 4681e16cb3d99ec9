"""MemoryAI Protocol v1, the vocabulary: constants, `BundleError`, DNA, and the field readers
and timestamps every record and the envelope are read with. No Django here.

Everything that reads untrusted bundle data raises `BundleError` (and nothing else) when the
data is wrong, so callers can turn it into a 422 or a skipped-record warning.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

FORMAT = "memoryai-bundle"
MAX_VERSION = 1
GENERATOR = "memoryadmin/0.1"

# Sections of a bundle, in canonical (sorted) order: import and stream export walk them so.
SECTIONS: tuple[str, ...] = (
    "agents",
    "chunks",
    "entities",
    "l2_sessions",
    "memory_edges",
    "mood_states",
)
SCOPES = ("full", "dna_only", "since")
CORE_TYPES = (
    "fact",
    "episodic",
    "goal",
    "error",
    "preference",
    "decision",
    "identity",
    "pitfall",
    "procedure",
    "life_event",
)
DNA_TYPES = frozenset({"preference", "decision", "identity", "pitfall", "procedure"})
ZONES = ("standard", "important", "critical", "ephemeral")
DNA_ZONES = frozenset({"critical", "important"})
TIERS = ("hot", "warm", "cold")
VENDOR_TYPE_RE = re.compile(r"^x_[a-z0-9_]{1,60}$")

MAX_CONTENT_CHARS = 1_000_000
MAX_NAME_CHARS = 512
MAX_KEY_CHARS = 255
MAX_EDGE_TYPE_CHARS = 64
MAX_MODEL_CHARS = 200
MAX_TAGS = 256
MAX_EMBEDDING_DIM = 65_536
MAX_JSON_DEPTH = 32
MAX_INT = 2**63 - 1
# Text a database cannot store: NUL (PostgreSQL refuses it in text and jsonb) and lone
# surrogates (no UTF-8 form). JSON parsers hand both over from `\u0000` / `\ud800` escapes.
_NOT_TEXT = re.compile("[\x00\ud800-\udfff]")


class BundleError(ValueError):
    """A bundle or record breaks the protocol. `code` is stable, `path` says where."""

    def __init__(self, code: str, message: str, path: str = "") -> None:
        self.code = code
        self.message = message
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


# --- DNA ------------------------------------------------------------------------------------


def is_dna(memory_type: str, zone: str = "standard", is_pinned: bool = False) -> bool:
    """§3.7: any one of type, zone or pin makes a chunk DNA (never auto-decayed or deleted)."""
    return memory_type in DNA_TYPES or zone in DNA_ZONES or bool(is_pinned)


def is_known_type(memory_type: str) -> bool:
    return memory_type in CORE_TYPES or bool(VENDOR_TYPE_RE.match(memory_type))


# --- field helpers --------------------------------------------------------------------------


def _str(
    obj: Mapping[str, Any],
    key: str,
    path: str,
    *,
    required: bool = False,
    max_len: int = MAX_NAME_CHARS,
    default: str = "",
    allow_empty: bool = True,
) -> str:
    value = obj.get(key)
    if value is None:
        if required:
            raise BundleError("field-missing", f"'{key}' is required", path)
        return default
    if not isinstance(value, str):
        raise BundleError("field-type", f"'{key}' must be a string", path)
    if not allow_empty and not value:
        raise BundleError("field-empty", f"'{key}' must not be empty", path)
    if len(value) > max_len:
        raise BundleError("field-too-long", f"'{key}' is longer than {max_len} characters", path)
    check_text(value, f"'{key}'", path)
    return value


def check_text(value: str, what: str, path: str) -> None:
    """Refuse a string a database cannot store: a NUL character or a lone surrogate."""
    if "\x00" in value:
        raise BundleError("field-nul", f"{what} contains a NUL character", path)
    if not value.isascii() and _NOT_TEXT.search(value):
        raise BundleError(
            "field-surrogate", f"{what} contains a lone surrogate (not Unicode text)", path
        )


def _int(
    obj: Mapping[str, Any], key: str, path: str, *, default: int | None = None, minimum: int = 0
) -> int | None:
    value = obj.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise BundleError("field-type", f"'{key}' must be an integer", path)
    if value < minimum or value > MAX_INT:
        raise BundleError("field-range", f"'{key}' must be between {minimum} and 2^63-1", path)
    return value


def _float(
    obj: Mapping[str, Any],
    key: str,
    path: str,
    *,
    default: float,
    low: float | None = None,
    high: float | None = None,
) -> float:
    value = obj.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BundleError("field-type", f"'{key}' must be a number", path)
    try:
        number = float(value)
    except OverflowError as exc:
        raise BundleError("field-range", f"'{key}' is out of range", path) from exc
    if not math.isfinite(number):
        raise BundleError("field-range", f"'{key}' must be finite", path)
    if (low is not None and number < low) or (high is not None and number > high):
        raise BundleError("field-range", f"'{key}' must be between {low} and {high}", path)
    return number


def _bool(obj: Mapping[str, Any], key: str, path: str, *, default: bool = False) -> bool:
    value = obj.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise BundleError("field-type", f"'{key}' must be true or false", path)
    return value


def parse_timestamp(value: Any, key: str, path: str) -> datetime | None:
    """ISO-8601 → aware datetime (UTC when no offset); None stays None."""
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 64:
        raise BundleError("field-type", f"'{key}' must be an ISO-8601 string", path)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise BundleError("timestamp-invalid", f"'{key}' is not ISO-8601: {value!r}", path) from exc
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    # Stored and compared in UTC: an offset that carries it before year 1 or past 9999 is a
    # value databases take and their drivers cannot read back (psycopg, SQLite's converters).
    try:
        parsed.astimezone(UTC)
    except OverflowError as exc:
        raise BundleError(
            "timestamp-range",
            f"'{key}' is outside years 1 to 9999 in UTC: {value!r}",
            path,
        ) from exc
    return parsed


def format_timestamp(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def check_plain_json(value: Any, path: str, *, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Reject values JSON cannot carry (NaN, non-string keys), strings a database cannot store
    (NUL, lone surrogates; keys too) and nesting deeper than max_depth."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > max_depth:
            raise BundleError("json-too-deep", f"nested deeper than {max_depth} levels", path)
        if isinstance(item, str):
            check_text(item, "a string", path)
        elif isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    raise BundleError("json-invalid", "object keys must be strings", path)
                check_text(key, "a key", path)
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise BundleError("json-invalid", "numbers must be finite", path)
        elif item is not None and not isinstance(item, int | bool):
            raise BundleError("json-invalid", f"unsupported value {type(item).__name__}", path)


def _object(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise BundleError("record-not-object", "record must be a JSON object", path)
    return value
