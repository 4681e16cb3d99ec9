"""Export a team's brain as a bundle, whole (JSON) or streamed (NDJSON, flat memory)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from bundles.models import (
    Agent,
    BrainSettings,
    Chunk,
    Entity,
    L2Session,
    MemoryEdge,
    MoodState,
)
from bundles.provenance import source_states
from bundles.readlog import id_summary
from bundles.selectors import served_q
from bundles.services.export_rows import COLUMNS, export_record, export_rows, with_origin_provenance
from formats import memoryai as protocol
from formats.memoryai import SECTIONS
from memoryadmin.audit import Actor, audit_record
from memoryadmin.bulk import stream_rows
from memoryadmin.models import Team

logger = logging.getLogger(__name__)

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


def _audit_export(
    *, team: Team, actor: Actor, request: ExportRequest, counts: dict[str, int], kind: str
) -> None:
    """The read log: who exported which chunks (id ranges + digest, never content).

    The chunks' count is that of the ids summarised (one pass over the served chunks, not a
    count and then the ids)."""
    chunk_ids = _querysets(team, request)["chunks"].order_by().values_list("id")
    chunks = id_summary(pk for (pk,) in stream_rows(chunk_ids, itersize=10_000))
    counts = {**counts, "chunks": chunks["count"]}
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
            "chunks": chunks,
        },
    )


def _no_jit() -> None:
    """PostgreSQL: no JIT compilation for this transaction's queries. The export's scans are
    planned far above `jit_above_cost` (the served filter's per-chunk EXISTS is costed as if
    it ran for every row), and compiling them cost 0.3 to 0.7 s per query, more than the
    100k-chunk count itself; a one-pass scan never earns that back. SET LOCAL: it ends with
    the transaction."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL jit = off")


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
        _no_jit()
        yield


def export_counts(
    team: Team, request: ExportRequest, *, without: tuple[str, ...] = ()
) -> dict[str, int]:
    return {
        name: qs.count() for name, qs in _querysets(team, request).items() if name not in without
    }


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
        _no_jit()
        _audit_export(
            team=team,
            actor=actor,
            request=request,
            counts=export_counts(team, request, without=("chunks",)),
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
    querysets["chunks"] = with_origin_provenance(querysets["chunks"], now)
    states = source_states(team)  # read times and staleness, in the same snapshot as the rows
    head = _head(team, request, counts)
    model = (head["manifest"]["embedding_model"], head["manifest"]["embedding_dim"])
    yield "head", head
    checksum = protocol.StreamingChecksum(head, dict.fromkeys(SECTIONS, "array"), ascii_form=False)
    encode = protocol.encode_record
    for name in SECTIONS:
        yield "section", name
        sent = 0
        for row in export_rows(querysets[name].order_by("id"), COLUMNS[name]):
            data, canonical = encode(export_record(name, row, model, states))
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
