"""Thin Celery wrappers: one refresh per source at a time, and the beat job for due sources."""

from __future__ import annotations

import logging
import random
from datetime import timedelta

from celery import shared_task
from django.db import OperationalError, transaction
from django.utils import timezone

from memoryadmin.audit import Actor, audit_record
from memoryadmin.locks import LockBusy, named_lock
from sources import services
from sources.models import RefreshRun, RunStatus, Source, SourceState

LOCK_TTL = 900
logger = logging.getLogger(__name__)


@shared_task(bind=True, name="sources.tasks.refresh_source", max_retries=6, acks_late=True)
def refresh_source(self, source_id: int, run_id: int | None = None) -> str:  # type: ignore[no-untyped-def]
    """Run one refresh under the source's lock; retry later only when that is worth it."""
    try:
        with named_lock(f"source-refresh-{source_id}", ttl=LOCK_TTL):
            runs_abandoned(source_id=source_id, keep=run_id)
            run = services.source_refresh(source_id=source_id, run_id=run_id)
    except (LockBusy, OperationalError) as exc:
        countdown = min(300, 5 * 2**self.request.retries) + random.uniform(0, 3)
        raise self.retry(exc=exc, countdown=countdown) from exc
    except (Source.DoesNotExist, RefreshRun.DoesNotExist):
        # Deleted (sources.services.source_delete) before or during this run: nothing to do.
        logger.info("source %s was deleted; refresh run %s ends", source_id, run_id)
        return "gone"
    return run.status


@transaction.atomic
def runs_abandoned(*, source_id: int, keep: int | None) -> int:
    """Under the source's lock nobody else is refreshing it: a run still `running` lost its
    worker (SIGKILL, OOM). Say so instead of leaving it running forever; its swap never
    happened, so the snapshot before it is still the current one."""
    now = timezone.now()
    abandoned = list(
        RefreshRun.objects.select_for_update(of=("self",))
        .filter(source_id=source_id, status=RunStatus.RUNNING)
        .exclude(pk=keep)
        .select_related("source__team")
    )
    for run in abandoned:
        run.status, run.error_code, run.finished_at = RunStatus.FAILED, "worker-lost", now
        run.error = "the worker stopped during this refresh; the previous snapshot was kept"
        run.save(update_fields=["status", "error_code", "error", "finished_at"])
        audit_record(
            actor=Actor.system(),
            action="source.refresh.abandoned",
            team=run.source.team,
            target=run,
            summary=f"Refresh run #{run.pk} of {run.source} lost its worker",
            data={"run": run.pk},
        )
    return len(abandoned)


@shared_task(name="sources.tasks.refresh_due_sources")
def refresh_due_sources() -> int:
    """Queue a refresh for every approved source whose interval has passed."""
    now = timezone.now()
    busy = set(
        RefreshRun.objects.filter(
            status__in=[RunStatus.QUEUED, RunStatus.RUNNING],
            requested_at__gte=now - timedelta(seconds=LOCK_TTL),
        ).values_list("source_id", flat=True)
    )
    queued = 0
    for source in Source.objects.filter(state=SourceState.APPROVED).select_related("team"):
        if source.pk in busy or not source.is_due(now):
            continue
        services.source_refresh_request(actor=Actor.system(), source=source, trigger="schedule")
        queued += 1
    return queued
