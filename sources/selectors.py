"""Reads that span relations: a team's sources, a source's records, the records it serves."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db.models import F, Q, QuerySet
from django.shortcuts import get_object_or_404
from django.utils import timezone

from memoryadmin.models import Team
from sources.models import Health, Record, RefreshRun, RunStatus, Source, SourceState


def team_sources(team: Team) -> QuerySet[Source]:
    return Source.objects.filter(team=team).with_snapshot()


def team_source(team: Team, source_id: int) -> Source:
    """The team's source or a 404: a team never sees another team's sources."""
    return get_object_or_404(
        Source.objects.with_snapshot().select_related("team", "approved_by", "added_by"),
        pk=source_id,
        team=team,
    )


def source_delete_preview(source: Source) -> dict[str, int]:
    """What deleting the source removes, for its confirmation page."""
    snapshot = source.current_snapshot
    return {
        "records": snapshot.record_count if snapshot is not None else 0,
        "runs": source.runs.count(),
    }


def _not_expired(now: datetime) -> Q:
    return Q(expires__isnull=True) | Q(expires__gt=now)


def current_records(source: Source) -> QuerySet[Record]:
    if source.current_snapshot_id is None:
        return Record.objects.none()
    return Record.objects.filter(snapshot_id=source.current_snapshot_id)


def active_records(source: Source, now: datetime | None = None) -> QuerySet[Record]:
    """Active as stored, with expiry re-applied now (records can expire between refreshes)."""
    return current_records(source).filter(_not_expired(now or timezone.now()), active=True)


def active_count(source: Source) -> int | None:
    """How many records `active_records` holds, from the snapshot's stored count, when none of
    its records has an expiry date (one indexed EXISTS: `record_snapshot_timed`), so none can
    have expired since the refresh counted them. Counting them was a scan of the whole
    snapshot on every view of its page (10,000 records: 4.6 ms). None otherwise."""
    snapshot = source.current_snapshot
    if snapshot is None:
        return None
    if Record.objects.filter(snapshot_id=snapshot.pk, expires__isnull=False).exists():
        return None
    return snapshot.active_count


def inactive_records(source: Source, now: datetime | None = None) -> QuerySet[Record]:
    now = now or timezone.now()
    return current_records(source).filter(Q(active=False) | Q(expires__lte=now))


def first_success(source: Source, runs: list[RefreshRun], *, limit: int) -> datetime | None:
    """When the source was first read successfully, for the run badges ("stale" only after
    it): from the runs already loaded when they are the whole history, else one query."""
    if source.last_success_at is None or not any(r.status == RunStatus.FAILED for r in runs):
        return None
    if len(runs) < limit:
        done = [r.finished_at for r in runs if r.status == RunStatus.SUCCEEDED and r.finished_at]
        return min(done) if done else None
    return (
        RefreshRun.objects.filter(source=source, status=RunStatus.SUCCEEDED)
        .order_by("finished_at")
        .values_list("finished_at", flat=True)
        .first()
    )


def latest_run(source: Source) -> RefreshRun | None:
    return RefreshRun.objects.filter(source=source).first()


def sources_due(now: datetime) -> list[Source]:
    """Approved sources whose refresh interval has passed, without a run queued or running
    (one older than the lock's lifetime was lost and does not count), with their team."""
    busy = set(
        RefreshRun.objects.filter(
            status__in=[RunStatus.QUEUED, RunStatus.RUNNING],
            requested_at__gte=now - timedelta(seconds=Source.lock_ttl),
        ).values_list("source_id", flat=True)
    )
    return [
        source
        for source in Source.objects.filter(state=SourceState.APPROVED).select_related("team")
        if source.pk not in busy and source.is_due(now)
    ]


def context_records(
    team: Team, scopes: list[str] | None = None, now: datetime | None = None
) -> QuerySet[Record]:
    """Active, unexpired records of the team's approved sources that are not denied,
    from each source's current snapshot only."""
    records = (
        Record.objects.filter(
            source__team=team,
            source__state=SourceState.APPROVED,
            snapshot_id=F("source__current_snapshot_id"),
            active=True,
        )
        .filter(_not_expired(now or timezone.now()))
        .exclude(source__health=Health.DENIED)
        .select_related("source", "snapshot")
        .order_by("source_id", "record_id")
    )
    if scopes:
        records = records.filter(scope__in=scopes)
    return records


def dashboard_summary(team: Team) -> dict[str, Any]:
    sources = list(
        Source.objects.filter(team=team).exclude(state=SourceState.DISABLED).with_snapshot()
    )
    approved = [s for s in sources if s.state == SourceState.APPROVED]
    counts = {health: 0 for health in Health.values}
    for source in approved:
        counts[source.health] += 1
    rank = {Health.DENIED: 0, Health.FAILED: 0, Health.STALE: 1, Health.NEVER: 2, Health.FRESH: 3}
    worst = sorted(
        (s for s in approved if s.health != Health.FRESH),
        key=lambda s: (rank[s.health], s.denied_since or s.stale_since or s.created_at),
    )[:5]
    return {
        "total": len(approved),
        "pending": sum(1 for s in sources if s.state == SourceState.PENDING),
        "fresh": counts[Health.FRESH],
        "stale": counts[Health.STALE],
        "denied": counts[Health.DENIED],
        "failed": counts[Health.FAILED],
        "never": counts[Health.NEVER],
        "worst": worst,
        "team": team,
    }
