"""Celery tasks: JSON arguments, primary keys only; each body imports its service and calls it.

Nothing of the app is imported at module level, so the services import these tasks (with a
`_task` suffix) and queue them on commit without an import circle.
"""

from __future__ import annotations

from celery import shared_task
from django.db import OperationalError

from webhooks import task_names


@shared_task(
    name=task_names.DELIVERY_ATTEMPT,
    ignore_result=True,
    autoretry_for=(OperationalError,),
    retry_backoff=5,
    retry_backoff_max=300,
    retry_jitter=True,
    max_retries=6,
)
def delivery_attempt(delivery_id: int) -> str | None:
    """Make the attempt that is due. The delivery's own retries (backoff, Retry-After) are stored
    on the row and queued by the service; Celery retries only a database that was unreachable."""
    from webhooks import delivery

    return delivery.delivery_attempt(delivery_id=delivery_id)


@shared_task(name="webhooks.tasks.deliver_due", ignore_result=True)
def deliveries_queue_due() -> int:
    """Beat: re-queue attempts that are due but whose task was lost (the next beat is its retry)."""
    from webhooks import delivery

    return delivery.deliveries_queue_due()
