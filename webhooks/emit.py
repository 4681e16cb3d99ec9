"""`event_emit`: the one name other apps import to announce an event to the team's webhooks."""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import DatabaseError, transaction
from django.utils import timezone

from memoryadmin.models import Team
from memoryadmin.queue import enqueue_on_commit
from webhooks import events as ev
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.task_names import DELIVERY_ATTEMPT

logger = logging.getLogger(__name__)


def _payload(*, event_id: str, event: str, team: Team, data: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": event_id,
        "event": event,
        "team": team.slug,
        "created_at": timezone.now().isoformat().replace("+00:00", "Z"),
        "data": data,
    }


def event_emit(*, team: Team, event: str, data: dict[str, Any]) -> None:
    """Record one delivery per active endpoint subscribed to `event`, sent after commit.

    Safe inside the caller's transaction: nothing is sent if it rolls back. Delivery problems
    (no endpoints, a failing endpoint, a broker outage, even a database error writing the rows)
    never raise into the caller. An unknown event name or data that is not JSON-serialisable is a
    programming error and does raise.
    """
    if event not in ev.ALL_EVENTS:
        raise ValueError(f"unknown webhook event {event!r}")
    clean_data = json.loads(json.dumps(data, cls=DjangoJSONEncoder))
    try:
        with transaction.atomic():
            endpoints = [
                endpoint
                for endpoint in WebhookEndpoint.objects.filter(team=team, is_active=True).only(
                    "id", "events"
                )
                if ev.is_subscribed(endpoint.events, event)
            ]
            if not endpoints:
                return
            payload = _payload(event_id=str(uuid.uuid4()), event=event, team=team, data=clean_data)
            deliveries = WebhookDelivery.objects.bulk_create(
                [WebhookDelivery(endpoint=e, event=event, payload=payload) for e in endpoints]
            )
    except DatabaseError:
        logger.exception("webhook event %s for team %s could not be recorded", event, team.slug)
        return
    for delivery in deliveries:
        enqueue_on_commit(DELIVERY_ATTEMPT, delivery.pk)
