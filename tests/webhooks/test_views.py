"""The webhook pages: team admins only, the secret shown once, every change audited."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent, Role
from webhooks import events
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.services.endpoints import endpoint_delete

from .conftest import Reply


def _list_url(team) -> str:  # type: ignore[no-untyped-def]
    return reverse("webhook-list", kwargs={"team_slug": team.slug})


def _url(name: str, endpoint: WebhookEndpoint, **extra: int) -> str:
    kwargs = {"team_slug": endpoint.team.slug, "endpoint_id": endpoint.pk, **extra}
    return reverse(name, kwargs=kwargs)


def _secret_in(html: str) -> str:
    match = re.search(r'<code id="new-webhook-secret">(whsec_[\w-]+)</code>', html)
    assert match, "no secret on the page"
    return match.group(1)


def test_it_adds_an_endpoint_and_shows_its_secret_once(client, team, admin_user, loopback_http):
    client.force_login(admin_user)
    response = client.post(
        _list_url(team),
        {
            "url": "https://hooks.example.org/m",
            "events": [events.PUSH_FAILED, events.SOURCE_STALE],
            "description": "on-call",
        },
    )
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    html = response.content.decode()
    secret = _secret_in(html)
    assert html.count(secret) == 1
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.events == [events.PUSH_FAILED, events.SOURCE_STALE]
    assert endpoint.created_by == admin_user and endpoint.secret_encrypted
    assert secret not in endpoint.secret_encrypted

    for page in (_list_url(team), _url("webhook-detail", endpoint)):
        assert secret not in client.get(page).content.decode()
    event = AuditEvent.objects.get(action="webhook.create")
    assert event.actor_user == admin_user and event.data["url"] == "https://hooks.example.org/m"


def test_it_refuses_plain_http_and_unknown_events(client, team, admin_user, settings):
    settings.SOURCE_ALLOW_HTTP_LOOPBACK = False
    client.force_login(admin_user)
    response = client.post(_list_url(team), {"url": "http://127.0.0.1:9/h"})
    assert "must use https://" in response.content.decode()
    response = client.post(_list_url(team), {"url": "https://a.example/h", "events": ["nope"]})
    assert response.status_code == 200 and "new-webhook-secret" not in response.content.decode()
    assert not WebhookEndpoint.objects.exists()


def test_it_edits_toggles_rotates_pings_redelivers_and_deletes_with_audit_events(
    client, team, admin_user, receiver, make_endpoint, django_capture_on_commit_callbacks
):
    client.force_login(admin_user)
    endpoint, first_secret = make_endpoint(receiver.url())

    response = client.post(
        _url("webhook-detail", endpoint),
        {"url": receiver.url("/v2"), "events": [events.DECISION_MADE], "description": "x"},
    )
    assert response.status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.url.endswith("/v2") and endpoint.events == [events.DECISION_MADE]

    response = client.post(_url("webhook-rotate", endpoint))
    new_secret = _secret_in(response.content.decode())
    assert new_secret != first_secret and response["Cache-Control"] == "no-store"
    assert new_secret not in client.get(_url("webhook-detail", endpoint)).content.decode()

    receiver.plan = [Reply(404)]
    with django_capture_on_commit_callbacks(execute=True):
        client.post(_url("webhook-ping", endpoint))
    delivery = WebhookDelivery.objects.get()
    assert (delivery.event, delivery.state, delivery.last_response_status) == (
        "ping",
        "failed",
        404,
    )
    page = client.get(_url("webhook-detail", endpoint)).content.decode()
    assert "HTTP 404 Not Found" in page and "Redeliver" in page

    with django_capture_on_commit_callbacks(execute=True):
        client.post(_url("webhook-redeliver", endpoint, delivery_id=delivery.pk))
    again = WebhookDelivery.objects.exclude(pk=delivery.pk).get()
    assert again.redelivery_of == delivery and again.state == "succeeded"
    assert again.payload["id"] == delivery.payload["id"] and again.uid != delivery.uid
    assert [r.headers["X-Memoryadmin-Event"] for r in receiver.requests] == ["ping", "ping"]

    client.post(_url("webhook-active", endpoint), {"active": "false"})
    endpoint.refresh_from_db()
    assert not endpoint.is_active
    response = client.post(_url("webhook-ping", endpoint), follow=True)
    assert "Enable the endpoint" in response.content.decode()
    client.post(_url("webhook-active", endpoint), {"active": "true"})

    response = client.post(_url("webhook-delete", endpoint))
    assert response.status_code == 302 and not WebhookEndpoint.objects.exists()
    assert list(
        AuditEvent.objects.filter(action__startswith="webhook.")
        .order_by("id")
        .values_list("action", flat=True)
    ) == [
        "webhook.create",
        "webhook.update",
        "webhook.rotate_secret",
        "webhook.test",
        "webhook.redeliver",
        "webhook.disable",
        "webhook.enable",
        "webhook.delete",
    ]


@pytest.mark.parametrize("role", [Role.VIEWER, Role.REVIEWER])
def test_it_forbids_members_below_admin(client, team, make_user, make_endpoint, role):
    endpoint, _ = make_endpoint("https://hooks.example.org/m")
    client.force_login(make_user("someone", team=team, role=role))
    assert client.get(_list_url(team)).status_code == 403
    assert client.get(_url("webhook-detail", endpoint)).status_code == 403
    for name in ("webhook-rotate", "webhook-delete", "webhook-ping", "webhook-active"):
        assert client.post(_url(name, endpoint)).status_code == 403
    assert client.post(_list_url(team), {"url": "https://x.example/"}).status_code == 403
    assert WebhookEndpoint.objects.count() == 1
    assert not AuditEvent.objects.filter(action="webhook.rotate_secret").exists()


def test_it_hides_other_teams_endpoints(client, team, other_team, make_user, make_endpoint):
    endpoint, _ = make_endpoint("https://hooks.example.org/m")
    outsider = make_user("olga", team=other_team, role=Role.ADMIN)
    client.force_login(outsider)
    assert client.get(_list_url(team)).status_code == 404
    assert client.get(_url("webhook-detail", endpoint)).status_code == 404
    # Their own team's URL with our endpoint's id is a 404 too.
    foreign = reverse(
        "webhook-rotate", kwargs={"team_slug": other_team.slug, "endpoint_id": endpoint.pk}
    )
    assert client.post(foreign).status_code == 404
    assert client.post(_url("webhook-delete", endpoint)).status_code == 404
    assert WebhookEndpoint.objects.count() == 1


def test_it_lists_endpoints_and_deliveries_in_constant_queries(
    client, team, admin_user, make_endpoint, django_assert_num_queries
):
    client.force_login(admin_user)
    endpoints = [make_endpoint(f"https://h{i}.example.org/")[0] for i in range(3)]

    def add_deliveries(n: int) -> None:
        WebhookDelivery.objects.bulk_create(
            WebhookDelivery(endpoint=endpoints[0], event="ping", payload={}) for _ in range(n)
        )

    add_deliveries(2)
    client.get(_list_url(team))  # warm the session and role caches equally for both sizes
    with django_assert_num_queries(6) as few:  # session, user, team, role, nav teams, list
        assert client.get(_list_url(team)).status_code == 200
    with django_assert_num_queries(8):  # …, endpoint, count, page
        assert client.get(_url("webhook-detail", endpoints[0])).status_code == 200
    endpoints += [make_endpoint(f"https://g{i}.example.org/")[0] for i in range(10)]
    add_deliveries(40)
    with django_assert_num_queries(len(few.captured_queries)):
        assert client.get(_list_url(team)).status_code == 200
    with django_assert_num_queries(8):
        response = client.get(_url("webhook-detail", endpoints[0]))
    assert 'rel="next"' in response.content.decode()
    assert 'hx-trigger="every 3s"' in response.content.decode()  # pending rows poll for updates


def test_it_sends_a_test_event_from_the_page(
    client, team, admin_user, receiver, make_endpoint, django_capture_on_commit_callbacks
):
    client.force_login(admin_user)
    endpoint, _ = make_endpoint(receiver.url(), events=[events.SOURCE_STALE])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(_url("webhook-ping", endpoint), follow=True)
    assert "Test event sent. Delivered" in response.content.decode()
    [received] = receiver.requests
    assert received.headers["X-Memoryadmin-Event"] == "ping"
    endpoint_delete(actor=Actor.system(), endpoint=endpoint)
    assert not WebhookDelivery.objects.exists()
