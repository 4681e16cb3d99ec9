"""Rotating a secret with an overlap period, the confirmation pages, and the webhooks API."""

from __future__ import annotations

import hashlib
import hmac
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone

from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent, Scope
from webhooks import events
from webhooks.emit import event_emit
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.services.endpoints import endpoint_rotate_secret


def _signed_by(secret: str, received, header: str) -> bool:  # type: ignore[no-untyped-def]
    """The check docs/webhooks.md tells receivers to make, on one header."""
    timestamp = received.headers["X-Memoryadmin-Timestamp"]
    signed = timestamp.encode() + b"." + received.body
    expected = "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return hmac.compare_digest(received.headers.get(header, ""), expected)


def _emit(django_capture_on_commit_callbacks, team) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):
        event_emit(team=team, event=events.PUSH_FAILED, data={"repository": "main"})


def test_it_signs_with_both_secrets_during_the_overlap(
    team, receiver, make_endpoint, settings, django_capture_on_commit_callbacks
):
    settings.WEBHOOK_SECRET_OVERLAP_HOURS = 24
    endpoint, old = make_endpoint(receiver.url())
    endpoint, new = endpoint_rotate_secret(actor=Actor.system(), endpoint=endpoint)
    _emit(django_capture_on_commit_callbacks, team)
    received = receiver.requests[-1]
    assert _signed_by(new, received, "X-Memoryadmin-Signature")
    assert _signed_by(old, received, "X-Memoryadmin-Signature-Previous")
    event = AuditEvent.objects.get(action="webhook.rotate_secret")
    assert event.data["overlap_hours"] == 24 and old not in str(event.data)

    # After the overlap only the new secret signs.
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
        previous_secret_expires_at=timezone.now() - timedelta(seconds=1)
    )
    _emit(django_capture_on_commit_callbacks, team)
    received = receiver.requests[-1]
    assert _signed_by(new, received, "X-Memoryadmin-Signature")
    assert "X-Memoryadmin-Signature-Previous" not in received.headers


def test_it_drops_the_older_secret_when_rotating_again_or_without_overlap(
    team, receiver, make_endpoint, django_capture_on_commit_callbacks
):
    endpoint, first = make_endpoint(receiver.url())
    endpoint, second = endpoint_rotate_secret(actor=Actor.system(), endpoint=endpoint)
    endpoint, third = endpoint_rotate_secret(actor=Actor.system(), endpoint=endpoint)
    _emit(django_capture_on_commit_callbacks, team)
    received = receiver.requests[-1]
    assert _signed_by(third, received, "X-Memoryadmin-Signature")
    assert _signed_by(second, received, "X-Memoryadmin-Signature-Previous")
    assert not _signed_by(first, received, "X-Memoryadmin-Signature-Previous")
    endpoint, _ = endpoint_rotate_secret(actor=Actor.system(), endpoint=endpoint, overlap_hours=0)
    _emit(django_capture_on_commit_callbacks, team)
    assert "X-Memoryadmin-Signature-Previous" not in receiver.requests[-1].headers
    with pytest.raises(ValidationError):
        endpoint_rotate_secret(actor=Actor.system(), endpoint=endpoint, overlap_hours=-1)


def test_it_asks_before_rotating_and_deleting(client, admin_user, team, make_endpoint, settings):
    settings.WEBHOOK_SECRET_OVERLAP_HOURS = 6
    endpoint, secret = make_endpoint("https://hooks.example.org/m")
    client.force_login(admin_user)
    rotate = reverse("webhook-rotate", args=[team.slug, endpoint.pk])
    page = client.get(rotate).content.decode()
    assert "Rotate the signing secret?" in page and "For 6 hours" in page
    assert "X-Memoryadmin-Signature-Previous" in page
    assert WebhookEndpoint.objects.get().secret_encrypted == endpoint.secret_encrypted
    response = client.post(rotate)
    body = response.content.decode()
    assert response.status_code == 200 and "whsec_" in body and secret not in body
    assert "The previous secret also signs deliveries" in body
    delete = reverse("webhook-delete", args=[team.slug, endpoint.pk])
    page = client.get(delete).content.decode()
    assert "Delete this webhook endpoint?" in page and "delivery history" in page
    assert WebhookEndpoint.objects.exists()
    assert client.post(delete).status_code == 302
    assert not WebhookEndpoint.objects.exists()


def test_it_scripts_webhooks_through_the_api(team, token_client, loopback_http):
    api = token_client(team, [Scope.TEAM_MANAGE])
    created = api.post(
        "/api/webhooks/",
        {"url": "https://hooks.example.org/a", "events": [events.PUSH_FAILED]},
        format="json",
    )
    assert created.status_code == 201, created.json()
    assert created["Cache-Control"] == "no-store"
    pk, secret = created.json()["id"], created.json()["secret"]
    assert secret.startswith("whsec_")
    listed = api.get("/api/webhooks/").json()["results"]
    assert [e["id"] for e in listed] == [pk] and "secret" not in listed[0]
    changed = api.patch(
        f"/api/webhooks/{pk}/", {"description": "bot", "active": False}, format="json"
    )
    assert changed.status_code == 200
    assert changed.json()["description"] == "bot" and changed.json()["active"] is False
    assert changed.json()["events"] == [events.PUSH_FAILED]
    rotated = api.post(f"/api/webhooks/{pk}/rotate/", {"overlap_hours": 2}, format="json")
    assert rotated.status_code == 200 and rotated.json()["secret"] != secret
    assert rotated.json()["previous_secret_until"] is not None
    assert secret not in api.get(f"/api/webhooks/{pk}/").content.decode()
    assert api.delete(f"/api/webhooks/{pk}/").status_code == 204
    assert not WebhookEndpoint.objects.exists() and not WebhookDelivery.objects.exists()


def test_it_answers_webhook_api_mistakes_with_codes(team, other_team, token_client, make_endpoint):
    endpoint, _ = make_endpoint("https://hooks.example.org/a")
    api = token_client(team, [Scope.TEAM_MANAGE])
    insecure = api.post("/api/webhooks/", {"url": "http://example.org/h"}, format="json")
    assert insecure.status_code == 400 and "url" in insecure.json()["error"]["details"]
    unknown = api.patch(f"/api/webhooks/{endpoint.pk}/", {"events": ["nope"]}, format="json")
    assert unknown.status_code == 400
    wrong = api.get(f"/api/webhooks/{endpoint.pk}/rotate/")
    assert wrong.status_code == 405 and wrong.json()["error"]["details"] == {"allowed": ["POST"]}
    reader = token_client(team, [Scope.SOURCES_READ, Scope.REVIEWS_READ])
    assert reader.get("/api/webhooks/").status_code == 403
    other = token_client(other_team, [Scope.TEAM_MANAGE])
    assert other.get(f"/api/webhooks/{endpoint.pk}/").status_code == 404
    assert other.delete(f"/api/webhooks/{endpoint.pk}/").status_code == 404
    assert WebhookEndpoint.objects.count() == 1


def test_it_accepts_both_secrets_with_the_snippet_from_the_docs(
    team, receiver, make_endpoint, django_capture_on_commit_callbacks
):
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "webhooks.md").read_text()
    blocks = [block.split("```")[0] for block in text.split("```python")[1:]]
    namespace: dict = {}
    for block in blocks:
        if "def verify" in block or "def either_verifies" in block:
            exec(block, namespace)  # noqa: S102 - our own documentation
    endpoint, old = make_endpoint(receiver.url())
    _, new = endpoint_rotate_secret(actor=Actor.system(), endpoint=endpoint, overlap_hours=1)
    _emit(django_capture_on_commit_callbacks, team)
    [received] = receiver.requests
    for secret in (old, new):
        assert namespace["either_verifies"](secret, received.headers, received.body)
    assert not namespace["either_verifies"]("whsec_wrong", received.headers, received.body)
