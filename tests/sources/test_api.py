"""The REST API: sources with sources:read, context with context:read, teams kept apart."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from memoryadmin.audit import Actor
from sources.models import Health, Source
from sources.services.lifecycle import source_add, source_approve
from sources.services.refresh import source_refresh
from tests.sources.helpers import record_text, write_source

PROJECT = "https://example.org/p"


def _source(team, root, records):  # type: ignore[no-untyped-def]
    write_source(root, records)
    source = source_add(actor=Actor.system(), team=team, location=str(root))
    source_approve(actor=Actor.system(), source=source)
    source_refresh(source_id=source.pk)
    source.refresh_from_db()
    return source


def test_it_lists_and_shows_sources(token_client, team, tmp_path):
    source = _source(
        team, tmp_path, {"a": record_text("a"), "bad": record_text("bad", kind="opinion")}
    )
    client = token_client(team, ["sources:read"])
    body = client.get("/api/sources/").json()
    assert body["count"] == 1
    assert body["results"][0]["health"] == "fresh"
    assert body["results"][0]["counts"]["rejected"] == 1
    detail = client.get(f"/api/sources/{source.pk}/").json()
    assert detail["rejections"] == [
        {
            "id": "bad",
            "path": "records/bad.md",
            "code": "bad-kind",
            "message": detail["rejections"][0]["message"],
            "line": 5,
        }
    ]


def test_it_needs_the_right_scope(token_client, team):
    assert token_client(team, ["context:read"]).get("/api/sources/").status_code == 403
    assert token_client(team, ["sources:read"]).get("/api/context/").status_code == 403


def test_it_hides_other_teams_sources(token_client, team, other_team, tmp_path):
    source = _source(other_team, tmp_path, {"a": record_text("a")})
    client = token_client(team, ["sources:read", "context:read"])
    response = client.get(f"/api/sources/{source.pk}/")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not-found"
    assert client.get("/api/sources/").json()["count"] == 0
    assert client.get("/api/context/").json()["records"] == []


def test_it_serves_context_with_provenance_and_the_untrusted_note(token_client, team, tmp_path):
    _source(
        team,
        tmp_path,
        {
            "u": record_text("u", kind="preference"),
            "p": record_text(
                "p",
                scope=PROJECT,
                extra="tags: ['x']\nprovenance:\n  author: 'Ann'\n",
            ),
            "gone": record_text("gone", extra="expires: '2020-01-01T00:00:00Z'\n"),
        },
    )
    client = token_client(team, ["context:read"])
    body = client.get("/api/context/", {"scope": PROJECT}).json()
    assert "untrusted" in body["note"] and "below system, developer and user" in body["note"]
    assert [r["id"] for r in body["records"]] == ["p"]
    record = body["records"][0]
    assert record["source"] == str(tmp_path) and record["stale"] is False
    assert record["provenance"] == {"author": "Ann"} and record["tags"] == ["x"]
    assert record["retrieved_at"] and record["kind"] == "fact" and record["body"]
    both = client.get("/api/context/?scope=user&scope=" + PROJECT).json()
    assert sorted(r["id"] for r in both["records"]) == ["p", "u"]


def test_it_flags_stale_records_and_hides_denied_sources(token_client, team, tmp_path):
    soon = timezone.now() + timedelta(days=1)
    stale = _source(
        team,
        tmp_path / "s",
        {"s": record_text("s", extra=f"expires: '{soon:%Y-%m-%dT%H:%M:%SZ}'\n")},
    )
    denied = _source(team, tmp_path / "d", {"d": record_text("d")})
    (tmp_path / "s" / "memories.json").unlink()
    source_refresh(source_id=stale.pk)
    Source.objects.filter(pk=denied.pk).update(health=Health.DENIED)
    client = token_client(team, ["context:read"])
    records = client.get("/api/context/").json()["records"]
    assert [(r["id"], r["stale"]) for r in records] == [("s", True)]


def test_it_answers_context_in_constant_queries(
    token_client, team, tmp_path, django_assert_max_num_queries
):
    for index in range(3):
        _source(team, tmp_path / str(index), {f"r{n}": record_text(f"r{n}") for n in range(10)})
    client = token_client(team, ["context:read", "sources:read"])
    # + the context.read audit event (read log) and the usage upsert (one statement)
    with django_assert_max_num_queries(8):
        body = client.get("/api/context/").json()
    assert body["count"] == 30
    with django_assert_max_num_queries(6):
        assert client.get("/api/sources/").json()["count"] == 3


def test_it_lists_a_sources_records_with_the_pages_filters(
    token_client, team, other_team, tmp_path
):
    source = _source(
        team,
        tmp_path / "a",
        {
            "deploy": record_text("deploy", title="Deploy on Tuesdays"),
            "tone": record_text("tone", title="Keep answers short", kind="preference"),
        },
    )
    theirs = _source(other_team, tmp_path / "b", {"x": record_text("x")})
    client = token_client(team, ["sources:read"])
    body = client.get(f"/api/sources/{source.pk}/records/").json()
    assert body["count"] == 2
    assert {r["record_id"] for r in body["results"]} == {"deploy", "tone"}
    assert "body" not in body["results"][0]
    found = client.get(f"/api/sources/{source.pk}/records/", {"q": "tuesdays"}).json()
    assert [r["record_id"] for r in found["results"]] == ["deploy"]
    kind = client.get(f"/api/sources/{source.pk}/records/", {"kind": "PREFERENCE"}).json()
    assert [r["record_id"] for r in kind["results"]] == ["tone"]
    titles = client.get(f"/api/sources/{source.pk}/records/", {"sort": "-title"}).json()
    assert [r["title"] for r in titles["results"]] == ["Keep answers short", "Deploy on Tuesdays"]
    bad = client.get(f"/api/sources/{source.pk}/records/", {"sort": "body"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid-filter"
    assert client.get(f"/api/sources/{theirs.pk}/records/").status_code == 404
    Source.objects.filter(pk=source.pk).update(health=Health.DENIED)
    assert client.get(f"/api/sources/{source.pk}/records/").json()["count"] == 0
