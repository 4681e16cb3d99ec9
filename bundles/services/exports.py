"""Export a team's brain as a bundle, whole (JSON) or streamed (NDJSON, flat memory)."""

from __future__ import annotations

import logging
from base64 import b64encode
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
from django.core.exceptions import FieldDoesNotExist
from django.db import connection, transaction
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
from django.utils import timezone

from bundles.mirror import PROVENANCE_KEY
from bundles.models import (
    CHUNK_RECORD_COLUMNS,
    Agent,
    BrainSettings,
    Chunk,
    Entity,
    L2Session,
    MemoryEdge,
    MoodState,
)
from bundles.readlog import id_summary
from bundles.selectors import active_origins, served_q
from formats import memoryai as protocol
from formats.memoryai import SECTIONS
from memoryadmin.audit import Actor, audit_record
from memoryadmin.bulk import json_loads, stream_rows
from memoryadmin.models import Team

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
FLUSH_BYTES = 256 * 1024  # yield the body in pieces of about this size


@dataclass(frozen=True)
class ExportRequest:
    scope: str = "full"
    since: datetime | None = None

    def __post_init__(self) -> None:
        if self.scope not in protocol.SCOPES:
            raise protocol.BundleError(
                "scope-invalid", f"scope must be one of {', '.join(protocol.SCOPES)}", "scope"
            )
        if self.scope == "since" and self.since is None:
            raise protocol.BundleError("since-missing", "scope 'since' needs 'since'", "since")


def _querysets(
    team: Team, request: ExportRequest, now: datetime | None = None
) -> dict[str, QuerySet]:
    """What each scope exports. Edges only when both ends are exported chunks.

    Chunks are the *served* ones (bundles.selectors.served_q): not deleted, and imported/entered
    or backed by an active mirror origin (one indexed EXISTS per chunk).
    """
    now = now or timezone.now()
    chunks = Chunk.objects.filter(team=team).filter(served_q(now=now))
    edges = (
        MemoryEdge.objects.filter(team=team)
        .filter(served_q(pk="source_id", prefix="source__", now=now))
        .filter(served_q(pk="target_id", prefix="target__", now=now))
    )
    entities = Entity.objects.filter(team=team)
    keyed: dict[str, QuerySet] = {
        "l2_sessions": L2Session.objects.filter(team=team),
        "mood_states": MoodState.objects.filter(team=team),
        "agents": Agent.objects.filter(team=team),
    }
    if request.scope == "dna_only":
        chunks = chunks.filter(is_dna=True)
        edges = edges.filter(source__is_dna=True, target__is_dna=True)
        entities = entities.filter(is_dna=True)
        keyed = {name: qs.none() for name, qs in keyed.items()}
    elif request.scope == "since":
        since = request.since
        chunks = chunks.filter(updated_at__gte=since)
        edges = edges.filter(
            updated_at__gte=since, source__updated_at__gte=since, target__updated_at__gte=since
        )
        entities = entities.filter(updated_at__gte=since)
        keyed = {name: qs.filter(updated_at__gte=since) for name, qs in keyed.items()}
    return {
        "agents": keyed["agents"],
        "chunks": chunks,
        "entities": entities,
        "l2_sessions": keyed["l2_sessions"],
        "memory_edges": edges,
        "mood_states": keyed["mood_states"],
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


def _with_origin_provenance(chunks: QuerySet, now: datetime) -> QuerySet:
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


def _provenance(metadata: Any, origins: Any) -> Any:
    """metadata.memoryadmin as exported: the owner's provenance (stored on the chunk), with
    `origins` naming every active origin and `stale` true only when all of them are stale."""
    found = _json(origins) if origins else None
    if not isinstance(found, list):
        return metadata
    found = sorted((o for o in found if isinstance(o, dict)), key=lambda o: str(o.get("ref")))
    if not found or not isinstance(metadata, dict):
        return metadata
    own = metadata.get(PROVENANCE_KEY)
    top = dict(own) if isinstance(own, dict) else dict(found[0])
    if "stale" in top:  # a repository origin has no staleness: it is never stale
        top["stale"] = all(o.get("stale") is True for o in found)
    top["origins"] = found
    return {**metadata, PROVENANCE_KEY: top}


def _json(value: Any) -> Any:
    """jsonb arrives as text from the raw PostgreSQL cursor, decoded already from Django's."""
    return json_loads(value) if isinstance(value, str) else value


def _record(section: str, row: tuple[Any, ...], model: tuple[str, int]) -> Any:
    """One protocol record from a row of `COLUMNS[section]`."""
    if section == "chunks":
        (pk, content, digest, memory_type, embedding, embedding_model, embedding_dim, tags, zone,
         importance, is_pinned, decay_score, tier, created_at, accessed_at, valid_until,
         metadata, origins) = row  # fmt: skip
        # §3.5 ties an embedding's length to the manifest's dimension; within it, an embedding
        # of another model (kept with accept_foreign_embeddings) travels with its own model.
        if embedding is not None and embedding_dim == model[1] and embedding_dim > 0:
            encoded: str | None = b64encode(embedding).decode("ascii")
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
            "metadata": _provenance(_json(metadata), origins),
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


def _rows(queryset: QuerySet, columns: tuple[str, ...]) -> Iterator[tuple[Any, ...]]:
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


def _model_of(team: Team) -> tuple[str, int]:
    settings = BrainSettings.objects.filter(team=team).first()
    return (settings.embedding_model, settings.embedding_dim) if settings else ("", 0)


def _head(team: Team, request: ExportRequest, counts: dict[str, int]) -> dict[str, Any]:
    model, dim = _model_of(team)
    return {
        "format": protocol.FORMAT,
        "version": protocol.MAX_VERSION,
        "generator": protocol.GENERATOR,
        "exported_at": protocol.format_timestamp(timezone.now()),
        "manifest": {
            "tenant_id": None,  # teams have no UUID; §3.8 makes it informational anyway
            "tenant_name": team.name,
            "tenant_plan": None,
            "scope": request.scope,
            "since": protocol.format_timestamp(request.since) if request.scope == "since" else None,
            "embedding_model": model,
            "embedding_dim": dim,
            "counts": counts,
        },
    }


def _audit_export(  # type: ignore[no-untyped-def]
    *, team: Team, actor: Actor, request: ExportRequest, counts: dict, kind: str, chunk_ids=None
):
    """The read log: who exported which chunks (id ranges + digest, never content)."""
    if chunk_ids is None:
        chunk_ids = _querysets(team, request)["chunks"].values_list("id", flat=True)
        chunk_ids = chunk_ids.order_by().iterator(chunk_size=10_000)
    audit_record(
        actor=actor,
        action="bundle.export",
        team=team,
        target_type="bundles.brain",
        target_id=team.pk,
        summary=(
            f"Exported the brain ({kind}, scope {request.scope}): {counts.get('chunks', 0)} "
            f"chunks, {counts.get('memory_edges', 0)} edges, {counts.get('entities', 0)} entities"
        ),
        data={
            "kind": kind,
            "scope": request.scope,
            "since": protocol.format_timestamp(request.since),
            "counts": counts,
            "chunks": id_summary(chunk_ids),
        },
    )


@contextmanager
def _snapshot() -> Iterator[None]:
    """One consistent view for counts and rows: REPEATABLE READ on PostgreSQL.

    SQLite: Django's transactions there are IMMEDIATE (they would block writers for the whole
    download), so a plain deferred read transaction, a snapshot under WAL, is opened by hand.
    """
    if connection.in_atomic_block and connection.vendor != "postgresql":
        yield  # already inside a transaction: it is the snapshot
        return
    if connection.vendor == "sqlite":
        connection.ensure_connection()
        with connection.cursor() as cursor:
            cursor.execute("BEGIN DEFERRED")
        try:
            yield
        finally:
            with connection.cursor() as cursor:
                cursor.execute("COMMIT")  # read-only: nothing to keep or lose
        return
    if connection.vendor != "postgresql":
        yield
        return
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost:  # SET TRANSACTION must be the transaction's first statement
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield


def export_counts(team: Team, request: ExportRequest) -> dict[str, int]:
    return {name: qs.count() for name, qs in _querysets(team, request).items()}


def bundle_export_json(*, team: Team, actor: Actor, request: ExportRequest) -> Iterator[bytes]:
    """Audit now, then return the bundle as one JSON document written piece by piece.

    The manifest (counts, checksum) is the document's last key (§3.1 leaves key order free), so
    the checksum is computed while the records go out and memory stays flat."""
    _audit_now(team=team, actor=actor, request=request, kind="json")
    return _json_document(team, request)


def bundle_export_stream(*, team: Team, actor: Actor, request: ExportRequest) -> Iterator[bytes]:
    """Audit now, then return the NDJSON lines: header, one line per record, trailer."""
    _audit_now(team=team, actor=actor, request=request, kind="stream")
    return _stream_lines(team, request)


def _audit_now(*, team: Team, actor: Actor, request: ExportRequest, kind: str) -> None:
    """Before the first byte: the read is logged even when the client stops reading."""
    with transaction.atomic():
        _audit_export(
            team=team,
            actor=actor,
            request=request,
            counts=export_counts(team, request),
            kind=kind,
        )


class _Drift(RuntimeError):
    """Rows differed from the counts taken in the same snapshot: stop rather than lie."""


def _records(team: Team, request: ExportRequest) -> Iterator[tuple[str, Any]]:
    """Inside one snapshot: ("head", head), then per section ("section", name) and
    (name, record JSON) per record, then ("end", checksum). Counts, rows and checksum agree or
    this raises _Drift (the client gets a cut-off body, never a wrong one)."""
    now = timezone.now()
    querysets = _querysets(team, request, now)  # one `now` for counts and rows
    counts = {name: qs.count() for name, qs in querysets.items()}
    querysets["chunks"] = _with_origin_provenance(querysets["chunks"], now)
    head = _head(team, request, counts)
    model = (head["manifest"]["embedding_model"], head["manifest"]["embedding_dim"])
    yield "head", head
    checksum = protocol.StreamingChecksum(head, dict.fromkeys(SECTIONS, "array"), ascii_form=False)
    encode = protocol.encode_record
    for name in SECTIONS:
        yield "section", name
        sent = 0
        for row in _rows(querysets[name].order_by("id"), COLUMNS[name]):
            data, canonical = encode(_record(name, row, model))
            checksum.feed_canonical(name, canonical)
            sent += 1
            yield name, data
        if sent != counts[name]:
            raise _Drift(f"{name}: counted {counts[name]}, read {sent}")
    yield "end", checksum.hexdigests()[0]


def _json_document(team: Team, request: ExportRequest) -> Iterator[bytes]:
    with _snapshot():
        buffer = bytearray()
        manifest: dict[str, Any] = {}
        first = True
        for kind, value in _records(team, request):
            if kind == "head":
                manifest = value["manifest"]
                top = {k: v for k, v in value.items() if k != "manifest"}
                buffer += orjson.dumps(top)[:-1]  # '{"format":…,"exported_at":…' left open
                continue
            if kind == "section":  # close the previous array (the first follows the head)
                closing = b"," if value == SECTIONS[0] else b"],"
                buffer += b'%s"%s":[' % (closing, value.encode("ascii"))
                first = True
                continue
            if kind == "end":
                manifest = {**manifest, "checksum": value}
                buffer += b'],"manifest":' + orjson.dumps(manifest) + b"}"
                break
            if not first:
                buffer += b","
            first = False
            buffer += value
            if len(buffer) >= FLUSH_BYTES:
                yield bytes(buffer)
                buffer.clear()
        yield bytes(buffer)


def _stream_lines(team: Team, request: ExportRequest) -> Iterator[bytes]:
    with _snapshot():
        buffer = bytearray()
        counts = dict.fromkeys(SECTIONS, 0)
        declared: dict[str, int] = {}
        prefixes = {name: b'{"kind":"%s","record":' % name.encode() for name in SECTIONS}
        for kind, value in _records(team, request):
            if kind == "head":
                declared = value["manifest"]["counts"]
                buffer += orjson.dumps({"kind": "header", **value}) + b"\n"
            elif kind == "end":
                trailer = {
                    "kind": "trailer",
                    "counts": counts,
                    "counts_match": counts == declared,
                    "checksum": value,
                }
                buffer += orjson.dumps(trailer) + b"\n"
            elif kind != "section":
                counts[kind] += 1
                buffer += prefixes[kind] + value + b"}\n"
            if len(buffer) >= FLUSH_BYTES:
                yield bytes(buffer)
                buffer.clear()
        yield bytes(buffer)
