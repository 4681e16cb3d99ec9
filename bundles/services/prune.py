"""Delete mirror-only chunks whose every origin was withdrawn longer than the retention period.

A chunk a mirror created (`standalone=False`) is served only while an origin is active. When
the last one goes it stays as a *withdrawn* chunk, so a record or memory coming back within the
retention period finds it again by hash (same id, no duplicate). Past the retention period it
is deleted, with its inactive origin rows. Never deleted: a chunk an import or a person made
standalone, one with an active origin (expired or not), one a user deleted (the tombstone keeps
their deletion when the text comes back), and one an edge touches (see docs/brain.md).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from bundles.models import BrainSettings, Chunk, ChunkOrigin, MemoryEdge
from bundles.readlog import id_summary
from formats import memoryai as protocol
from memoryadmin.audit import Actor, audit_record
from memoryadmin.models import Team

logger = logging.getLogger(__name__)

PRUNE_BATCH = 500


@dataclass
class PruneResult:
    team_id: int
    retention_days: float
    deleted: int = 0
    dna: int = 0  # of the deleted: DNA by flag or fields (see docs/brain.md for why)
    origins_deleted: int = 0
    kept_for_edges: int = 0
    stamped: int = 0  # withdrawn chunks found without a withdrawal time: counted from now
    error: str = ""
    chunk_ids: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "retention_days": self.retention_days,
            "deleted": self.deleted,
            "dna": self.dna,
            "origins_deleted": self.origins_deleted,
            "kept_for_edges": self.kept_for_edges,
            "stamped": self.stamped,
            "chunks": id_summary(self.chunk_ids),
        }


def _withdrawn(team: Team) -> QuerySet[Chunk]:
    """Mirror-only chunks without an active origin (expiry aside: an expired origin is still
    active until the next reconcile deactivates it, and that stamps the chunk)."""
    active = ChunkOrigin.objects.filter(chunk_id=OuterRef("pk"), active=True)
    return Chunk.objects.filter(team=team, standalone=False).exclude(Exists(active))


def _has_edge() -> Q:
    return Q(Exists(MemoryEdge.objects.filter(source_id=OuterRef("pk")))) | Q(
        Exists(MemoryEdge.objects.filter(target_id=OuterRef("pk")))
    )


def brain_prune_withdrawn(
    *,
    team: Team | None = None,
    older_than: timedelta | None = None,
    actor: Actor | None = None,
    now: datetime | None = None,
) -> list[PruneResult]:
    """Prune one team's brain, or every team's (each in its own transaction, one audit event
    per team that changed). `older_than` defaults to MEMORYADMIN_BRAIN_WITHDRAWN_RETENTION_DAYS.
    A team whose prune fails (a concurrent mirror brought a chunk back: its foreign key refuses
    the delete) is rolled back, logged and left for the next run; the others go on."""
    if older_than is None:
        older_than = timedelta(days=settings.BRAIN_WITHDRAWN_RETENTION_DAYS)
    if older_than < timedelta(0):
        raise ValueError("older_than must not be negative")
    actor = actor or Actor.system()
    teams = (
        [team]
        if team is not None
        else list(Team.objects.filter(pk__in=Chunk.objects.filter(standalone=False).values("team")))
    )
    results = []
    for each in teams:
        try:
            results.append(
                brain_prune_withdrawn_team(
                    team=each, older_than=older_than, actor=actor, now=now or timezone.now()
                )
            )
        except DatabaseError as exc:
            logger.warning("brain prune of team %s failed, left for the next run: %s", each, exc)
            results.append(
                PruneResult(
                    team_id=each.pk,
                    retention_days=older_than.total_seconds() / 86400,
                    error=str(exc)[:500],
                )
            )
    return results


@transaction.atomic
def brain_prune_withdrawn_team(
    *, team: Team, older_than: timedelta, actor: Actor, now: datetime
) -> PruneResult:
    # The import holds this row lock for its whole transaction: it must not find a chunk by
    # hash that is deleted under it (it would count it as present and write nothing).
    BrainSettings.objects.select_for_update().get_or_create(team=team)
    result = PruneResult(team_id=team.pk, retention_days=older_than.total_seconds() / 86400)
    result.stamped = _withdrawn(team).filter(withdrawn_at__isnull=True).update(withdrawn_at=now)
    due = _withdrawn(team).filter(withdrawn_at__lt=now - older_than, is_deleted=False)
    result.kept_for_edges = due.filter(_has_edge()).count()
    deletable = due.exclude(_has_edge()).order_by("pk")
    last = 0
    while True:
        # Locked, so a mirror that brings one back waits for this transaction (and then finds
        # it gone and creates it again) instead of pointing an origin at a deleted row.
        rows = list(
            deletable.filter(pk__gt=last)
            .select_for_update(of=("self",))
            .values_list("pk", "is_dna", "memory_type", "zone", "is_pinned")[:PRUNE_BATCH]
        )
        if not rows:
            break
        last = rows[-1][0]
        ids = [row[0] for row in rows]
        result.dna += sum(
            1 for _, dna, kind, zone, pinned in rows if dna or protocol.is_dna(kind, zone, pinned)
        )
        origins, _ = ChunkOrigin.objects.filter(chunk_id__in=ids, active=False).delete()
        result.origins_deleted += origins
        result.deleted += _delete_rows(ids)
        result.chunk_ids.extend(ids)
    if result.deleted or result.stamped:
        audit_record(
            actor=actor,
            action="brain.prune",
            team=team,
            target_type="bundles.brain",
            target_id=team.pk,
            summary=_summary(result),
            data=result.as_dict(),
        )
    return result


def _summary(result: PruneResult) -> str:
    parts = [
        f"Deleted {result.deleted} mirror chunks withdrawn for more than"
        f" {result.retention_days:g} days ({result.dna} DNA)"
    ]
    if result.kept_for_edges:
        parts.append(f"kept {result.kept_for_edges} that edges still use")
    if result.stamped:
        parts.append(f"{result.stamped} withdrawn chunks had no withdrawal time: counted from now")
    return "; ".join(parts)


def _delete_rows(ids: list[int]) -> int:
    """A plain DELETE, not Django's collector: the collector would also delete an origin a
    concurrent mirror has just pointed at the chunk, where a plain DELETE lets the foreign key
    refuse (the team's prune then rolls back and waits for the next run)."""
    table = connection.ops.quote_name(Chunk._meta.db_table)
    marks = ", ".join(["%s"] * len(ids))
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table} WHERE id IN ({marks})", ids)  # noqa: S608
        return cursor.rowcount
