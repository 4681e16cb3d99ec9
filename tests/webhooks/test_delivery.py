"""Events become signed deliveries to a real receiver on 127.0.0.1, with retries."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import socket
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import transaction
from django.utils import timezone

from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent
from webhooks import events
from webhooks.delivery import MAX_ATTEMPTS, delivery_attempt, delivery_redeliver
from webhooks.emit import event_emit
from webhooks.models import DeliveryState, WebhookDelivery, WebhookEndpoint
from webhooks.services.endpoints import (
    endpoint_ping,
    endpoint_rotate_secret,
    endpoint_set_active,
    endpoint_update,
)
from webhooks.tasks import deliveries_queue_due

from .conftest import Reply


def _verify(secret: str, received) -> None:  # type: ignore[no-untyped-def]
    """Exactly the check docs/webhooks.md tells receivers to make."""
    timestamp = received.headers["X-Memoryadmin-Timestamp"]
    signed = timestamp.encode() + b"." + received.body
    expected = "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(received.headers["X-Memoryadmin-Signature"], expected)
    assert abs(time.time() - int(timestamp)) < 60


def _emit(django_capture_on_commit_callbacks, team, event=events.PUSH_FAILED, data=None):  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):
        event_emit(team=team, event=event, data=data or {"repository": "main"})


def _due(delivery: WebhookDelivery) -> str | None:
    """Run the next attempt as if its backoff had elapsed."""
    delivery.refresh_from_db()
    return delivery_attempt(delivery_id=delivery.pk, now=delivery.next_attempt_at)


def test_it_posts_signed_json_with_the_documented_headers(
    team, receiver, make_endpoint, django_capture_on_commit_callbacks
):
    endpoint, secret = make_endpoint(receiver.url("/hook?x=1"))
    _emit(django_capture_on_commit_callbacks, team, data={"repository": "main", "n": 3})

    [received] = receiver.requests
    assert received.path == "/hook?x=1"
    _verify(secret, received)
    delivery = WebhookDelivery.objects.get()
    assert received.headers["Content-Type"] == "application/json"
    assert received.headers["X-Memoryadmin-Event"] == "push.failed"
    assert received.headers["X-Memoryadmin-Delivery"] == str(delivery.uid)
    assert received.headers["Host"] == f"127.0.0.1:{receiver.port}"
    body = json.loads(received.body)
    assert set(body) == {"id", "event", "team", "created_at", "data"}
    assert body["event"] == "push.failed" and body["team"] == "alpha"
    assert body["data"] == {"repository": "main", "n": 3}
    assert body["created_at"].endswith("Z")
    assert delivery.state == DeliveryState.SUCCEEDED
    assert (delivery.attempts, delivery.last_response_status, delivery.last_error) == (1, 200, "")
    assert delivery.duration_ms is not None and delivery.finished_at is not None
    endpoint.refresh_from_db()
    assert (endpoint.last_delivery_state, endpoint.last_response_status) == ("succeeded", 200)


def test_it_sends_only_to_active_endpoints_subscribed_to_the_event(
    team, other_team, receiver, make_endpoint, django_capture_on_commit_callbacks
):
    make_endpoint(receiver.url("/all"))
    make_endpoint(receiver.url("/push"), events=[events.PUSH_FAILED])
    make_endpoint(receiver.url("/stale"), events=[events.SOURCE_STALE])
    off, _ = make_endpoint(receiver.url("/off"))
    endpoint_set_active(actor=Actor.system(), endpoint=off, active=False)
    make_endpoint(receiver.url("/other-team"), team=other_team)

    _emit(django_capture_on_commit_callbacks, team)

    assert sorted(r.path for r in receiver.requests) == ["/all", "/push"]
    bodies = [json.loads(r.body) for r in receiver.requests]
    assert bodies[0]["id"] == bodies[1]["id"], "one event id shared by its deliveries"
    assert len({r.headers["X-Memoryadmin-Delivery"] for r in receiver.requests}) == 2


def test_it_retries_a_500_with_growing_backoff_then_succeeds(
    team, receiver, make_endpoint, django_capture_on_commit_callbacks
):
    _, secret = make_endpoint(receiver.url())
    receiver.plan = [Reply(500, body=b"boom"), Reply(503), Reply(200)]
    before = timezone.now()
    _emit(django_capture_on_commit_callbacks, team)

    delivery = WebhookDelivery.objects.get()
    assert (delivery.state, delivery.attempts, delivery.last_response_status) == (
        "retrying",
        1,
        500,
    )
    assert "HTTP 500" in delivery.last_error and "boom" in delivery.last_error
    first_wait = delivery.next_attempt_at - before
    assert timedelta(seconds=14) < first_wait < timedelta(seconds=32)
    # Not due yet: a duplicate or early task claims nothing and sends nothing.
    assert delivery_attempt(delivery_id=delivery.pk) is None
    assert len(receiver.requests) == 1

    assert _due(delivery) == "retrying"
    delivery.refresh_from_db()
    assert delivery.attempts == 2
    assert delivery.next_attempt_at - timezone.now() > first_wait / 2  # backoff doubled (± jitter)
    assert _due(delivery) == "succeeded"
    delivery.refresh_from_db()
    assert (delivery.attempts, delivery.last_response_status, delivery.last_error) == (3, 200, "")
    assert len({r.headers["X-Memoryadmin-Delivery"] for r in receiver.requests}) == 1
    for received in receiver.requests:
        _verify(secret, received)
    assert delivery_attempt(delivery_id=delivery.pk, now=timezone.now()) is None


def test_it_honours_retry_after_on_429(
    team, receiver, make_endpoint, django_capture_on_commit_callbacks
):
    make_endpoint(receiver.url())
    receiver.plan = [Reply(429, headers={"Retry-After": "600"})]
    _emit(django_capture_on_commit_callbacks, team)
    delivery = WebhookDelivery.objects.get()
    assert delivery.state == "retrying"
    assert delivery.next_attempt_at - timezone.now() > timedelta(seconds=590)


def test_it_fails_a_4xx_at_once(team, receiver, make_endpoint, django_capture_on_commit_callbacks):
    endpoint, _ = make_endpoint(receiver.url())
    receiver.plan = [Reply(410, body=b"gone")]
    _emit(django_capture_on_commit_callbacks, team)
    delivery = WebhookDelivery.objects.get()
    assert (delivery.state, delivery.attempts, delivery.last_response_status) == ("failed", 1, 410)
    assert delivery.last_error == "HTTP 410 Gone: gone"
    assert delivery.next_attempt_at is None and delivery.finished_at is not None
    endpoint.refresh_from_db()
    assert (endpoint.last_delivery_state, endpoint.last_response_status) == ("failed", 410)


def test_it_does_not_follow_redirects(
    team, receiver, make_endpoint, django_capture_on_commit_callbacks
):
    make_endpoint(receiver.url("/old"))
    receiver.plan = [Reply(302, headers={"Location": receiver.url("/new")})]
    _emit(django_capture_on_commit_callbacks, team)
    assert [r.path for r in receiver.requests] == ["/old"]
    delivery = WebhookDelivery.objects.get()
    assert delivery.state == "failed" and "redirects are not followed" in delivery.last_error


def test_it_gives_up_after_the_last_attempt(
    team, receiver, make_endpoint, django_capture_on_commit_callbacks
):
    make_endpoint(receiver.url())
    receiver.plan = [Reply(500)] * MAX_ATTEMPTS + [Reply(200)]
    _emit(django_capture_on_commit_callbacks, team)
    delivery = WebhookDelivery.objects.get()
    for _ in range(MAX_ATTEMPTS - 1):
        _due(delivery)
    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempts) == ("failed", MAX_ATTEMPTS)
    assert len(receiver.requests) == MAX_ATTEMPTS


def test_it_retries_after_a_timeout(
    team, receiver, make_endpoint, settings, django_capture_on_commit_callbacks
):
    settings.WEBHOOK_HTTP_TIMEOUT = 1
    make_endpoint(receiver.url())
    receiver.plan = [Reply(200, delay=5)]
    _emit(django_capture_on_commit_callbacks, team)
    delivery = WebhookDelivery.objects.get()
    assert delivery.state == "retrying"
    assert delivery.last_error == "Timed out after 1s."  # the 1 s timeout fired, not the 5 s reply
    assert delivery.last_response_status is None
    assert _due(delivery) == "succeeded"


def test_it_retries_when_the_connection_is_refused(
    team, make_endpoint, django_capture_on_commit_callbacks
):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once we leave: nothing listens there
    make_endpoint(f"http://127.0.0.1:{port}/hook")
    _emit(django_capture_on_commit_callbacks, team)
    delivery = WebhookDelivery.objects.get()
    assert delivery.state == "retrying" and "ConnectError" in delivery.last_error


def test_it_refuses_loopback_when_private_addresses_are_not_allowed(
    team, receiver, make_endpoint, settings, django_capture_on_commit_callbacks
):
    make_endpoint(receiver.url())
    make_endpoint(receiver.url(host="localhost"))
    settings.SOURCE_ALLOW_PRIVATE_ADDRESSES = False
    _emit(django_capture_on_commit_callbacks, team)
    assert receiver.requests == []
    deliveries = list(WebhookDelivery.objects.all())
    assert [d.state for d in deliveries] == ["failed", "failed"]
    assert all("private, loopback" in d.last_error for d in deliveries)


def test_it_delivers_over_https_to_the_checked_address_with_the_right_certificate_name(
    team, tls_receiver, make_endpoint, django_capture_on_commit_callbacks
):
    _, secret = make_endpoint(tls_receiver.url(host="localhost"))
    _emit(django_capture_on_commit_callbacks, team)
    [received] = tls_receiver.requests
    _verify(secret, received)
    assert received.headers["Host"] == f"localhost:{tls_receiver.port}"
    assert WebhookDelivery.objects.get().state == "succeeded"


def test_it_sends_nothing_when_the_callers_transaction_rolls_back(
    team, receiver, make_endpoint, django_capture_on_commit_callbacks
):
    make_endpoint(receiver.url())
    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        event_emit(team=team, event=events.PROPOSAL_CREATED, data={"id": 1})
        assert WebhookDelivery.objects.count() == 1
        raise RuntimeError("the caller's action failed")
    assert callbacks == []
    assert WebhookDelivery.objects.count() == 0
    assert receiver.requests == []


def test_it_never_blocks_the_caller_when_the_endpoint_fails(
    team, receiver, make_endpoint, django_capture_on_commit_callbacks
):
    make_endpoint(receiver.url())
    receiver.plan = [Reply(500)]
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        event_emit(team=team, event=events.IMPORT_FINISHED, data={"ok": True})
        AuditEvent.objects.create(team=team, actor_label="caller", action="x", summary="s")
    assert AuditEvent.objects.filter(action="x").exists()
    assert WebhookDelivery.objects.get().state == "retrying"


def test_it_rejects_unknown_events_and_is_a_no_op_without_endpoints(team):
    with pytest.raises(ValueError, match="unknown webhook event"):
        event_emit(team=team, event="proposal.creatd", data={})
    event_emit(team=team, event=events.SOURCE_DENIED, data={})
    assert WebhookDelivery.objects.count() == 0


def test_it_fails_deliveries_of_a_disabled_endpoint(
    team, receiver, make_endpoint, django_capture_on_commit_callbacks
):
    endpoint, _ = make_endpoint(receiver.url())
    receiver.plan = [Reply(500)]
    _emit(django_capture_on_commit_callbacks, team)
    endpoint_set_active(actor=Actor.system(), endpoint=endpoint, active=False)
    assert _due(WebhookDelivery.objects.get()) == "failed"
    assert WebhookDelivery.objects.get().last_error == "The endpoint is disabled."
    assert len(receiver.requests) == 1


def test_it_requeues_due_deliveries_whose_task_was_lost(
    team, receiver, make_endpoint, django_capture_on_commit_callbacks
):
    endpoint, _ = make_endpoint(receiver.url())
    lost = WebhookDelivery.objects.create(
        endpoint=endpoint, event="ping", payload={"id": "x", "event": "ping"}
    )
    WebhookDelivery.objects.filter(pk=lost.pk).update(
        next_attempt_at=timezone.now() - timedelta(minutes=5)
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert deliveries_queue_due() == 1
    lost.refresh_from_db()
    assert lost.state == "succeeded" and len(receiver.requests) == 1


def test_it_never_lets_the_secret_reach_rows_audit_or_logs(
    team, admin_user, receiver, make_endpoint, caplog, django_capture_on_commit_callbacks
):
    caplog.set_level(logging.DEBUG)
    endpoint, secret = make_endpoint(receiver.url())
    # A receiver that echoes the secret back in its error body must not get it stored.
    receiver.plan = [Reply(400, body=f"bad signature for {secret}".encode())]
    _emit(django_capture_on_commit_callbacks, team)
    actor = Actor(user=admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        endpoint_ping(actor=actor, endpoint=endpoint)
        delivery_redeliver(actor=actor, delivery=WebhookDelivery.objects.last())
    _, rotated = endpoint_rotate_secret(actor=actor, endpoint=endpoint)
    endpoint_update(
        actor=actor, endpoint=endpoint, url=receiver.url("/v2"), events=[], description="d"
    )

    failed = WebhookDelivery.objects.get(last_response_status=400)
    assert failed.last_error == "HTTP 400 Bad Request: bad signature for [secret]"
    stored = [json.dumps([d.payload, d.last_error]) for d in WebhookDelivery.objects.all()]
    audit = [json.dumps([e.summary, e.data]) for e in AuditEvent.objects.all()]
    endpoint_row = json.dumps(list(WebhookEndpoint.objects.values().get().values()), default=str)
    for text in [*stored, *audit, endpoint_row, caplog.text]:
        assert secret not in text and rotated not in text
    assert {"webhook.create", "webhook.ping", "webhook.redeliver", "webhook.rotate_secret"} <= set(
        AuditEvent.objects.values_list("action", flat=True)
    )
    assert "webhook delivery" in caplog.text  # the logs were captured at all


def test_it_checks_the_certificate_against_the_url_host_not_the_address(
    team, tls_receiver, make_endpoint, django_capture_on_commit_callbacks
):
    make_endpoint(tls_receiver.url(host="127.0.0.1"))  # the certificate names only localhost
    _emit(django_capture_on_commit_callbacks, team)
    delivery = WebhookDelivery.objects.get()
    assert delivery.state == "retrying" and "CERTIFICATE_VERIFY_FAILED" in delivery.last_error
    assert tls_receiver.requests == []


def test_it_verifies_with_the_snippet_from_the_docs(
    team, receiver, make_endpoint, django_capture_on_commit_callbacks
):
    text = (Path(__file__).resolve().parents[2] / "docs" / "webhooks.md").read_text()
    [snippet] = [block for block in text.split("```python")[1:] if "def verify" in block]
    namespace: dict = {}
    exec(snippet.split("```")[0], namespace)  # noqa: S102 - our own documentation
    _, secret = make_endpoint(receiver.url())
    _emit(django_capture_on_commit_callbacks, team)
    [received] = receiver.requests
    assert namespace["verify"](secret, received.headers, received.body)
    assert not namespace["verify"](secret, received.headers, received.body + b" ")
    assert not namespace["verify"]("whsec_wrong", received.headers, received.body)
