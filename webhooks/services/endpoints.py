"""Every write to a team's webhook endpoints: create, change, enable or disable, rotate the
secret, delete, and send a test event."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from memoryadmin import crypto
from memoryadmin.audit import Actor, audit_record
from memoryadmin.errors import Conflict
from memoryadmin.models import Team
from memoryadmin.queue import enqueue_on_commit
from webhooks import delivery as delivery_service
from webhooks import events as ev
from webhooks import netguard, signing
from webhooks.emit import _payload
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.task_names import DELIVERY_ATTEMPT


class NoOverlap(Conflict):
    code = "no-overlap"


class EndpointDisabled(Conflict):
    code = "endpoint-disabled"


def _url_clean(url: str) -> str:
    url = url.strip()
    try:
        netguard.url_parse(url, allow_http_loopback=settings.SOURCE_ALLOW_HTTP_LOOPBACK)
    except netguard.UrlRefused as exc:
        raise ValidationError({"url": exc.message}) from exc
    return url


def _events_clean(events: list[str]) -> list[str]:
    unknown = sorted(set(events) - set(ev.ALL_EVENTS))
    if unknown:
        raise ValidationError({"events": f"Unknown events: {', '.join(unknown)}."})
    return [name for name in ev.ALL_EVENTS if name in events]


def _endpoint_data(endpoint: WebhookEndpoint) -> dict[str, Any]:
    """What the audit log keeps about an endpoint: never the secret."""
    return {
        "url": endpoint.url,
        "events": endpoint.events,
        "description": endpoint.description,
        "active": endpoint.is_active,
    }


@transaction.atomic
def endpoint_create(
    *, actor: Actor, team: Team, url: str, events: list[str], description: str = ""
) -> tuple[WebhookEndpoint, str]:
    """Create an endpoint and return it with its secret: the only time the secret is in clear."""
    secret = signing.secret_generate()
    endpoint = WebhookEndpoint.objects.create(
        team=team,
        url=_url_clean(url),
        events=_events_clean(events),
        description=description.strip(),
        secret_encrypted=crypto.encrypt(secret),
        created_by=actor.user,
    )
    audit_record(
        actor=actor,
        action="webhook.create",
        team=team,
        target=endpoint,
        summary=f"Added webhook endpoint {endpoint.url}",
        data=_endpoint_data(endpoint),
    )
    return endpoint, secret


@transaction.atomic
def endpoint_update(
    *,
    actor: Actor,
    endpoint: WebhookEndpoint,
    url: str,
    events: list[str],
    description: str,
) -> WebhookEndpoint:
    endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
    before = _endpoint_data(endpoint)
    endpoint.url = _url_clean(url)
    endpoint.events = _events_clean(events)
    endpoint.description = description.strip()
    endpoint.updated_at = timezone.now()
    endpoint.save(update_fields=["url", "events", "description", "updated_at"])
    audit_record(
        actor=actor,
        action="webhook.update",
        team=endpoint.team,
        target=endpoint,
        summary=f"Changed webhook endpoint {endpoint.url}",
        data={"before": before, "after": _endpoint_data(endpoint)},
    )
    return endpoint


@transaction.atomic
def endpoint_set_active(
    *, actor: Actor, endpoint: WebhookEndpoint, active: bool
) -> WebhookEndpoint:
    endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
    if endpoint.is_active == active:
        return endpoint
    endpoint.is_active = active
    endpoint.updated_at = timezone.now()
    endpoint.save(update_fields=["is_active", "updated_at"])
    audit_record(
        actor=actor,
        action="webhook.enable" if active else "webhook.disable",
        team=endpoint.team,
        target=endpoint,
        summary=f"{'Enabled' if active else 'Disabled'} webhook endpoint {endpoint.url}",
        data={"url": endpoint.url, "active": active},
    )
    return endpoint


@transaction.atomic
def endpoint_rotate_secret(
    *, actor: Actor, endpoint: WebhookEndpoint, overlap_hours: int | None = None
) -> tuple[WebhookEndpoint, str]:
    """Replace the secret and return the new one, shown once. For `overlap_hours` (default
    MEMORYADMIN_WEBHOOK_SECRET_OVERLAP_HOURS) the old secret still signs each delivery in a
    second header, so the receiver can switch without rejecting any; rotating again within
    the overlap drops the older secret (only the one just replaced overlaps)."""
    endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
    hours = settings.WEBHOOK_SECRET_OVERLAP_HOURS if overlap_hours is None else overlap_hours
    if hours < 0 or hours > 24 * 30:
        raise ValidationError({"overlap_hours": "Give between 0 and 720 hours."})
    secret = signing.secret_generate()
    now = timezone.now()
    if hours:
        endpoint.previous_secret_encrypted = endpoint.secret_encrypted
        endpoint.previous_secret_expires_at = now + timedelta(hours=hours)
    else:
        endpoint.previous_secret_encrypted, endpoint.previous_secret_expires_at = "", None
    endpoint.secret_encrypted = crypto.encrypt(secret)
    endpoint.secret_rotated_at = endpoint.updated_at = now
    endpoint.save(
        update_fields=[
            "secret_encrypted",
            "secret_rotated_at",
            "updated_at",
            "previous_secret_encrypted",
            "previous_secret_expires_at",
        ]
    )
    until = endpoint.previous_secret_expires_at
    audit_record(
        actor=actor,
        action="webhook.rotate_secret",
        team=endpoint.team,
        target=endpoint,
        summary=f"Rotated the secret of webhook endpoint {endpoint.url}"
        + (f" (the old one also signs for {hours} h)" if hours else " (no overlap)"),
        data={
            "url": endpoint.url,
            "overlap_hours": hours,
            "old_until": until and until.isoformat(),
        },
    )
    return endpoint, secret


def overlap_active(endpoint: WebhookEndpoint, now: datetime | None = None) -> bool:
    """Whether the rotated-out secret still signs deliveries."""
    until = endpoint.previous_secret_expires_at
    return (
        bool(endpoint.previous_secret_encrypted)
        and until is not None
        and until > (now or timezone.now())
    )


@transaction.atomic
def endpoint_end_overlap(*, actor: Actor, endpoint: WebhookEndpoint) -> WebhookEndpoint:
    """Drop the rotated-out secret before its overlap ends: from the next delivery on, only
    the current secret signs (no X-Memoryadmin-Signature-Previous)."""
    endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
    if not overlap_active(endpoint):
        raise NoOverlap("No previous secret is signing: there is no overlap to end.")
    until = endpoint.previous_secret_expires_at
    endpoint.previous_secret_encrypted, endpoint.previous_secret_expires_at = "", None
    endpoint.updated_at = timezone.now()
    endpoint.save(
        update_fields=["previous_secret_encrypted", "previous_secret_expires_at", "updated_at"]
    )
    audit_record(
        actor=actor,
        action="webhook.end_overlap",
        team=endpoint.team,
        target=endpoint,
        summary=f"Ended the secret overlap of webhook endpoint {endpoint.url}: "
        "only the current secret signs",
        data={"url": endpoint.url, "would_have_ended": until and until.isoformat()},
    )
    return endpoint


@transaction.atomic
def endpoint_delete(*, actor: Actor, endpoint: WebhookEndpoint) -> None:
    team, pk, data = endpoint.team, endpoint.pk, _endpoint_data(endpoint)
    endpoint.delete()
    audit_record(
        actor=actor,
        action="webhook.delete",
        team=team,
        target_type="webhooks.webhookendpoint",
        target_id=pk,
        summary=f"Deleted webhook endpoint {data['url']}",
        data=data,
    )


def _ping_record(
    *, actor: Actor, endpoint: WebhookEndpoint, action: str, **row: Any
) -> WebhookDelivery:
    """A `ping` delivery to this one endpoint, whatever it subscribes to, and its audit event."""
    if not endpoint.is_active:
        raise EndpointDisabled("Enable the endpoint before sending a test event.")
    payload = _payload(
        event_id=str(uuid.uuid4()),
        event=ev.PING,
        team=endpoint.team,
        data={"message": "Test event from memoryadmin", "endpoint": endpoint.pk},
    )
    delivery = WebhookDelivery.objects.create(
        endpoint=endpoint, event=ev.PING, payload=payload, **row
    )
    audit_record(
        actor=actor,
        action=action,
        team=endpoint.team,
        target=endpoint,
        summary=f"Sent a test event to {endpoint.url}",
        data={"url": endpoint.url, "delivery": str(delivery.uid)},
    )
    return delivery


@transaction.atomic
def endpoint_ping(*, actor: Actor, endpoint: WebhookEndpoint) -> WebhookDelivery:
    """Queue a `ping` test event to this one endpoint; a worker sends it (with retries)."""
    delivery = _ping_record(actor=actor, endpoint=endpoint, action="webhook.ping")
    enqueue_on_commit(DELIVERY_ATTEMPT, delivery.pk)
    return delivery


@dataclass(frozen=True)
class TestSent:
    """A test send's answer: the delivery (in the endpoint's list) and what the receiver said."""

    delivery: WebhookDelivery
    code: str
    status: int | None
    message: str

    @property
    def succeeded(self) -> bool:
        return self.code == "delivered"


def endpoint_test(*, actor: Actor, endpoint: WebhookEndpoint) -> TestSent:
    """Send a signed `ping` now and answer what the receiver said.

    The delivery row and its `webhook.test` audit event commit first, so the send is in the
    deliveries list whatever happens next; the row is created already claimed, so no worker
    or sweep takes it meanwhile. Then the attempt runs here, through the worker's own path
    (the address guard, the pinned signed POST, the record), once: a test is not retried.
    Not to be called inside a transaction (the request would wait on the receiver holding it).
    """
    with transaction.atomic():
        delivery = _ping_record(
            actor=actor,
            endpoint=endpoint,
            action="webhook.test",
            attempts=1,
            next_attempt_at=timezone.now() + timedelta(seconds=delivery_service.lease_seconds()),
        )
    outcome = delivery_service.attempt_claimed(delivery_id=delivery.pk, retry=False)
    delivery.refresh_from_db()
    return TestSent(
        delivery=delivery,
        code=outcome.result.code,
        status=outcome.result.status,
        message=delivery_service.attempt_words(outcome.result),
    )
