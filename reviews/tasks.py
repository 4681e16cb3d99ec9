"""Thin Celery wrappers: sync repositories and push decisions; retry only transient failures.

Each body fetches by primary key and calls one service (imported in the body: the services
queue these tasks, so this module imports nothing of the app at its top). Retries are Celery's
own: lock busy, a transient git failure or a dropped database connection, with backoff and
jitter; after the last one a push fails its pending decisions visibly (`_push_failed`).
"""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.db import OperationalError

from memoryadmin.locks import LockBusy
from reviews import task_names
from reviews.git import TransientGitError

RETRY = {
    "autoretry_for": (LockBusy, TransientGitError, OperationalError),
    "retry_backoff": 5,
    "retry_backoff_max": 300,
    "retry_jitter": True,
    "max_retries": 6,
}


@shared_task(name=task_names.REPOSITORY_SYNC, **RETRY)
def repository_sync(repository_id: int) -> None:
    """Sync, index, and queue the push of what is still pending."""
    from reviews.models import Repository
    from reviews.services import repositories

    if Repository.objects.filter(pk=repository_id).exists():
        repositories.repository_sync(repository_id=repository_id)


def _push_failed(
    self: Any, exc: Exception, task_id: str, args: Any, kwargs: Any, einfo: Any
) -> None:
    """After the last retry of a transient git failure: fail what is still pending, visibly."""
    if isinstance(exc, TransientGitError):
        from reviews.services.push import decisions_fail_pending

        decisions_fail_pending(repository_id=args[0], detail=exc.message)


@shared_task(name=task_names.REPOSITORY_PUSH_PENDING, on_failure=_push_failed, **RETRY)
def repository_push_pending(repository_id: int) -> None:
    """Idempotent: with nothing pending it does nothing."""
    from reviews.services import push

    push.repository_push_pending(repository_id=repository_id)


@shared_task(name="reviews.tasks.sync_due_repositories")
def sync_due_repositories() -> int:
    from django.utils import timezone

    from reviews.selectors import repositories_due

    due = repositories_due(timezone.now())
    for repository_id in due:
        repository_sync.delay(repository_id)
    return len(due)
