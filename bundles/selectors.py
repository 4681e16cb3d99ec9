"""Reads that span the brain's tables (dashboard, Brain page)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.core.paginator import Page
from django.db.models import (
    Case,
    Count,
    DateTimeField,
    Exists,
    F,
    IntegerField,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Value,
    When,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.utils import timezone

from bundles.models import (
    Agent,
    Chunk,
    ChunkOrigin,
    Entity,
    ImportJob,
    ImportRun,
    L2Session,
    MemoryEdge,
    MoodState,
)
from bundles.readlog import id_in_summary
from bundles.secrets import mask_secrets
from memoryadmin.models import AuditEvent, Team
from sources.models import Health, Source

# ----------------------------------------------------------------------------- served


def active_origins(pk: str = "pk", now: datetime | None = None) -> QuerySet[ChunkOrigin]:
    now = now or timezone.now()
    return ChunkOrigin.objects.filter(chunk_id=OuterRef(pk), active=True).filter(
        Q(expires_at__isnull=True) | Q(expires_at__gt=now)
    )


def served_q(*, pk: str = "pk", prefix: str = "", now: datetime | None = None) -> Q:
    """Not deleted, and standalone or backed by an active mirror origin (one indexed EXISTS)."""
    return Q(**{f"{prefix}is_deleted": False}) & (
        Q(**{f"{prefix}standalone": True}) | Exists(active_origins(pk, now))
    )


def served_chunks(team: Team, now: datetime | None = None) -> QuerySet[Chunk]:
    return Chunk.objects.filter(team=team).filter(served_q(now=now))


def source_chunk_count(source: Source) -> int:
    """Chunks the source backs now (what deleting it withdraws from the brain)."""
    return ChunkOrigin.objects.filter(
        team_id=source.team_id, group=f"source:{source.pk}", active=True
    ).count()


def repository_chunk_count(repository: Any) -> int:
    """Chunks the repository backs now (what deleting it withdraws from the brain)."""
    return ChunkOrigin.objects.filter(
        team_id=repository.team_id, group=f"repository:{repository.pk}", active=True
    ).count()


BUNDLE_ACTIONS = (
    "bundle.import",
    "bundle.import_failed",
    "bundle.import_queued",
    "bundle.import_near_duplicates",
    "bundle.export",
    "brain.propose",
    "brain.propose-pushed",
    "brain.propose-empty",
    "brain.propose-failed",
)


def dashboard_summary(team: Team) -> dict[str, Any]:
    """Brain size (served chunks) by memory type, and how much of it is DNA."""
    live = served_chunks(team)
    totals = live.aggregate(total=Count("id"), dna=Count("id", filter=Q(is_dna=True)))
    by_type = list(
        live.values("memory_type").annotate(count=Count("id")).order_by("-count", "memory_type")
    )
    total = totals["total"] or 0
    return {
        "total": total,
        "dna": totals["dna"] or 0,
        "dna_share": round(100 * (totals["dna"] or 0) / total) if total else 0,
        "by_type": by_type,
    }


def brain_summary(team: Team) -> dict[str, Any]:
    summary = dashboard_summary(team)
    live = served_chunks(team)
    summary["by_zone"] = list(
        live.values("zone").annotate(count=Count("id")).order_by("-count", "zone")
    )
    summary["counts"] = {
        "memory_edges": MemoryEdge.objects.filter(team=team).count(),
        "entities": Entity.objects.filter(team=team).count(),
        "l2_sessions": L2Session.objects.filter(team=team).count(),
        "mood_states": MoodState.objects.filter(team=team).count(),
        "agents": Agent.objects.filter(team=team).count(),
        "deleted_chunks": Chunk.objects.filter(team=team, is_deleted=True).count(),
        "withdrawn_chunks": Chunk.objects.filter(team=team, is_deleted=False)
        .exclude(Q(standalone=True) | Exists(active_origins()))
        .count(),
    }
    summary["withdrawn_retention_days"] = settings.BRAIN_WITHDRAWN_RETENTION_DAYS
    summary["by_origin"] = list(
        ChunkOrigin.objects.filter(team=team, active=True)
        .values("kind")
        .annotate(count=Count("id"))
        .order_by("kind")
    )
    return summary


def recent_bundle_events(team: Team, limit: int = 10) -> QuerySet[AuditEvent]:
    return AuditEvent.objects.filter(team=team, action__in=BUNDLE_ACTIONS).only(
        "created_at", "actor_label", "action", "summary", "data"
    )[:limit]


def recent_jobs(team: Team, limit: int = 5) -> QuerySet[ImportJob]:
    return ImportJob.objects.filter(team=team).select_related("run")[:limit]


# What every driver reads back (psycopg and Python stop at years 1 and 9999).
READABLE_FROM = datetime(1, 1, 2, tzinfo=UTC)
READABLE_UNTIL = datetime(9999, 12, 30, tzinfo=UTC)
CHUNK_FLAGS = {
    "suspicious": Q(suspicious=True),  # looked like prompt injection
    "secret": ~Q(secret_findings=[]),  # looked like a credential
}


def readable_timestamp(column: str) -> Case:
    """The column, or NULL when a driver could not read it back (written around the import's
    checks): one such row degrades to "no time" on a page instead of failing it."""
    return Case(
        When(
            Q(**{f"{column}__gte": READABLE_FROM}) & Q(**{f"{column}__lte": READABLE_UNTIL}),
            then=F(column),
        ),
        default=Value(None),
        output_field=DateTimeField(),
    )


def chunk_rows(team: Team) -> QuerySet[Chunk]:
    """The team's live chunks as the Brain page lists them, newest first: what the page shows
    of each, `has_active_origin`, readable times and the origins (one prefetch query)."""
    return (
        Chunk.objects.filter(team=team, is_deleted=False)
        .only(
            "id",
            "content",
            "memory_type",
            "zone",
            "is_pinned",
            "is_dna",
            "origin",
            "suspicious",
            "secret_findings",
            "standalone",
        )
        .annotate(
            has_active_origin=Exists(active_origins()),
            created=readable_timestamp("created_at"),
            withdrawn_since=readable_timestamp("withdrawn_at"),
        )
        .prefetch_related(Prefetch("origins", queryset=_origins_for_page()))
        .order_by("-id")
    )


def chunk_page_masked(page: Page) -> Page:
    """Each chunk of the page gets `display_content`: its text with what looked like a
    credential masked."""
    page.object_list = list(page.object_list)
    for chunk in page.object_list:
        chunk.display_content = mask_secrets(chunk.content, chunk.secret_findings)
    return page


def _origins_for_page() -> QuerySet[ChunkOrigin]:
    """Origins with `source_exists` (a deleted source's origin keeps only its recorded name)
    and `source_stale` (the source is stale now: not stored, bundles.provenance).

    Subqueries in the one prefetch query, so the page's query count stays flat."""
    source = Source.objects.filter(pk=OuterRef("source_pk"), team_id=OuterRef("team_id"))
    return ChunkOrigin.objects.annotate(
        source_pk=Cast(KT("metadata__source_id"), IntegerField()),
        source_exists=Exists(source),
        source_stale=Exists(source.filter(health=Health.STALE)),
    ).order_by("-active", "ref")


def chunk_readers(team: Team, chunk_id: int, limit: int = 50) -> list[AuditEvent]:
    """Read log: the exports whose chunk id summary contains this chunk (newest first).

    Events whose summary was cut before reaching the id are included too (marked `maybe`).
    """
    found = []
    events = AuditEvent.objects.filter(team=team, action="bundle.export").only(
        "created_at", "actor_label", "action", "data", "actor_token_id", "actor_user_id"
    )
    for event in events.iterator(chunk_size=500):
        summary = (event.data or {}).get("chunks")
        if not isinstance(summary, dict):
            continue
        seen = id_in_summary(summary, chunk_id)
        if seen is not False:
            event.maybe = seen is None  # type: ignore[attr-defined]
            found.append(event)
            if len(found) >= limit:
                break
    return found


def proposal_targets(team: Team) -> list[Any]:
    """Repositories an import may propose to: the team's, with push enabled."""
    from reviews.models import Repository

    return list(Repository.objects.filter(team=team, push_enabled=True).only("id", "name"))


def recent_runs(team: Team, limit: int = 10) -> list[ImportRun]:
    """The team's latest imports that wrote to the brain, with what an undo would do."""
    return list(
        ImportRun.objects.filter(team=team)
        .select_related("job")
        .order_by("-created_at", "-id")[:limit]
    )
