"""Every write to webhook endpoints and deliveries, and the delivery of one attempt."""

from __future__ import annotations

import json
import logging
import os
import random
import ssl
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any

import certifi
import httpx
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.db import DatabaseError, transaction
from django.db.models import F
from django.utils import timezone

from memoryadmin import crypto
from memoryadmin.audit import Actor, audit_record
from memoryadmin.models import Team
from webhooks import events as ev
from webhooks import netguard, signing
from webhooks.deadline import DeadlineClock, DeadlinePassed, deadline_client
from webhooks.models import DeliveryState, WebhookDelivery, WebhookEndpoint

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 6
BACKOFF_BASE_SECONDS = 30
BACKOFF_MAX_SECONDS = 3600
EXCERPT_BYTES = 200
OPEN_STATES = (DeliveryState.PENDING, DeliveryState.RETRYING)
USER_AGENT = "memoryadmin-webhooks/1"


# --- endpoints -------------------------------------------------------------------------------


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
    *, actor: Actor, endpoint: WebhookEndpoint
) -> tuple[WebhookEndpoint, str]:
    """Replace the secret at once (no overlap period) and return the new one, shown once."""
    endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
    secret = signing.secret_generate()
    endpoint.secret_encrypted = crypto.encrypt(secret)
    endpoint.secret_rotated_at = endpoint.updated_at = timezone.now()
    endpoint.save(update_fields=["secret_encrypted", "secret_rotated_at", "updated_at"])
    audit_record(
        actor=actor,
        action="webhook.rotate_secret",
        team=endpoint.team,
        target=endpoint,
        summary=f"Rotated the secret of webhook endpoint {endpoint.url}",
        data={"url": endpoint.url},
    )
    return endpoint, secret


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


# --- events and deliveries -------------------------------------------------------------------


def _queue(delivery_id: int, *, countdown: float | None = None) -> None:
    """Send the delivery task after commit; a broker failure is logged, never raised."""
    from webhooks.tasks import deliver

    def send() -> None:
        deliver.apply_async(args=[delivery_id], countdown=countdown)

    transaction.on_commit(send, robust=True)


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
        _queue(delivery.pk)


@transaction.atomic
def endpoint_ping(*, actor: Actor, endpoint: WebhookEndpoint) -> WebhookDelivery:
    """Send a `ping` test event to this one endpoint, whatever it subscribes to."""
    if not endpoint.is_active:
        raise ValidationError("Enable the endpoint before sending a test event.")
    payload = _payload(
        event_id=str(uuid.uuid4()),
        event=ev.PING,
        team=endpoint.team,
        data={"message": "Test event from memoryadmin", "endpoint": endpoint.pk},
    )
    delivery = WebhookDelivery.objects.create(endpoint=endpoint, event=ev.PING, payload=payload)
    audit_record(
        actor=actor,
        action="webhook.ping",
        team=endpoint.team,
        target=endpoint,
        summary=f"Sent a test event to {endpoint.url}",
        data={"url": endpoint.url, "delivery": str(delivery.uid)},
    )
    _queue(delivery.pk)
    return delivery


@transaction.atomic
def delivery_redeliver(*, actor: Actor, delivery: WebhookDelivery) -> WebhookDelivery:
    """Send the same event again as a new delivery (same event id, new delivery id)."""
    endpoint = delivery.endpoint
    if not endpoint.is_active:
        raise ValidationError("Enable the endpoint before redelivering.")
    again = WebhookDelivery.objects.create(
        endpoint=endpoint, event=delivery.event, payload=delivery.payload, redelivery_of=delivery
    )
    audit_record(
        actor=actor,
        action="webhook.redeliver",
        team=endpoint.team,
        target=again,
        summary=f"Redelivered {delivery.event} to {endpoint.url}",
        data={"url": endpoint.url, "of": str(delivery.uid), "delivery": str(again.uid)},
    )
    _queue(again.pk)
    return again


# --- one attempt -----------------------------------------------------------------------------


@dataclass(frozen=True)
class AttemptResult:
    status: int | None
    error: str
    duration_ms: int
    retryable: bool
    retry_after: int | None = None

    @property
    def succeeded(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def _ssl_context() -> ssl.SSLContext:
    # trust_env is off (no proxy variables may route around the address guard), so the
    # standard SSL_CERT_FILE override is honoured here explicitly.
    return ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE") or certifi.where())


def _scrub(text: str, secret: str) -> str:
    if secret:
        text = text.replace(secret, "[secret]")
    return text[:500]


def _retry_after(response: httpx.Response) -> int | None:
    value = response.headers.get("retry-after", "")
    return int(value) if value.isdigit() else None


def _host_header(target: netguard.Target) -> str:
    host = f"[{target.host}]" if ":" in target.host else target.host
    default = 443 if target.scheme == "https" else 80
    return host if target.port == default else f"{host}:{target.port}"


def _post(
    *, url: str, body: bytes, headers: dict[str, str], timeout: float, deadline: float
) -> AttemptResult:
    """One POST. `timeout` bounds each socket operation, `deadline` the whole attempt (connect,
    send, response headers and excerpt) on the wall clock, however slowly the bytes come."""
    started = time.monotonic()

    def elapsed() -> int:
        return int((time.monotonic() - started) * 1000)

    try:
        # The scheme rule is enforced when the URL is saved; the address rule on every attempt,
        # after resolution, and the request goes to the checked address so DNS cannot rebind it.
        target = netguard.url_parse(url, allow_http_loopback=True)
        address = netguard.address_resolve(
            target.host, target.port, allow_private=settings.SOURCE_ALLOW_PRIVATE_ADDRESSES
        )
    except netguard.UrlRefused as exc:
        return AttemptResult(None, exc.message, elapsed(), retryable=exc.code == "dns-failed")
    pinned_host = f"[{address}]" if ":" in address else address
    pinned = f"{target.scheme}://{pinned_host}:{target.port}{target.path_and_query}"
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    clock = DeadlineClock()
    try:
        with (
            clock.until(started + deadline),
            deadline_client(
                clock, timeout=timeout, follow_redirects=False, verify=_ssl_context()
            ) as client,
            client.stream(
                "POST",
                pinned,
                content=body,
                headers={**headers, "Host": _host_header(target)},
                extensions=extensions,
            ) as response,
        ):
            excerpt = b""
            for chunk in response.iter_bytes():
                excerpt += chunk
                if len(excerpt) >= EXCERPT_BYTES:
                    break
    except DeadlinePassed:
        message = (
            f"No complete answer within {deadline:g}s (MEMORYADMIN_WEBHOOK_DELIVERY_DEADLINE)."
        )
        return AttemptResult(None, message, elapsed(), retryable=True)
    except httpx.TimeoutException:
        return AttemptResult(None, f"Timed out after {timeout:g}s.", elapsed(), retryable=True)
    except httpx.HTTPError as exc:
        message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return AttemptResult(None, message, elapsed(), retryable=True)
    status = response.status_code
    if 200 <= status < 300:
        return AttemptResult(status, "", elapsed(), retryable=False)
    text = excerpt[:EXCERPT_BYTES].decode("utf-8", "replace").strip()
    error = f"HTTP {status} {response.reason_phrase}" + (f": {text}" if text else "")
    if 300 <= status < 400:
        error = f"HTTP {status}: redirects are not followed; use the final URL."
    retryable = status == 429 or status >= 500
    return AttemptResult(status, error, elapsed(), retryable, _retry_after(response))


def backoff_seconds(attempts: int, retry_after: int | None = None) -> float:
    """Exponential backoff with equal jitter; a server's Retry-After is honoured up to the cap."""
    delay = min(BACKOFF_BASE_SECONDS * 2 ** max(attempts - 1, 0), BACKOFF_MAX_SECONDS)
    delay = delay / 2 + random.uniform(0, delay / 2)
    if retry_after is not None:
        delay = max(delay, min(retry_after, BACKOFF_MAX_SECONDS))
    return delay


def request_build(
    *, delivery: WebhookDelivery, secret: str, timestamp: int
) -> tuple[bytes, dict[str, str]]:
    body = json.dumps(delivery.payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Memoryadmin-Event": delivery.event,
        "X-Memoryadmin-Delivery": str(delivery.uid),
        "X-Memoryadmin-Timestamp": str(timestamp),
        "X-Memoryadmin-Signature": signing.sign(secret, timestamp, body),
    }
    return body, headers


def _claim(delivery_id: int, now: datetime, lease_seconds: float) -> bool:
    """Compare-and-set: exactly one worker takes a due attempt; the lease covers a crash."""
    return bool(
        WebhookDelivery.objects.filter(
            pk=delivery_id, state__in=OPEN_STATES, next_attempt_at__lte=now
        ).update(attempts=F("attempts") + 1, next_attempt_at=now + timedelta(seconds=lease_seconds))
    )


def delivery_attempt(*, delivery_id: int, now: datetime | None = None) -> str | None:
    """Make the attempt that is due; return the new state, or None when none was due.

    Idempotent: a duplicate task, or one for a finished delivery, claims nothing and returns None.
    """
    now = now or timezone.now()
    timeout = float(settings.WEBHOOK_HTTP_TIMEOUT)
    deadline = float(settings.WEBHOOK_DELIVERY_DEADLINE)
    if not _claim(delivery_id, now, lease_seconds=deadline + 30):
        return None
    delivery = WebhookDelivery.objects.select_related("endpoint").get(pk=delivery_id)
    endpoint = delivery.endpoint
    secret = ""
    if not endpoint.is_active:
        result = AttemptResult(None, "The endpoint is disabled.", 0, retryable=False)
    else:
        try:
            secret = crypto.decrypt(endpoint.secret_encrypted)
        except ValueError:
            result = AttemptResult(
                None, "The secret cannot be decrypted; rotate it.", 0, retryable=False
            )
        else:
            body, headers = request_build(
                delivery=delivery, secret=secret, timestamp=int(time.time())
            )
            result = _post(
                url=endpoint.url, body=body, headers=headers, timeout=timeout, deadline=deadline
            )
    return _attempt_record(delivery=delivery, result=result, secret=secret)


@transaction.atomic
def _attempt_record(*, delivery: WebhookDelivery, result: AttemptResult, secret: str) -> str:
    finished = timezone.now()
    delivery.last_response_status = result.status
    delivery.last_error = _scrub(result.error, secret)
    delivery.duration_ms = result.duration_ms
    countdown = None
    if result.succeeded:
        delivery.state, delivery.finished_at, delivery.next_attempt_at = (
            DeliveryState.SUCCEEDED,
            finished,
            None,
        )
    elif result.retryable and delivery.attempts < MAX_ATTEMPTS:
        countdown = backoff_seconds(delivery.attempts, result.retry_after)
        delivery.state = DeliveryState.RETRYING
        delivery.next_attempt_at = finished + timedelta(seconds=countdown)
    else:
        delivery.state, delivery.finished_at, delivery.next_attempt_at = (
            DeliveryState.FAILED,
            finished,
            None,
        )
    # update(), not save(): the endpoint may have been deleted while the request was in flight.
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        state=delivery.state,
        next_attempt_at=delivery.next_attempt_at,
        last_response_status=delivery.last_response_status,
        last_error=delivery.last_error,
        duration_ms=delivery.duration_ms,
        finished_at=delivery.finished_at,
    )
    WebhookEndpoint.objects.filter(pk=delivery.endpoint_id).update(
        last_delivery_at=finished,
        last_delivery_state=delivery.state,
        last_response_status=result.status,
    )
    logger.info(
        "webhook delivery %s (%s) to endpoint %s attempt %d: %s %s",
        delivery.uid,
        delivery.event,
        delivery.endpoint_id,
        delivery.attempts,
        delivery.state,
        result.status if result.status is not None else delivery.last_error,
    )
    if countdown is not None:
        _queue(delivery.pk, countdown=countdown)
    return delivery.state


def deliveries_queue_due(*, now: datetime | None = None, limit: int = 500) -> int:
    """Re-queue attempts that are due but whose task was lost (broker outage, worker crash)."""
    now = now or timezone.now()
    ids = list(
        WebhookDelivery.objects.filter(state__in=OPEN_STATES, next_attempt_at__lte=now)
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:limit]
    )
    for pk in ids:
        transaction.on_commit(partial(_queue_now, pk), robust=True)
    return len(ids)


def _queue_now(delivery_id: int) -> None:
    from webhooks.tasks import deliver

    deliver.delay(delivery_id)
