"""A delivery's life: claim the attempt that is due, make it, record the outcome and queue the
retry; the beat's sweep for lost tasks; a manual redelivery."""

from __future__ import annotations

import dataclasses
import logging
import random
import time
from datetime import datetime, timedelta
from http import HTTPStatus

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from memoryadmin import crypto
from memoryadmin.audit import Actor, audit_record
from memoryadmin.queue import enqueue_on_commit
from webhooks.http import AttemptResult, _post, request_build
from webhooks.models import DeliveryState, WebhookDelivery, WebhookEndpoint
from webhooks.task_names import DELIVERY_ATTEMPT

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 6
BACKOFF_BASE_SECONDS = 30
BACKOFF_MAX_SECONDS = 3600
OPEN_STATES = (DeliveryState.PENDING, DeliveryState.RETRYING)


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
    enqueue_on_commit(DELIVERY_ATTEMPT, again.pk)
    return again


def _scrub(text: str, secret: str) -> str:
    if secret:
        text = text.replace(secret, "[secret]")
    return text[:500]


def backoff_seconds(attempts: int, retry_after: int | None = None) -> float:
    """Exponential backoff with equal jitter; a server's Retry-After is honoured up to the cap."""
    delay = min(BACKOFF_BASE_SECONDS * 2 ** max(attempts - 1, 0), BACKOFF_MAX_SECONDS)
    delay = delay / 2 + random.uniform(0, delay / 2)
    if retry_after is not None:
        delay = max(delay, min(retry_after, BACKOFF_MAX_SECONDS))
    return delay


def lease_seconds() -> float:
    """How long a claimed attempt is left alone before the sweep takes it as lost."""
    return float(settings.WEBHOOK_DELIVERY_DEADLINE) + 30


def _claim(delivery_id: int, now: datetime, lease_seconds: float) -> bool:
    """Compare-and-set: exactly one worker takes a due attempt; the lease covers a crash."""
    return bool(
        WebhookDelivery.objects.filter(
            pk=delivery_id, state__in=OPEN_STATES, next_attempt_at__lte=now
        ).update(attempts=F("attempts") + 1, next_attempt_at=now + timedelta(seconds=lease_seconds))
    )


@dataclasses.dataclass(frozen=True)
class AttemptOutcome:
    """One attempt made: what the transport answered and the delivery's state after it."""

    delivery_id: int
    result: AttemptResult
    state: str


def delivery_attempt(*, delivery_id: int, now: datetime | None = None) -> str | None:
    """Make the attempt that is due; return the new state, or None when none was due.

    Idempotent: a duplicate task, or one for a finished delivery, claims nothing and returns None.
    """
    outcome = attempt_make(delivery_id=delivery_id, now=now)
    return outcome.state if outcome else None


def attempt_make(
    *, delivery_id: int, now: datetime | None = None, retry: bool = True
) -> AttemptOutcome | None:
    """Claim the attempt that is due and make it; None when none was due."""
    now = now or timezone.now()
    if not _claim(delivery_id, now, lease_seconds=lease_seconds()):
        return None
    return attempt_claimed(delivery_id=delivery_id, now=now, retry=retry)


def attempt_claimed(
    *, delivery_id: int, now: datetime | None = None, retry: bool = True
) -> AttemptOutcome:
    """The attempt of a delivery this caller holds the claim of: the signed POST through the
    address guard, then the record. `retry=False` ends the delivery at its first failure (a
    test send answers the person now, not in an hour)."""
    now = now or timezone.now()
    timeout = float(settings.WEBHOOK_HTTP_TIMEOUT)
    deadline = float(settings.WEBHOOK_DELIVERY_DEADLINE)
    delivery = WebhookDelivery.objects.select_related("endpoint").get(pk=delivery_id)
    endpoint = delivery.endpoint
    secret = previous = ""
    if not endpoint.is_active:
        result = AttemptResult(
            None, "The endpoint is disabled.", 0, retryable=False, code="endpoint-disabled"
        )
    else:
        try:
            secret = crypto.decrypt(endpoint.secret_encrypted)
        except ValueError:
            result = AttemptResult(
                None,
                "The secret cannot be decrypted; rotate it.",
                0,
                retryable=False,
                code="secret-undecryptable",
            )
        else:
            previous = _previous_secret(endpoint, now)
            body, headers = request_build(
                delivery=delivery,
                secret=secret,
                timestamp=int(time.time()),
                previous_secret=previous,
            )
            result = _post(
                url=endpoint.url, body=body, headers=headers, timeout=timeout, deadline=deadline
            )
    result = dataclasses.replace(result, error=_scrub(_scrub(result.error, previous), secret))
    state = _attempt_record(delivery=delivery, result=result, retry=retry)
    return AttemptOutcome(delivery_id=delivery.pk, result=result, state=state)


def _previous_secret(endpoint: WebhookEndpoint, now: datetime) -> str:
    """The rotated-out secret while its overlap lasts (undecryptable: none)."""
    until = endpoint.previous_secret_expires_at
    if not endpoint.previous_secret_encrypted or until is None or until <= now:
        return ""
    try:
        return crypto.decrypt(endpoint.previous_secret_encrypted)
    except ValueError:
        return ""


@transaction.atomic
def _attempt_record(*, delivery: WebhookDelivery, result: AttemptResult, retry: bool) -> str:
    finished = timezone.now()
    delivery.last_response_status = result.status
    delivery.last_error = result.error
    delivery.duration_ms = result.duration_ms
    countdown = None
    if result.succeeded:
        delivery.state, delivery.finished_at, delivery.next_attempt_at = (
            DeliveryState.SUCCEEDED,
            finished,
            None,
        )
    elif retry and result.retryable and delivery.attempts < MAX_ATTEMPTS:
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
        enqueue_on_commit(DELIVERY_ATTEMPT, delivery.pk, countdown=countdown)
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
        enqueue_on_commit(DELIVERY_ATTEMPT, pk)
    return len(ids)


_HTTP_HINTS = {
    401: "it refused the signature or credentials: check it verifies with this endpoint's "
    "current secret",
    403: "it refused the signature or credentials: check it verifies with this endpoint's "
    "current secret",
    404: "it has no such path: check the URL",
    410: "it has no such path: check the URL",
    429: "it asks to slow down",
}
_CODE_WORDS = {
    "redirect-refused": "The receiver answered with a redirect, which is not followed: "
    "save the final URL instead",
    "timeout": "The receiver did not answer in time",
    "deadline-passed": "The receiver did not send a complete answer within the delivery deadline",
    "connect-failed": "No connection to the receiver: nothing listens there, or it is unreachable",
    "tls-failed": "The receiver's TLS certificate could not be verified (a private CA needs "
    "SSL_CERT_FILE on the server)",
    "transport-failed": "The connection to the receiver broke off",
    "dns-failed": "The receiver's host name could not be resolved",
    "address-not-public": "The address guard refused the receiver's address (not a public one)",
    "endpoint-disabled": "The endpoint is disabled",
    "secret-undecryptable": "The endpoint's secret cannot be decrypted: rotate it",
}


def attempt_words(result: AttemptResult) -> str:
    """One sentence for a person: what the receiver answered, or what went wrong, in words."""
    if result.status is not None and result.code != "redirect-refused":
        phrase = _phrase(result.status)
        if result.succeeded:
            return f"Delivered: the receiver answered HTTP {result.status} {phrase}."
        hint = _HTTP_HINTS.get(result.status) or (
            "it failed on its side" if result.status >= 500 else "it did not accept the event"
        )
        return f"The receiver answered HTTP {result.status} {phrase}: {hint}."
    words = _CODE_WORDS.get(result.code, "The delivery failed")
    detail = f" ({result.error})" if result.error else ""
    return f"{words}{detail}."


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""
