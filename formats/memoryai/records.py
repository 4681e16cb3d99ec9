"""MemoryAI Protocol v1 records: chunks, edges, entities and keyed records (sessions, moods,
agents), their `validate_*` functions, and embeddings. No Django here."""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from formats.memoryai.checksum import canonical_json, content_hash
from formats.memoryai.fields import (
    MAX_CONTENT_CHARS,
    MAX_INT,
    MAX_KEY_CHARS,
    MAX_MODEL_CHARS,
    MAX_NAME_CHARS,
    MAX_TAGS,
    TIERS,
    ZONES,
    BundleError,
    _bool,
    _float,
    _int,
    _object,
    _str,
    check_plain_json,
    check_text,
    is_dna,
    is_known_type,
    parse_timestamp,
)

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
    """Field by field; an edge whose fields all have their plain form (as exports write them)
    is checked by the same rules in one expression first."""
    if type(value) is dict:
        a, b = value.get("chunk_a"), value.get("chunk_b")
        edge_type, weight = value.get("edge_type"), value.get("weight")
        count = value.get("co_activation_count")
        if (
            type(a) is int
            and type(b) is int
            and -MAX_INT <= a <= MAX_INT
            and -MAX_INT <= b <= MAX_INT
            and type(edge_type) is str
            and 0 < len(edge_type) <= 64
            and edge_type.isascii()
            and "\x00" not in edge_type
            and (type(weight) is float or type(weight) is int)
            and -1e12 <= weight <= 1e12  # NaN fails it: the full check says why
            and type(count) is int
            and 0 <= count <= MAX_INT
        ):
            return EdgeRecord(
                a,
                b,
                edge_type,
                float(weight),
                count,
                parse_timestamp(value.get("created_at"), "created_at", path),
                parse_timestamp(value.get("updated_at"), "updated_at", path),
            )
    return _validate_edge_fields(value, path)


def _validate_edge_fields(value: Any, path: str) -> EdgeRecord:
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
