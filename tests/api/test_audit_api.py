"""GET /api/audit/: the team's audit log with the Audit page's filters (one FilterSet)."""

from __future__ import annotations

from memoryadmin.audit import Actor, audit_record
from memoryadmin.models import Scope


def _event(team, action: str, summary: str, **data) -> None:  # type: ignore[no-untyped-def]
    audit_record(actor=Actor.system(), action=action, team=team, summary=summary, data=data)


def test_it_lists_the_teams_audit_log_with_the_pages_filters(
    team, other_team, token_client, django_assert_max_num_queries
):
    _event(team, "source.approve", "Approved source A", note="kept out of the list")
    _event(team, "source.disable", "Disabled source A")
    _event(team, "webhook.create", "Added webhook endpoint https://h.example.org/")
    _event(other_team, "source.approve", "Approved the other team's source")
    api = token_client(team, [Scope.TEAM_MANAGE])

    body = api.get("/api/audit/").json()
    summaries = [row["summary"] for row in body["results"]]
    assert "Approved the other team's source" not in summaries
    assert {"Approved source A", "Disabled source A"} <= set(summaries)
    assert "data" not in body["results"][0] and "kept out" not in str(body)
    sources = api.get("/api/audit/", {"action": "source."}).json()["results"]
    assert [r["action"] for r in sources] == ["source.disable", "source.approve"]
    assert api.get("/api/audit/", {"q": "webhook endpoint"}).json()["count"] == 1
    ordered = api.get("/api/audit/", {"action": "source", "sort": "action"}).json()["results"]
    assert [r["action"] for r in ordered] == ["source.approve", "source.disable"]
    bad = api.get("/api/audit/", {"after": "yesterday"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid-filter"

    with django_assert_max_num_queries(8):
        assert api.get("/api/audit/").status_code == 200
    for n in range(30):
        _event(team, "source.update", f"Changed source {n}")
    with django_assert_max_num_queries(8):
        assert api.get("/api/audit/").status_code == 200

    assert token_client(team, [Scope.SOURCES_READ]).get("/api/audit/").status_code == 403
