"""MemoryAI Protocol v1: envelope and record validation, checksums, embeddings. No Django here.

Everything that reads untrusted bundle data raises `BundleError` (and nothing else) when the
data is wrong, so callers can turn it into a 422 or a skipped-record warning.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import re
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

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


# --- hashing and checksums ------------------------------------------------------------------


def content_hash(content: str) -> str:
    """SHA-256 hex of the UTF-8 content exactly as given (no normalisation)."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def canonical_json(value: Any, *, ascii_escaped: bool = False) -> str:
    """Sorted keys, `,`/`:` separators; non-ASCII as UTF-8 unless `ascii_escaped`."""
    return json.dumps(
        value,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=ascii_escaped,
        allow_nan=False,
    )


# orjson writes floats below 1e-4 as 0.0000… or 1.5e-7 where Python writes 1.5e-07; elsewhere
# (sorted keys, escapes, other numbers) its output is the canonical form byte for byte.
_SMALL_FLOAT = re.compile(rb"[0-9]e-[0-9]")


def encode_record(record: Any) -> tuple[bytes, bytes]:
    """(compact JSON to send, its canonical form for the checksum) from one serialisation.

    The canonical form is that of the JSON *as sent*, as a receiver parses it back."""
    try:
        data = orjson.dumps(record, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # integers past 64 bits: the standard library's form on both sides
        try:
            data = canonical_json(record).encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate has no UTF-8 form: its escaped form
            data = _ascii_canonical(record)  # (the record is refused when it is validated)
        except (TypeError, ValueError, RecursionError) as exc:
            raise BundleError("not-serialisable", f"value is not plain JSON: {exc}") from exc
        return data, data
    if b"0.0000" in data or (b"e-" in data and _SMALL_FLOAT.search(data)):
        return data, canonical_json(orjson.loads(data)).encode("utf-8")
    return data, data


def _without_checksum(bundle: Mapping[str, Any]) -> dict[str, Any]:
    body = dict(bundle)
    manifest = body.get("manifest")
    if isinstance(manifest, Mapping):
        body["manifest"] = {k: v for k, v in manifest.items() if k != "checksum"}
    return body


def bundle_checksum(bundle: Mapping[str, Any], *, ascii_escaped: bool = False) -> str:
    """§3.6 as pinned here: SHA-256 hex of the canonical bundle without manifest.checksum."""
    try:
        text = canonical_json(_without_checksum(bundle), ascii_escaped=ascii_escaped)
    except (TypeError, ValueError, RecursionError) as exc:
        raise BundleError("not-serialisable", f"bundle is not plain JSON: {exc}") from exc
    # surrogatepass: a lone surrogate has no UTF-8 form (such records are refused anyway)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class ChecksumResult:
    declared: str | None
    computed: str
    ok: bool
    form: str  # "utf-8", "ascii-escaped", or "" when neither matched


def verify_checksum(bundle: Mapping[str, Any]) -> ChecksumResult:
    """Compare manifest.checksum with the UTF-8 form, then the ASCII-escaped form."""
    manifest = bundle.get("manifest")
    declared = manifest.get("checksum") if isinstance(manifest, Mapping) else None
    declared = declared.lower() if isinstance(declared, str) else None
    computed = bundle_checksum(bundle)
    if declared == computed:
        return ChecksumResult(declared, computed, True, "utf-8")
    if declared is not None and declared == bundle_checksum(bundle, ascii_escaped=True):
        return ChecksumResult(declared, computed, True, "ascii-escaped")
    return ChecksumResult(declared, computed, False, "")


class StreamingChecksum:
    """The §3.6 checksum computed record by record, equal to `bundle_checksum` of the whole.

    `head` is the bundle without its sections; `present` maps each section present in the
    bundle to "array" or "null". Records must be fed in `SECTIONS` order.
    """

    def __init__(
        self, head: Mapping[str, Any], present: Mapping[str, str], *, ascii_form: bool = True
    ) -> None:
        body = _without_checksum(head)
        self._ascii_form = ascii_form  # False: producers need only the UTF-8 form
        self._keys = sorted(set(body) - set(SECTIONS) | set(present))
        self._head = body
        self._present = dict(present)
        self._position = -1  # index into _keys of the last key written
        self._open_section: str | None = None
        self._first_record = True
        self._utf8 = hashlib.sha256()
        # The ASCII-escaped form is the UTF-8 form until the first non-ASCII value: it starts
        # as a copy of the UTF-8 hash at that point, so all-ASCII bundles are hashed once.
        self._ascii: Any = None
        self._write("{")

    def _update(self, data: bytes) -> None:
        """Bytes that are the same in both forms (ASCII)."""
        self._utf8.update(data)
        if self._ascii is not None:
            self._ascii.update(data)

    def _update_forms(self, data: bytes, ascii_data: Callable[[], bytes]) -> None:
        """A canonical value in UTF-8 that is not ASCII, and how to get its escaped form."""
        if self._ascii_form:
            if self._ascii is None:
                self._ascii = self._utf8.copy()
            self._ascii.update(ascii_data())
        self._utf8.update(data)

    def _write(self, text: str) -> None:
        """Structural text (brackets, commas): identical in both forms."""
        self._update(text.encode("ascii"))

    def _write_value(self, value: Any) -> None:
        # orjson's canonical form (see encode_record); values parsed from JSON hold no NaN.
        data = encode_record(value)[1]
        if data.isascii():
            self._update(data)
        else:
            self._update_forms(data, lambda: _ascii_canonical(value))

    def _close_section(self) -> None:
        if self._open_section is not None:
            self._write("]")
            self._open_section = None

    def _advance_to(self, index: int) -> None:
        """Write every key after the current one up to and including `index`."""
        self._close_section()
        while self._position < index:
            self._position += 1
            key = self._keys[self._position]
            self._write("," if self._position else "")
            self._write_value(key)
            self._write(":")
            if key in SECTIONS:
                if self._present[key] == "null":
                    self._write("null")
                elif self._position == index:
                    self._write("[")
                    self._open_section = key
                    self._first_record = True
                else:
                    self._write("[]")
            else:
                self._write_value(self._head[key])

    def _enter(self, section: str) -> None:
        if self._open_section != section:
            index = self._keys.index(section)
            if index <= self._position:
                raise BundleError("section-order", f"{section} fed out of order")
            self._advance_to(index)
        if not self._first_record:
            self._update(b",")
        self._first_record = False

    def feed(self, section: str, record: Any) -> None:
        self._enter(section)
        self._write_value(record)

    def feed_encoded(self, section: str, data: bytes) -> None:
        """A record as `encode_record(record)[1]` gave it (what `feed` would hash)."""
        self._enter(section)
        if data.isascii():
            self._update(data)
        else:
            self._update_forms(data, lambda: _ascii_canonical(json.loads(data)))

    def feed_encoded_lines(self, section: str, lines: bytes) -> None:
        """Records as `feed_encoded` takes them, each followed by a newline (canonical JSON
        holds none), e.g. spooled while the sections arrived in another order than the
        checksum's: hashed a block at a time."""
        if not lines:
            return
        if not lines.isascii():
            for line in lines[:-1].split(b"\n"):
                self.feed_encoded(section, line)
            return
        self._enter(section)
        self._update(lines[:-1].replace(b"\n", b","))

    def feed_canonical(self, section: str, data: bytes) -> None:
        """A record already in canonical UTF-8 form (`canonical_json(record).encode()`).

        Only for producers: a checksum built with `ascii_form=False` (one hash, not two)."""
        if self._ascii_form:
            raise BundleError("checksum-form", "feed_canonical needs ascii_form=False")
        self._enter(section)
        self._utf8.update(data)

    def hexdigests(self) -> tuple[str, str]:
        """(UTF-8 form, ASCII-escaped form); call once, after the last record."""
        self._advance_to(len(self._keys) - 1)
        self._close_section()
        self._write("}")
        utf8 = self._utf8.hexdigest()
        return utf8, (self._ascii.hexdigest() if self._ascii is not None else utf8)


def _ascii_canonical(value: Any) -> bytes:
    try:
        return canonical_json(value, ascii_escaped=True).encode("ascii")
    except (TypeError, ValueError, RecursionError) as exc:
        raise BundleError("not-serialisable", f"value is not plain JSON: {exc}") from exc


# --- embeddings -----------------------------------------------------------------------------


def encode_embedding(vector: Iterable[float]) -> str:

    values = list(vector)
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode("ascii")


def decode_embedding(text: str) -> tuple[float, ...]:

    raw = base64.b64decode(text, validate=True)
    return struct.unpack(f"<{len(raw) // 4}f", raw)


def embedding_bytes(value: Any, *, dim: int, path: str) -> bytes | None:
    """Decode a §3.5 embedding to little-endian float32 bytes; None stays None."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise BundleError("embedding-invalid", "embedding must be a base64 string or null", path)
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BundleError(
            "embedding-base64", f"embedding is not valid base64 ({exc})", path
        ) from exc
    if dim <= 0:
        raise BundleError(
            "embedding-dim", "embedding given but manifest.embedding_dim is not positive", path
        )
    if len(raw) != dim * 4:
        raise BundleError(
            "embedding-length",
            f"embedding decodes to {len(raw)} bytes, expected embedding_dim {dim} x 4 = {dim * 4}",
            path,
        )
    return raw


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


# --- envelope -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Manifest:
    scope: str
    since: datetime | None
    embedding_model: str
    embedding_dim: int
    counts: dict[str, int]
    checksum: str | None
    tenant_id: Any = None
    tenant_name: str | None = None


@dataclass(frozen=True)
class Envelope:
    format: str
    version: int
    generator: str
    exported_at: str | None
    manifest: Manifest
    # Which sections the bundle carries: "array" or "null" (absent sections are left out).
    sections: dict[str, str] = field(default_factory=dict)


def validate_envelope(bundle: Any) -> Envelope:
    """§3.1. Sections may be placeholders (an empty list) when records are streamed apart."""
    if not isinstance(bundle, dict):
        raise BundleError("not-object", "a bundle must be a JSON object")
    if "format" not in bundle:
        raise BundleError("format-missing", "'format' is required", "format")
    if bundle["format"] != FORMAT:
        raise BundleError(
            "format-invalid", f"'format' must be {FORMAT!r}, not {bundle['format']!r}", "format"
        )
    version = bundle.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise BundleError("version-invalid", "'version' must be an integer >= 1", "version")
    if version > MAX_VERSION:
        raise BundleError(
            "version-unsupported",
            f"bundle version {version} is newer than the highest this server reads ({MAX_VERSION})",
            "version",
        )
    raw = bundle.get("manifest")
    if not isinstance(raw, dict):
        raise BundleError("manifest-missing", "'manifest' must be an object", "manifest")
    for key, value in bundle.items():  # every envelope string, keys and nested values too
        if key not in SECTIONS:  # the key is the error's path: escaped when it is not text
            path = key if key.isascii() and "\x00" not in key else ascii(key)
            check_plain_json({key: value}, path, max_depth=MAX_JSON_DEPTH + 1)
    scope = raw.get("scope")
    if scope not in SCOPES:
        raise BundleError(
            "manifest-invalid", f"'scope' must be one of {', '.join(SCOPES)}", "manifest.scope"
        )
    if "embedding_model" not in raw or "embedding_dim" not in raw:
        raise BundleError(
            "manifest-invalid",
            "'embedding_model' and 'embedding_dim' are required",
            "manifest",
        )
    model = _str(raw, "embedding_model", "manifest", max_len=MAX_MODEL_CHARS)
    dim = _int(raw, "embedding_dim", "manifest", default=0)
    if dim is None or dim > MAX_EMBEDDING_DIM:
        raise BundleError("manifest-invalid", "'embedding_dim' is out of range", "manifest")
    since = parse_timestamp(raw.get("since"), "since", "manifest")
    counts_raw = raw.get("counts") or {}
    if not isinstance(counts_raw, dict):
        raise BundleError("manifest-invalid", "'counts' must be an object", "manifest.counts")
    counts = {
        k: v
        for k, v in counts_raw.items()
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0
    }
    checksum = raw.get("checksum")
    if checksum is not None and not isinstance(checksum, str):
        raise BundleError("manifest-invalid", "'checksum' must be a string", "manifest.checksum")
    for key in ("generator", "exported_at"):
        if bundle.get(key) is not None and not isinstance(bundle[key], str):
            raise BundleError("field-type", f"'{key}' must be a string", key)
    sections: dict[str, str] = {}
    for name in SECTIONS:
        if name not in bundle:
            continue
        value = bundle[name]
        if value is None:
            sections[name] = "null"
        elif isinstance(value, list):
            sections[name] = "array"
        else:
            raise BundleError("section-invalid", f"'{name}' must be an array", name)
    tenant_name = raw.get("tenant_name")
    return Envelope(
        format=FORMAT,
        version=version,
        generator=bundle.get("generator") or "",
        exported_at=bundle.get("exported_at"),
        manifest=Manifest(
            scope=scope,
            since=since,
            embedding_model=model,
            embedding_dim=dim,
            counts=counts,
            checksum=checksum.lower() if isinstance(checksum, str) else None,
            tenant_id=raw.get("tenant_id"),
            tenant_name=tenant_name if isinstance(tenant_name, str) else None,
        ),
        sections=sections,
    )


# --- records --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkRecord:
    id: int | None
    content: str
    content_hash: str
    declared_hash: str | None  # what the bundle said, when it differed from the true hash
    memory_type: str
    embedding: bytes | None
    embedding_model: str
    tags: list[str]
    zone: str
    importance: float
    is_pinned: bool
    decay_score: float
    tier: str
    created_at: datetime | None
    accessed_at: datetime | None
    valid_until: datetime | None
    metadata: dict[str, Any]

    @property
    def is_dna(self) -> bool:
        return is_dna(self.memory_type, self.zone, self.is_pinned)


def _embedding_shape(value: Any, *, dim: int, path: str) -> None:
    """What `embedding_bytes` checks, short of decoding: type, and length for `dim` floats."""
    if value is None:
        return
    if not isinstance(value, str):
        raise BundleError("embedding-invalid", "embedding must be a base64 string or null", path)
    if dim <= 0:
        raise BundleError(
            "embedding-dim", "embedding given but manifest.embedding_dim is not positive", path
        )
    if len(value) != 4 * -(-dim * 4 // 3):
        raise BundleError(
            "embedding-length", f"embedding is not the base64 of embedding_dim {dim} floats", path
        )


def validate_chunk(
    value: Any,
    *,
    embedding_dim: int,
    path: str = "chunk",
    decode_embedding: bool = True,
    known_hash: str | None = None,
) -> ChunkRecord:
    """`decode_embedding=False` (a chunk the importer already holds): the embedding's type and
    length are checked, not its base64, and the record carries none."""
    obj = _object(value, path)
    raw_id = obj.get("id")
    record_id = _int(obj, "id", path, minimum=-MAX_INT) if raw_id is not None else None
    content = _str(obj, "content", path, required=True, max_len=MAX_CONTENT_CHARS)
    memory_type = _str(obj, "memory_type", path, required=True, max_len=64, allow_empty=False)
    if not is_known_type(memory_type):
        raise BundleError(
            "memory-type-unknown",
            f"memory_type {memory_type!r} is neither a core type nor an x_ vendor type",
            path,
        )
    true_hash = known_hash or content_hash(content)
    declared = obj.get("content_hash")
    if declared is not None and not isinstance(declared, str):
        raise BundleError("field-type", "'content_hash' must be a string", path)
    if isinstance(declared, str):
        check_text(declared, "'content_hash'", path)
        declared = declared.lower().removeprefix("sha256:")
    zone = _str(obj, "zone", path, default="standard", max_len=16) or "standard"
    if zone not in ZONES:
        raise BundleError("zone-invalid", f"zone must be one of {', '.join(ZONES)}", path)
    tier = _str(obj, "tier", path, default="hot", max_len=8) or "hot"
    if tier not in TIERS:
        raise BundleError("tier-invalid", f"tier must be one of {', '.join(TIERS)}", path)
    tags = obj.get("tags")
    if tags is None:
        tags = []
    if (
        not isinstance(tags, list)
        or len(tags) > MAX_TAGS
        or not all(isinstance(t, str) and len(t) <= MAX_NAME_CHARS for t in tags)
    ):
        raise BundleError("tags-invalid", "tags must be a list of short strings", path)
    for tag in tags:
        check_text(tag, "a tag", path)
    metadata = obj.get("metadata")
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise BundleError("metadata-invalid", "metadata must be an object", path)
    check_plain_json(metadata, path + ".metadata")
    if decode_embedding:
        embedding = embedding_bytes(obj.get("embedding"), dim=embedding_dim, path=path)
    else:
        _embedding_shape(obj.get("embedding"), dim=embedding_dim, path=path)
        embedding = None
    return ChunkRecord(
        id=record_id,
        content=content,
        content_hash=true_hash,
        declared_hash=declared if declared not in (None, true_hash) else None,
        memory_type=memory_type,
        embedding=embedding,
        embedding_model=_str(obj, "embedding_model", path, max_len=MAX_MODEL_CHARS),
        tags=list(tags),
        zone=zone,
        importance=_float(obj, "importance", path, default=0.5, low=0.0, high=1.0),
        is_pinned=_bool(obj, "is_pinned", path),
        decay_score=_float(obj, "decay_score", path, default=1.0, low=0.0, high=1.0),
        tier=tier,
        created_at=parse_timestamp(obj.get("created_at"), "created_at", path),
        accessed_at=parse_timestamp(obj.get("accessed_at"), "accessed_at", path),
        valid_until=parse_timestamp(obj.get("valid_until"), "valid_until", path),
        metadata=metadata,
    )


@dataclass(frozen=True)
class EdgeRecord:
    chunk_a: int
    chunk_b: int
    edge_type: str
    weight: float
    co_activation_count: int
    created_at: datetime | None
    updated_at: datetime | None


def validate_edge(value: Any, *, path: str = "memory_edge") -> EdgeRecord:
    obj = _object(value, path)
    ends = []
    for key in ("chunk_a", "chunk_b"):
        end = _int(obj, key, path, minimum=-MAX_INT)
        if end is None:
            raise BundleError("field-missing", f"'{key}' is required", path)
        ends.append(end)
    return EdgeRecord(
        chunk_a=ends[0],
        chunk_b=ends[1],
        edge_type=_str(obj, "edge_type", path, default="co_activation", max_len=64)
        or "co_activation",
        weight=_float(obj, "weight", path, default=0.0, low=-1e12, high=1e12),
        co_activation_count=_int(obj, "co_activation_count", path, default=0) or 0,
        created_at=parse_timestamp(obj.get("created_at"), "created_at", path),
        updated_at=parse_timestamp(obj.get("updated_at"), "updated_at", path),
    )


@dataclass(frozen=True)
class EntityRecord:
    name: str
    frequency: int
    first_seen: datetime | None
    last_seen: datetime | None
    is_dna: bool


def validate_entity(value: Any, *, path: str = "entity") -> EntityRecord:
    obj = _object(value, path)
    return EntityRecord(
        name=_str(obj, "name", path, required=True, allow_empty=False),
        frequency=_int(obj, "frequency", path, default=1) or 0,
        first_seen=parse_timestamp(obj.get("first_seen"), "first_seen", path),
        last_seen=parse_timestamp(obj.get("last_seen"), "last_seen", path),
        is_dna=_bool(obj, "is_dna", path),
    )


@dataclass(frozen=True)
class KeyedRecord:
    """An L2 session, mood state or agent: opaque JSON plus the natural key it is stored by."""

    key: str
    data: dict[str, Any]


def _key_from(obj: Mapping[str, Any], fields: tuple[str, ...], path: str) -> str | None:
    for name in fields:
        value = obj.get(name)
        if isinstance(value, str) and value:
            if len(value) > MAX_KEY_CHARS:
                raise BundleError("field-too-long", f"'{name}' is too long for a key", path)
            return f"{name}:{value}"
        if isinstance(value, int) and not isinstance(value, bool):
            return f"{name}:{value}"
    return None


def record_hash(obj: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical record without its producer-local `id`."""
    return hashlib.sha256(
        canonical_json({k: v for k, v in obj.items() if k != "id"}).encode("utf-8")
    ).hexdigest()


def validate_keyed(section: str, value: Any, *, path: str | None = None) -> KeyedRecord:
    """Natural keys: sessions by record hash; moods by key|name|hash; agents by name|id."""
    path = path or section
    obj = _object(value, path)
    check_plain_json(obj, path)
    if section == "l2_sessions":
        key = "sha256:" + record_hash(obj)
    elif section == "mood_states":
        key = _key_from(obj, ("key", "name"), path) or "sha256:" + record_hash(obj)
    elif section == "agents":
        key = _key_from(obj, ("name", "id"), path) or ""
        if not key:
            raise BundleError("agent-key-missing", "an agent needs a 'name' or an 'id'", path)
    else:  # pragma: no cover - programming error
        raise BundleError("section-unknown", f"no keyed section {section!r}", path)
    return KeyedRecord(key=key, data=dict(obj))


def validate_record(section: str, value: Any, *, embedding_dim: int = 0, path: str = "") -> Any:
    """Validate one streamed record of `section`; raises BundleError."""
    path = path or section
    if section == "chunks":
        return validate_chunk(value, embedding_dim=embedding_dim, path=path)
    if section == "memory_edges":
        return validate_edge(value, path=path)
    if section == "entities":
        return validate_entity(value, path=path)
    if section in ("l2_sessions", "mood_states", "agents"):
        return validate_keyed(section, value, path=path)
    raise BundleError("section-unknown", f"unknown section {section!r}", path)


@dataclass
class BundleCheck:
    """The result of validating a whole in-memory bundle."""

    envelope: Envelope
    records: dict[str, list[Any]]
    errors: list[BundleError]
    checksum: ChecksumResult


def iter_records(bundle: Mapping[str, Any], section: str) -> Iterator[Any]:
    value = bundle.get(section)
    return iter(value) if isinstance(value, list) else iter(())


def validate_bundle(bundle: Any) -> BundleCheck:
    """Validate envelope, every record, and the checksum. Record errors are collected."""
    envelope = validate_envelope(bundle)
    records: dict[str, list[Any]] = {}
    errors: list[BundleError] = []
    for section in SECTIONS:
        valid = records.setdefault(section, [])
        for index, raw in enumerate(iter_records(bundle, section)):
            try:
                valid.append(
                    validate_record(
                        section,
                        raw,
                        embedding_dim=envelope.manifest.embedding_dim,
                        path=f"{section}[{index}]",
                    )
                )
            except BundleError as exc:
                errors.append(exc)
    return BundleCheck(envelope, records, errors, verify_checksum(bundle))


def parse_json(data: bytes | str) -> Any:
    """Strict JSON parse (no NaN/Infinity); BundleError("malformed-json") on any failure."""
    try:
        return json.loads(data, parse_constant=_reject_constant)
    except BundleError:
        raise
    except (ValueError, RecursionError, TypeError) as exc:
        raise BundleError("malformed-json", f"not valid JSON: {exc}") from exc


def _reject_constant(name: str) -> Any:
    raise BundleError("malformed-json", f"{name} is not valid JSON")


# --- untrusted content ----------------------------------------------------------------------

_INJECTION_PATTERNS = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\b(ignore|disregard|forget)\b.{0,40}\b(previous|prior|above|earlier|all)\b.{0,40}"
        r"\b(instructions?|prompts?|rules|directions)\b",
        r"\byou are now\b.{0,60}\b(unrestricted|jailbroken|dan|developer mode|evil)\b",
        r"\b(reveal|print|show|output|leak)\b.{0,40}\bsystem prompt\b",
        r"<\|(im_start|im_end|system|endoftext)\|>",
        r"\[/?INST\]|<<SYS>>",
        r"\bdo anything now\b",
        r"^\s*(system|assistant)\s*:",
        r"\bnew instructions?\s*:",
    )
]


# Every pattern above needs one of these words (lower case): ASCII text without any of them
# cannot match, and most content is dismissed by a few substring tests instead of 8 regexes.
_INJECTION_WORDS = (
    "ignore",
    "disregard",
    "forget",
    "you are now",
    "system",
    "assistant",
    "<|",
    "inst]",
    "<<sys>>",
    "do anything now",
    "new instruction",
)


def prompt_injection_hint(content: str) -> str | None:
    """A short reason when content looks like an attempt to steer an LLM, else None."""
    sample = content[:20_000]
    if sample.isascii():  # non-ASCII case folding (the long s matches 's') is the regexes' job
        lowered = sample.lower()
        if not any(word in lowered for word in _INJECTION_WORDS):
            return None
    for pattern in _INJECTION_PATTERNS:
        match = pattern.search(sample)
        if match:
            return f"matches {match.group(0)[:60]!r}"
    return None


def build_bundle(
    *,
    manifest: Mapping[str, Any],
    sections: Mapping[str, list[Any]],
    exported_at: str,
    generator: str = GENERATOR,
) -> dict[str, Any]:
    """A complete bundle with accurate counts and its checksum (Level 1 producer)."""
    bundle: dict[str, Any] = {
        "format": FORMAT,
        "version": MAX_VERSION,
        "generator": generator,
        "exported_at": exported_at,
        "manifest": {
            **manifest,
            "counts": {name: len(sections.get(name, [])) for name in SECTIONS},
        },
    }
    for name in SECTIONS:
        bundle[name] = list(sections.get(name, []))
    bundle["manifest"]["checksum"] = bundle_checksum(bundle)
    return bundle
