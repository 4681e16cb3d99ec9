"""'Send test' (a signed ping sent now, its answer shown) and 'End the overlap now' after a
rotation, in the page and the API, against a real receiver on 127.0.0.1."""

from __future__ import annotations

import hashlib
import hmac
import socket

from django.urls import reverse

from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent, Scope
from tests.webhooks.conftest import Reply
from webhooks import events
from webhooks.emit import event_emit
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.services.endpoints import endpoint_rotate_secret, endpoint_set_active

PREVIOUS = "X-Memoryadmin-Signature-Previous"


def _signed_by(secret: str, received) -> bool:  # type: ignore[no-untyped-def]
    signed = received.headers["X-Memoryadmin-Timestamp"].encode() + b"." + received.body
    expected = "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return hmac.compare_digest(received.headers["X-Memoryadmin-Signature"], expected)


def _url(name: str, endpoint: WebhookEndpoint) -> str:
    return reverse(name, args=[endpoint.team.slug, endpoint.pk])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_it_sends_a_test_now_and_shows_what_the_receiver_answered(
    client, admin_user, receiver, make_endpoint
):
    client.force_login(admin_user)
    endpoint, secret = make_endpoint(receiver.url(), events=[events.SOURCE_STALE])
    response = client.post(_url("webhook-ping", endpoint), follow=True)
    page = response.content.decode()
    assert "Test event sent. Delivered: the receiver answered HTTP 200 OK." in page
    [received] = receiver.requests  # sent in the request itself, no worker, no on-commit
    assert received.headers["X-Memoryadmin-Event"] == "ping" and _signed_by(secret, received)
    delivery = WebhookDelivery.objects.get()
    assert (delivery.event, delivery.state, delivery.attempts) == ("ping", "succeeded", 1)
    assert str(delivery.uid) == received.headers["X-Memoryadmin-Delivery"]
    assert "1 attempt" in page and "<code>ping</code>" in page  # in the deliveries list
    event = AuditEvent.objects.get(action="webhook.test")
    assert event.data["delivery"] == str(delivery.uid) and secret not in str(event.data)


def test_it_says_a_refusal_in_words_and_does_not_retry_a_test(
    client, admin_user, receiver, make_endpoint
):
    client.force_login(admin_user)
    endpoint, _ = make_endpoint(receiver.url())
    receiver.plan = [Reply(503, body=b"down for maintenance")]
    page = client.post(_url("webhook-ping", endpoint), follow=True).content.decode()
    assert "Test event failed. The receiver answered HTTP 503 Service Unavailable" in page
    assert "it failed on its side" in page
    delivery = WebhookDelivery.objects.get()
    # A 503 is retried for a real event; a test ends at once and says so.
    assert (delivery.state, delivery.attempts, delivery.next_attempt_at) == ("failed", 1, None)
    assert len(receiver.requests) == 1


def test_it_answers_the_test_in_the_api_with_a_code(team, receiver, make_endpoint, token_client):
    endpoint, _ = make_endpoint(receiver.url())
    api = token_client(team, [Scope.TEAM_MANAGE])
    answer = api.post(f"/api/webhooks/{endpoint.pk}/test/")
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert (body["succeeded"], body["code"], body["status"]) == (True, "delivered", 200)
    assert body["delivery"]["state"] == "succeeded" and "payload" not in body["delivery"]
    assert body["delivery"]["uid"] == receiver.requests[0].headers["X-Memoryadmin-Delivery"]

    receiver.plan = [Reply(404)]
    body = api.post(f"/api/webhooks/{endpoint.pk}/test/").json()
    assert (body["succeeded"], body["code"], body["status"]) == (False, "http-status", 404)
    assert "no such path: check the URL" in body["message"]

    nobody = WebhookEndpoint.objects.filter(pk=endpoint.pk)
    nobody.update(url=f"http://127.0.0.1:{_free_port()}/hook")
    body = api.post(f"/api/webhooks/{endpoint.pk}/test/").json()
    assert (body["code"], body["status"]) == ("connect-failed", None)
    assert body["message"].startswith("No connection to the receiver")
    assert WebhookDelivery.objects.filter(state="failed").count() == 2
    assert AuditEvent.objects.filter(action="webhook.test").count() == 3


def test_it_sends_the_test_through_the_address_guard(
    team, receiver, make_endpoint, token_client, settings
):
    endpoint, _ = make_endpoint(receiver.url())
    settings.SOURCE_ALLOW_PRIVATE_ADDRESSES = False
    body = token_client(team, [Scope.TEAM_MANAGE]).post(f"/api/webhooks/{endpoint.pk}/test/")
    assert body.json()["code"] == "address-not-public", body.json()
    assert "address guard refused" in body.json()["message"]
    assert receiver.requests == []
    assert WebhookDelivery.objects.get().state == "failed"


def test_it_refuses_a_test_to_a_disabled_endpoint_or_without_the_scope(
    team, admin_user, receiver, make_endpoint, token_client
):
    endpoint, _ = make_endpoint(receiver.url())
    endpoint_set_active(actor=Actor(user=admin_user), endpoint=endpoint, active=False)
    api = token_client(team, [Scope.TEAM_MANAGE])
    refused = api.post(f"/api/webhooks/{endpoint.pk}/test/")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "endpoint-disabled"
    reader = token_client(team, [Scope.SOURCES_READ])
    assert reader.post(f"/api/webhooks/{endpoint.pk}/test/").status_code == 403
    assert api.get(f"/api/webhooks/{endpoint.pk}/test/").status_code == 405
    assert receiver.requests == [] and not WebhookDelivery.objects.exists()
    assert not AuditEvent.objects.filter(action="webhook.test").exists()


def _emit(django_capture_on_commit_callbacks, team) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):
        event_emit(team=team, event=events.PUSH_FAILED, data={"repository": "main"})


def test_it_ends_the_overlap_from_the_page_after_a_confirmation(
    client, team, admin_user, receiver, make_endpoint, django_capture_on_commit_callbacks
):
    client.force_login(admin_user)
    endpoint, _ = make_endpoint(receiver.url())
    endpoint, new = endpoint_rotate_secret(actor=Actor.system(), endpoint=endpoint, overlap_hours=5)
    detail = client.get(_url("webhook-detail", endpoint)).content.decode()
    assert "End the overlap now…" in detail and "in 4 hours" in detail  # 4 h 59 min from now
    _emit(django_capture_on_commit_callbacks, team)
    assert PREVIOUS in receiver.requests[-1].headers

    confirm = client.get(_url("webhook-end-overlap", endpoint)).content.decode()
    assert "End the overlap now?" in confirm and "only the current secret signs" in confirm
    assert WebhookEndpoint.objects.get().previous_secret_encrypted  # a GET changes nothing
    response = client.post(_url("webhook-end-overlap", endpoint), follow=True)
    assert "Overlap ended" in response.content.decode()
    assert "End the overlap now…" not in response.content.decode()
    stored = WebhookEndpoint.objects.get()
    assert (stored.previous_secret_encrypted, stored.previous_secret_expires_at) == ("", None)

    _emit(django_capture_on_commit_callbacks, team)
    received = receiver.requests[-1]
    assert PREVIOUS not in received.headers and _signed_by(new, received)
    event = AuditEvent.objects.get(action="webhook.end_overlap")
    assert event.actor_user_id == admin_user.pk and event.data["would_have_ended"]

    again = client.get(_url("webhook-end-overlap", endpoint), follow=True).content.decode()
    assert "there is no overlap to end" in again


def test_it_ends_the_overlap_through_the_api(
    team, receiver, make_endpoint, token_client, django_capture_on_commit_callbacks
):
    endpoint, _ = make_endpoint(receiver.url())
    api = token_client(team, [Scope.TEAM_MANAGE])
    assert api.post(f"/api/webhooks/{endpoint.pk}/rotate/").status_code == 200
    ended = api.post(f"/api/webhooks/{endpoint.pk}/end-overlap/")
    assert ended.status_code == 200 and ended.json()["previous_secret_until"] is None
    _emit(django_capture_on_commit_callbacks, team)
    assert PREVIOUS not in receiver.requests[-1].headers
    twice = api.post(f"/api/webhooks/{endpoint.pk}/end-overlap/")
    assert twice.status_code == 409 and twice.json()["error"]["code"] == "no-overlap"
    assert AuditEvent.objects.filter(action="webhook.end_overlap").count() == 1
