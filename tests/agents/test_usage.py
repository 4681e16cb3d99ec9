"""Usage counting on the read path: one upsert per read, whatever the number of results, for
search, precheck, get and context over REST; the counters and the pages that show them."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from bundles.models import UsageCounter, UsageKind
from bundles.usage.counting import usage_count
from memoryadmin.audit import Actor
from memoryadmin.models import ApiToken, Role
from reviews.models import Memory

READ = ["context:read"]


def _served(team) -> dict[str, int]:  # type: ignore[no-untyped-def]
    rows = UsageCounter.objects.filter(team=team, kind=UsageKind.SERVED)
    return dict(rows.values_list("key", "count"))


def _usage_statements(queries) -> list[str]:  # type: ignore[no-untyped-def]
    return [q["sql"] for q in queries if "bundles_usagecounter" in q["sql"]]


def test_it_counts_every_rest_read_with_the_token_and_the_day(world, team, token_client):
    client = token_client(team, READ)
    found = client.get("/api/search/", {"q": "upload", "limit": 3}).json()["results"]
    client.post("/api/precheck/", {"plan": "move the upload queue"}, format="json")
    ref = Memory.objects.get(memory_id="20260307-new-queue").ref
    got = client.get(f"/api/memories/{ref}/").json()["memory"]
    client.get("/api/context/", {"include": "repositories"})
    served = _served(team)
    for result in found:
        assert served[result["ref"]] >= 1
    # the memory was returned by precheck, get and the context list: three reads
    assert served[got["ref"]] >= 3
    token = ApiToken.objects.get(team=team)
    counter = UsageCounter.objects.get(team=team, key=got["ref"])
    assert counter.last_token_id == token.pk and counter.last_label == token.name
    activity = UsageCounter.objects.filter(team=team, kind=UsageKind.ACTIVITY)
    assert dict(activity.values_list("operation", "count")) == {
        "search": 1,
        "precheck": 1,
        "get": 1,
        "context": 1,
    }
    assert {row.last_token_id for row in activity} == {token.pk}


@pytest.mark.parametrize(
    ("method", "path", "data"),
    [
        ("get", "/api/search/", {"q": "upload", "limit": 10, "include_flagged": "true"}),
        ("post", "/api/precheck/", {"plan": "move the upload queue", "paths": ["src/payments/a"]}),
        ("get", "/api/context/", {"include": "repositories"}),
    ],
)
def test_it_counts_a_read_in_exactly_one_statement(world, team, token_client, method, path, data):
    client = token_client(team, READ)
    for _ in range(2):  # the first read inserts, the second updates: still one statement each
        with CaptureQueriesContext(connection) as queries:
            response = getattr(client, method)(path, data, format="json")
        assert response.status_code == 200
        statements = _usage_statements(queries.captured_queries)
        assert len(statements) == 1, statements
        statement = statements[0].lstrip().upper()
        assert "ON CONFLICT" in statement
        if connection.vendor == "postgresql":  # the audit event rides in the same statement
            assert statement.startswith("WITH AUDIT AS (INSERT INTO")
            assert '"MEMORYADMIN_AUDITEVENT"' in statement
            assert not [
                q
                for q in queries.captured_queries
                if "auditevent" in q["sql"].lower() and "usagecounter" not in q["sql"].lower()
            ]
        else:
            assert statement.startswith("INSERT")
    assert len(_served(team)) >= 3


def test_it_counts_each_ref_once_per_read_and_adds_across_reads(team, make_user):
    user = make_user("ana", team=team, role=Role.VIEWER)
    actor = Actor(user=user)
    usage_count(team=team, actor=actor, operation="search", refs=["brain:1", "brain:1", "brain:2"])
    usage_count(team=team, actor=actor, operation="search", refs=["brain:2"])
    assert _served(team) == {"brain:1": 1, "brain:2": 2}
    counter = UsageCounter.objects.get(team=team, key="brain:2")
    assert counter.last_token_id is None and counter.last_label == "ana"
    activity = UsageCounter.objects.get(team=team, kind=UsageKind.ACTIVITY)
    assert (activity.operation, activity.count) == ("search", 2)


def test_it_keeps_a_second_teams_counters_apart(world, team, other_team, token_client):
    token_client(team, READ).get("/api/search/", {"q": "upload"})
    assert _served(team)
    assert not UsageCounter.objects.filter(team=other_team).exists()
    other = token_client(other_team, ["usage:read"]).get("/api/usage/").json()
    assert other["most_served"] == [] and other["activity"] == []
    assert other["not_served"]["count"] == 0


def test_it_answers_the_usage_api_with_most_served_not_served_and_activity(
    world, team, token_client
):
    token_client(team, READ).get("/api/search/", {"q": "upload", "limit": 2})
    body = token_client(team, ["usage:read"]).get("/api/usage/", {"days": "7"}).json()
    assert body["days"] == 7
    top = body["most_served"][0]
    assert top["count"] == 1 and top["last_served_by_kind"] == "token" and top["title"]
    assert "secret" not in str(body).lower().replace("secret_", "")
    served_refs = {u["ref"] for u in body["most_served"]}
    assert not served_refs & {u["ref"] for u in body["not_served"]["items"]}
    assert body["not_served"]["count"] >= 1
    (reader,) = body["activity"]
    assert reader["operations"]["search"] == 1 and reader["total"] == 1
    assert reader["kind"] == "token"


@pytest.mark.parametrize("days", ["0", "366", "x", "٣", "1" * 50])
def test_it_refuses_a_bad_days_value_with_a_code(team, token_client, days):
    response = token_client(team, ["usage:read"]).get("/api/usage/", {"days": days})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "days-invalid"


def test_it_shows_the_usage_page_to_every_role_that_sees_the_brain(
    world, team, token_client, make_user
):
    token_client(team, READ).get("/api/search/", {"q": "upload", "limit": 2})
    for role in (Role.VIEWER, Role.REVIEWER, Role.ADMIN):
        user = make_user(f"u-{role}", team=team, role=role)
        client = APIClient()
        client.force_login(user)
        page = client.get(f"/t/{team.slug}/usage/")
        assert page.status_code == 200
        text = page.content.decode()
        assert "Most served" in text and "Not served in the last 30 days" in text
        assert 'id="activity"' in text and "token t" in text
        assert "candidates to archive" in text
        assert f'href="/t/{team.slug}/usage/"' in text  # the nav link


def test_it_shows_served_counts_on_the_record_memory_and_brain_pages(
    world, team, token_client, admin_user
):
    client = token_client(team, READ)
    ref = Memory.objects.get(memory_id="20260307-new-queue").ref
    client.get(f"/api/memories/{ref}/")
    client.get(f"/api/memories/{ref}/")
    client.get("/api/search/", {"q": "tuesdays"})
    browser = APIClient()
    browser.force_login(admin_user)
    memory = Memory.objects.get(memory_id="20260307-new-queue")
    text = browser.get(f"/t/{team.slug}/reviews/p/{memory.pk}/").content.decode()
    assert "served <strong>2</strong> times" in text and "by token <strong>t</strong>" in text
    assert "Replaces <code>" in text  # it supersedes 20260306-old-queue: that one's count too
    text = browser.get(f"/t/{team.slug}/sources/{world.source.pk}/").content.decode()
    assert f"source:{world.source.pk}:deploys" in text and "1 time<" in text
    text = browser.get(f"/t/{team.slug}/reviews/repositories/{world.repository.pk}/").content
    assert b"20260307-new-queue" in text and b"Served to agents" in text
    text = browser.get(f"/t/{team.slug}/brain/").content.decode()
    assert "Served to agents" in text and f"source:{world.source.pk}:deploys" in text


@pytest.mark.django_db(transaction=True)
def test_it_counts_mcp_reads_through_the_real_sdk_client(world, team, make_token, live_server):
    from tests.agents.test_mcp import _call

    secret = make_token(team, READ, name="mcp-agent")
    found = _call(live_server.url, secret, "search_memory", {"query": "upload", "limit": 2})
    refs = [r["ref"] for r in found.structured_content["results"]]
    ref = Memory.objects.get(memory_id="20260307-new-queue").ref
    _call(live_server.url, secret, "get_memory", {"ref": ref})
    _call(live_server.url, secret, "get_memory", {"ref": ref})
    served = _served(team)
    key = f"repository:{world.repository.pk}:20260307-new-queue"
    assert all(served[r] == 1 + 2 * (r == key) for r in refs)
    counter = UsageCounter.objects.get(team=team, key=key)
    assert counter.count == 2 + (key in refs) and counter.last_label == "mcp-agent"
    activity = UsageCounter.objects.filter(team=team, kind=UsageKind.ACTIVITY)
    assert dict(activity.values_list("operation", "count")) == {"search": 1, "get": 2}
