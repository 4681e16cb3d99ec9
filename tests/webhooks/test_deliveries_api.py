"""GET /api/webhooks/<id>/deliveries/: the endpoint page's list and filters, over the API."""

from __future__ import annotations

from memoryadmin.models import Scope
from tests.webhooks.conftest import Reply
from webhooks.models import WebhookDelivery


def test_it_lists_an_endpoints_deliveries_with_the_pages_filters(
    team, other_team, receiver, make_endpoint, token_client, django_assert_max_num_queries
):
    endpoint, secret = make_endpoint(receiver.url())
    other, _ = make_endpoint(receiver.url("/other"))
    api = token_client(team, [Scope.TEAM_MANAGE])
    receiver.plan = [Reply(500, body=b"boom")]
    for _ in range(3):
        assert api.post(f"/api/webhooks/{endpoint.pk}/test/").status_code == 200
    api.post(f"/api/webhooks/{other.pk}/test/")

    url = f"/api/webhooks/{endpoint.pk}/deliveries/"
    listed = api.get(url)
    assert listed.status_code == 200
    rows = listed.json()["results"]
    assert len(rows) == 3 and {r["event"] for r in rows} == {"ping"}
    assert [r["state"] for r in rows] == ["succeeded", "succeeded", "failed"]  # newest first
    assert "payload" not in rows[0] and secret not in listed.content.decode()

    failed = api.get(url, {"state": "failed"}).json()["results"]
    assert [r["last_response_status"] for r in failed] == [500]
    assert api.get(url, {"q": "boom"}).json()["count"] == 1
    assert api.get(url, {"status": 200, "sort": "-duration"}).json()["count"] == 2
    bad = api.get(url, {"state": "nope"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid-filter"

    with django_assert_max_num_queries(8):  # token, endpoint, count, page: flat in the rows
        assert api.get(url).status_code == 200
    WebhookDelivery.objects.bulk_create(
        WebhookDelivery(endpoint=endpoint, event="ping", payload={}) for _ in range(30)
    )
    with django_assert_max_num_queries(8):
        assert api.get(url).json()["count"] == 33

    outsider = token_client(other_team, [Scope.TEAM_MANAGE])
    assert outsider.get(url).status_code == 404
    assert token_client(team, [Scope.SOURCES_READ]).get(url).status_code == 403
