"""An endpoint's delivery list: filters and CSV."""

from __future__ import annotations

import csv
import io

from memoryadmin.audit import Actor


def test_it_filters_an_endpoints_deliveries(client, admin_user, team, make_endpoint):
    from webhooks.services.endpoints import endpoint_ping

    endpoint, _ = make_endpoint("https://hooks.example.org/in")
    endpoint_ping(actor=Actor(user=admin_user), endpoint=endpoint)
    client.force_login(admin_user)
    url = f"/t/{team.slug}/webhooks/{endpoint.pk}/"
    assert len(client.get(url, {"event": "ping"}).context["page"].object_list) == 1
    assert len(client.get(url, {"event": "proposal."}).context["page"].object_list) == 0
    assert client.get(url, {"state": "exploded"}).status_code == 400
    response = client.get(url, {"export": "csv"})
    assert response["Content-Type"] == "text/csv"
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0][:3] == ["uid", "event", "state"] and rows[1][1] == "ping"
