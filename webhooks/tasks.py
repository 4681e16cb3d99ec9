"""Celery wrappers around webhooks.services: JSON arguments, primary keys only."""

from __future__ import annotations

from celery import shared_task

from webhooks import services


@shared_task(name="webhooks.tasks.deliver", ignore_result=True)
def deliver(delivery_id: int) -> str | None:
    """Make the attempt that is due; retries are scheduled by the service, not by Celery."""
    return services.delivery_attempt(delivery_id=delivery_id)


@shared_task(name="webhooks.tasks.deliver_due", ignore_result=True)
def deliver_due() -> int:
    """Beat: re-queue attempts that are due but whose task was lost."""
    return services.deliveries_queue_due()
