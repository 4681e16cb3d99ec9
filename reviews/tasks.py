"""Thin Celery wrappers: sync repositories and push decisions; retry only transient failures."""

from __future__ import annotations

import random
from datetime import timedelta

from celery import shared_task
from django.utils import timezone

from memoryadmin.locks import LockBusy
from reviews import services
from reviews.git import GitError
from reviews.models import Decision, PushState, Repository

MAX_RETRIES = 6


def _backoff(retries: int) -> float:
    return min(300.0, 5.0 * 2**retries) * (0.5 + random.random())


@shared_task(name="reviews.tasks.sync_repository", bind=True, max_retries=MAX_RETRIES)
def sync_repository(self, repository_id: int) -> None:  # type: ignore[no-untyped-def]
    if not Repository.objects.filter(pk=repository_id).exists():
        return
    try:
        services.repository_sync(repository_id=repository_id)
    except LockBusy as exc:
        raise self.retry(exc=exc, countdown=_backoff(self.request.retries)) from exc
    if Decision.objects.filter(repository_id=repository_id, state=PushState.PENDING).exists():
        push_repository.delay(repository_id)


@shared_task(name="reviews.tasks.push_repository", bind=True, max_retries=MAX_RETRIES)
def push_repository(self, repository_id: int) -> None:  # type: ignore[no-untyped-def]
    """Idempotent: with nothing pending it does nothing."""
    if not Decision.objects.filter(repository_id=repository_id, state=PushState.PENDING).exists():
        return
    try:
        services.repository_push_pending(repository_id=repository_id)
    except LockBusy as exc:
        raise self.retry(exc=exc, countdown=_backoff(self.request.retries)) from exc
    except GitError as exc:
        if not exc.transient:
            raise
        if self.request.retries >= self.max_retries:
            services.decisions_fail_pending(repository_id=repository_id, detail=exc.message)
            return
        raise self.retry(exc=exc, countdown=_backoff(self.request.retries)) from exc


@shared_task(name="reviews.tasks.sync_due_repositories")
def sync_due_repositories() -> int:
    now = timezone.now()
    count = 0
    rows = Repository.objects.values_list("pk", "last_sync_at", "sync_interval_minutes")
    for repository_id, last_sync_at, minutes in rows.iterator():
        if last_sync_at is None or last_sync_at <= now - timedelta(minutes=minutes):
            sync_repository.delay(repository_id)
            count += 1
    return count
