"""Thin Celery wrappers: one refresh of a source, and the beat job that queues the due ones.

Nothing of sources is imported at module level: each task imports its service in its body, so
the services can import this module to queue a task (no import circle)."""

from __future__ import annotations

import logging

from celery import shared_task
from django.db import OperationalError
from django.utils import timezone

from memoryadmin.audit import Actor
from memoryadmin.locks import LockBusy
from sources import task_names

logger = logging.getLogger(__name__)


@shared_task(
    name=task_names.SOURCE_REFRESH,
    acks_late=True,
    # Another run holds the source's lock, or the database is unavailable: try again later.
    autoretry_for=(LockBusy, OperationalError),
    retry_backoff=5,
    retry_backoff_max=300,
    retry_jitter=True,
    max_retries=6,
)
def source_refresh(source_id: int, run_id: int | None = None) -> str:
    """Run one refresh (the service takes the source's lock); `gone` if the source was deleted."""
    from sources.models import RefreshRun, Source
    from sources.services import refresh

    try:
        run = refresh.source_refresh(source_id=source_id, run_id=run_id)
    except (Source.DoesNotExist, RefreshRun.DoesNotExist):
        # Deleted (sources.services.lifecycle.source_delete) before or during this run.
        logger.info("source %s was deleted; refresh run %s ends", source_id, run_id)
        return "gone"
    return run.status


@shared_task(name="sources.tasks.refresh_due_sources")
def sources_refresh_due() -> int:
    """Queue a refresh for every approved source whose interval has passed."""
    from sources.selectors import sources_due
    from sources.services.lifecycle import source_refresh_request

    queued = 0
    for source in sources_due(timezone.now()):
        source_refresh_request(actor=Actor.system(), source=source, trigger="schedule")
        queued += 1
    return queued
