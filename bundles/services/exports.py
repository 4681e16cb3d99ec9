"""Export a team's brain as a bundle, whole (JSON) or streamed (NDJSON, flat memory)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from bundles import protocol
from bundles.mirror import served_q
from bundles.models import Agent, BrainSettings, Chunk, Entity, L2Session, MemoryEdge, MoodState
from bundles.protocol import SECTIONS
from bundles.readlog import id_summary
from memoryadmin.audit import Actor, audit_record
from memoryadmin.models import Team

ITERATOR_CHUNK = 1000
CHUNK_FIELDS = (
    "id",
    "content",
    "content_hash",
    "memory_type",
    "embedding",
    "embedding_model",
    "embedding_dim",
    "tags",
    "zone",
    "importance",
    "is_pinned",
    "decay_score",
    "tier",
    "created_at",
    "accessed_at",
    "valid_until",
    "metadata",
)


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


def _querysets(team: Team, request: ExportRequest) -> dict[str, QuerySet]:
    """What each scope exports. Edges only when both ends are exported chunks.

    Chunks are the *served* ones (bundles.mirror.served_q): not deleted, and imported/entered
    or backed by an active mirror origin (one indexed EXISTS per chunk).
    """
    now = timezone.now()
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
        "agents": keyed["agents"].order_by("id").values_list("data", flat=True),
        "chunks": chunks.order_by("id").values(*CHUNK_FIELDS),
        "entities": entities.order_by("id").values(
            "name", "frequency", "first_seen", "last_seen", "is_dna"
        ),
        "l2_sessions": keyed["l2_sessions"].order_by("id").values_list("data", flat=True),
        "memory_edges": edges.order_by("id").values(
            "source_id",
            "target_id",
            "edge_type",
            "weight",
            "co_activation_count",
            "created_at",
            "updated_at",
        ),
        "mood_states": keyed["mood_states"].order_by("id").values_list("data", flat=True),
    }


def _record(section: str, row: Any, model: tuple[str, int]) -> Any:
    ts = protocol.format_timestamp
    if section == "chunks":
        embedding = row["embedding"]
        # Only embeddings of the manifest's model travel: §3.5 ties their length to it.
        if embedding is not None and (row["embedding_model"], row["embedding_dim"]) == model:
            encoded: str | None = base64.b64encode(bytes(embedding)).decode("ascii")
        else:
            encoded = None
        return {
            "id": row["id"],
            "content": row["content"],
            "content_hash": row["content_hash"],
            "memory_type": row["memory_type"],
            "embedding": encoded,
            "embedding_model": row["embedding_model"] if encoded else "",
            "tags": row["tags"],
            "zone": row["zone"],
            "importance": row["importance"],
            "is_pinned": row["is_pinned"],
            "decay_score": row["decay_score"],
            "tier": row["tier"],
            "created_at": ts(row["created_at"]),
            "accessed_at": ts(row["accessed_at"]),
            "valid_until": ts(row["valid_until"]),
            "metadata": row["metadata"],
        }
    if section == "memory_edges":
        return {
            "chunk_a": row["source_id"],
            "chunk_b": row["target_id"],
            "edge_type": row["edge_type"],
            "weight": row["weight"],
            "co_activation_count": row["co_activation_count"],
            "created_at": ts(row["created_at"]),
            "updated_at": ts(row["updated_at"]),
        }
    if section == "entities":
        return {
            "name": row["name"],
            "frequency": row["frequency"],
            "first_seen": ts(row["first_seen"]),
            "last_seen": ts(row["last_seen"]),
            "is_dna": row["is_dna"],
        }
    return row  # sessions, moods, agents: the validated JSON as imported


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


@transaction.atomic
def bundle_export(*, team: Team, actor: Actor, request: ExportRequest) -> dict[str, Any]:
    """The whole bundle in memory, with accurate counts and its checksum."""
    model = _model_of(team)
    sections = {
        name: [_record(name, row, model) for row in qs.iterator(chunk_size=ITERATOR_CHUNK)]
        for name, qs in _querysets(team, request).items()
    }
    head = _head(team, request, {})
    bundle = protocol.build_bundle(
        manifest=head["manifest"],
        sections=sections,
        exported_at=head["exported_at"],
    )
    _audit_export(
        team=team,
        actor=actor,
        request=request,
        counts=bundle["manifest"]["counts"],
        kind="json",
        chunk_ids=(c["id"] for c in sections["chunks"]),
    )
    return bundle


@contextmanager
def _snapshot() -> Iterator[None]:
    """One consistent view for counts and rows: REPEATABLE READ on PostgreSQL.

    SQLite opens write transactions (IMMEDIATE) that would block writers for the whole
    download, so there the export reads in autocommit and the trailer reports drift.
    """
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


def bundle_export_stream(*, team: Team, actor: Actor, request: ExportRequest) -> Iterator[bytes]:
    """Audit now, then return the NDJSON lines: header, one line per record, trailer."""
    with transaction.atomic():
        _audit_export(
            team=team,
            actor=actor,
            request=request,
            counts=export_counts(team, request),
            kind="stream",
        )
    return _stream_lines(team, request)


def _stream_lines(team: Team, request: ExportRequest) -> Iterator[bytes]:
    with _snapshot():
        counts = export_counts(team, request)
        head = _head(team, request, counts)
        model = (head["manifest"]["embedding_model"], head["manifest"]["embedding_dim"])
        yield orjson.dumps({"kind": "header", **head}) + b"\n"
        checksum = protocol.StreamingChecksum(head, {name: "array" for name in SECTIONS})
        actual = dict.fromkeys(SECTIONS, 0)
        querysets = _querysets(team, request)
        for name in SECTIONS:
            for row in querysets[name].iterator(chunk_size=ITERATOR_CHUNK):
                record = _record(name, row, model)
                checksum.feed(name, record)
                actual[name] += 1
                yield orjson.dumps({"kind": name, "record": record}) + b"\n"
        digest, _ = checksum.hexdigests()
        yield (
            orjson.dumps(
                {
                    "kind": "trailer",
                    "counts": actual,
                    "counts_match": actual == counts,
                    "checksum": digest,
                }
            )
            + b"\n"
        )
