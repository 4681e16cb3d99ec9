"""Export rows into protocol records: the columns read, timestamps and JSON as text, and each
chunk's provenance from its active origins."""

from __future__ import annotations

import logging
from binascii import b2a_base64
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from django.core.exceptions import FieldDoesNotExist
from django.db import connection
from django.db.models import (
    Aggregate,
    Case,
    DateTimeField,
    JSONField,
    Q,
    QuerySet,
    Subquery,
    TextField,
    Value,
    When,
)
from django.db.models.functions import Cast

from bundles.mirrored import PROVENANCE_KEY
from bundles.models import CHUNK_RECORD_COLUMNS
from bundles.provenance import SourceNow, served_from
from bundles.selectors import active_origins
from formats import memoryai as protocol
from memoryadmin.bulk import json_loads, stream_rows

logger = logging.getLogger(__name__)

ITERATOR_CHUNK = 1000
CHUNK_FIELDS = ("id", *CHUNK_RECORD_COLUMNS)
COLUMNS: dict[str, tuple[str, ...]] = {
    "agents": ("data",),
    # origin_provenance: the chunk's active origins (an annotation of _records' chunk rows)
    "chunks": (*CHUNK_FIELDS, "origin_provenance"),
    "entities": ("name", "frequency", "first_seen", "last_seen", "is_dna"),
    "l2_sessions": ("data",),
    "memory_edges": (
        "source_id",
        "target_id",
        "edge_type",
        "weight",
        "co_activation_count",
        "created_at",
        "updated_at",
    ),
    "mood_states": ("data",),
}


def _ts(value: Any) -> str | None:
    """A timestamp as the protocol writes it; PostgreSQL's UTC text is rewritten without parsing.

    A stored value no reader can take (before year 1 or past 9999, written around the import's
    checks) is exported as null with a logged warning: one bad row never fails the export."""
    if value is None:
        return None
    if isinstance(value, str):
        # '2026-01-01 09:00:00.25+00' (TimeZone is UTC on Django's connections)
        if value.endswith("+00") and value[10:11] == " " and value[4:5] == "-":
            clock = value[11:-3]
            if len(clock) > 8:  # fractional seconds, trailing zeros trimmed by PostgreSQL
                clock = clock[:9] + clock[9:].ljust(6, "0")
            return f"{value[:10]}T{clock}Z"
        try:  # SQLite's text ('2026-01-01 09:00:00.250000', UTC), or PostgreSQL's odd ones
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return _unreadable(value)
        value = parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
    try:
        return protocol.format_timestamp(value)
    except (OverflowError, ValueError):
        return _unreadable(value)


def _unreadable(value: Any) -> None:
    logger.warning("export: stored timestamp %r is out of range; exported as null", value)
    return None


class _JsonArray(Aggregate):
    """The JSON array (as text) of a JSON column's values: jsonb_agg / json_group_array."""

    function = "JSON_GROUP_ARRAY"
    template = "%(function)s(JSON(%(expressions)s))"
    output_field = TextField()

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(
            compiler,
            connection,
            function="JSONB_AGG",
            template="CAST(%(function)s(%(expressions)s) AS text)",
            **extra,
        )


def with_origin_provenance(chunks: QuerySet, now: datetime) -> QuerySet:
    """Annotate `origin_provenance`: the provenance of every active origin of the chunk (JSON
    text), read only for chunks that can have one (mirror-made, or holding provenance)."""
    origins = (
        active_origins(now=now)
        .order_by()
        .values("chunk_id")
        .annotate(provenance=_JsonArray("metadata"))
        .values("provenance")
    )
    return chunks.annotate(
        origin_provenance=Case(
            When(
                Q(standalone=False) | Q(metadata__has_key=PROVENANCE_KEY),
                then=Subquery(origins, output_field=TextField()),
            ),
            default=Value(None),
            output_field=TextField(),
        )
    )


def _provenance(metadata: Any, origins: Any, states: dict[int, SourceNow]) -> Any:
    """metadata.memoryadmin as exported: the owner's provenance (stored on the chunk), with
    `origins` naming every active origin and `stale` true only when all of them are stale; a
    source's `retrieved_at` and `stale` from `states` (bundles.provenance.source_states)."""
    found = _json(origins) if origins else None
    if not isinstance(metadata, dict):
        return metadata
    own = metadata.get(PROVENANCE_KEY)
    if isinstance(own, dict) and own.get("origin") == "source":
        metadata = {**metadata, PROVENANCE_KEY: served_from(own, states)}
        own = metadata[PROVENANCE_KEY]
    if not isinstance(found, list):
        return metadata
    found = sorted(
        (served_from(o, states) for o in found if isinstance(o, dict)),
        key=lambda o: str(o.get("ref")),
    )
    if not found:
        return metadata
    top = dict(own) if isinstance(own, dict) else dict(found[0])
    if "stale" in top:  # a repository origin has no staleness: it is never stale
        top["stale"] = all(o.get("stale") is True for o in found)
    top["origins"] = found
    return {**metadata, PROVENANCE_KEY: top}


def _json(value: Any) -> Any:
    """jsonb arrives as text from the raw PostgreSQL cursor, decoded already from Django's."""
    return json_loads(value) if isinstance(value, str) else value


def export_record(
    section: str, row: tuple[Any, ...], model: tuple[str, int], states: dict[int, SourceNow]
) -> Any:
    """One protocol record from a row of `COLUMNS[section]`; `states`: each source's read time
    and staleness (bundles.provenance.source_states)."""
    if section == "chunks":
        (pk, content, digest, memory_type, embedding, embedding_model, embedding_dim, tags, zone,
         importance, is_pinned, decay_score, tier, created_at, accessed_at, valid_until,
         metadata, origins) = row  # fmt: skip
        # §3.5 ties an embedding's length to the manifest's dimension; within it, an embedding
        # of another model (kept with accept_foreign_embeddings) travels with its own model.
        if embedding is not None and embedding_dim == model[1] and embedding_dim > 0:
            encoded: str | None = b2a_base64(embedding, newline=False).decode("ascii")
        else:
            encoded = None
        return {
            "id": pk,
            "content": content,
            "content_hash": digest,
            "memory_type": memory_type,
            "embedding": encoded,
            "embedding_model": embedding_model if encoded else "",
            "tags": _json(tags),
            "zone": zone,
            "importance": importance,
            "is_pinned": is_pinned,
            "decay_score": decay_score,
            "tier": tier,
            "created_at": _ts(created_at),
            "accessed_at": _ts(accessed_at),
            "valid_until": _ts(valid_until),
            "metadata": _provenance(_json(metadata), origins, states),
        }
    if section == "memory_edges":
        source, target, edge_type, weight, co_activations, created_at, updated_at = row
        return {
            "chunk_a": source,
            "chunk_b": target,
            "edge_type": edge_type,
            "weight": weight,
            "co_activation_count": co_activations,
            "created_at": _ts(created_at),
            "updated_at": _ts(updated_at),
        }
    if section == "entities":
        name, frequency, first_seen, last_seen, dna = row
        return {
            "name": name,
            "frequency": frequency,
            "first_seen": _ts(first_seen),
            "last_seen": _ts(last_seen),
            "is_dna": dna,
        }
    return _json(row[0])  # sessions, moods, agents: the validated JSON as imported


def export_rows(queryset: QuerySet, columns: tuple[str, ...]) -> Iterator[tuple[Any, ...]]:
    """Plain tuples through a server-side cursor.

    PostgreSQL: psycopg's own loaders, no Django converters (they were a third of the export):
    jsonb and timestamps stay text, bytea is bytes. Elsewhere: Django's `values_list` iterator.
    """
    # PostgreSQL's binary results: an embedding arrives as its bytes, not as hex text to decode
    # (fetching 100k chunks: 0.82 s -> 0.48 s); jsonb and timestamps are cast to text.
    # Timestamps are text on every database: `_ts` reads them, and a value out of a driver's
    # range (psycopg's, Django's SQLite converter) degrades to null instead of failing.
    postgresql = connection.vendor == "postgresql"
    columns = tuple(_as_fetched(queryset.model, column, postgresql) for column in columns)
    yield from stream_rows(queryset.values_list(*columns), itersize=ITERATOR_CHUNK)


def _as_fetched(model: type[Any], column: str, postgresql: bool) -> Any:
    """The column, or its text for jsonb (PostgreSQL) and timestamps: `_json` and `_ts` read
    the text forms, which the binary protocol would otherwise turn into objects first."""
    try:
        field = model._meta.get_field(column)
    except FieldDoesNotExist:  # an annotation
        return column
    if isinstance(field, DateTimeField) or (postgresql and isinstance(field, JSONField)):
        return Cast(column, output_field=TextField())
    return column
