"""The shared listing layer and the team lists' FilterSets: search, filters, sort, CSV, and the
page and its API endpoint answering the same rows."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from memoryadmin.audit import Actor, audit_record
from memoryadmin.listing import Column, csv_cell, csv_chunks
from memoryadmin.models import ApiToken, AuditEvent, Role, Scope
from memoryadmin.tokens import token_create, token_revoke
from sources.models import Health, Source, SourceKind, SourceState
from sources.services.lifecycle import source_add, source_approve, source_refresh_request
from sources.services.refresh import source_refresh
from tests.sources.helpers import record_text, write_source


def _csv(response) -> list[list[str]]:  # type: ignore[no-untyped-def]
    assert response["Content-Type"] == "text/csv", response.status_code
    assert response["Content-Disposition"].startswith("attachment; filename=")
    return list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))


@pytest.mark.parametrize(
    "value, cell",
    [
        ("=1+1", "'=1+1"),
        ("+cmd", "'+cmd"),
        ("-2", "'-2"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tlead", "'\tlead"),
        ("plain = text", "plain = text"),
        (None, ""),
        (True, "yes"),
        (["a", "b"], "a b"),
        (3, "3"),
    ],
)
def test_it_makes_formula_starts_literal_in_csv_cells(value, cell):
    assert csv_cell(value) == cell


def test_it_quotes_csv_lines_like_the_csv_module():
    text = "".join(
        csv_chunks([Column("a", lambda r: r[0]), Column("b", lambda r: r[1])], [("x,y", 'q"')])
    )
    assert text == 'a,b\r\n"x,y","q"""\r\n'


# ----------------------------------------------------------------------------- audit


@pytest.fixture
def audit_events(team, other_team):  # type: ignore[no-untyped-def]
    for action in ("source.add", "source.approve", "token.create", "membership.set"):
        audit_record(actor=Actor.system(), action=action, team=team, summary=f"did {action}")
    audit_record(actor=Actor.system(), action="source.add", team=other_team, summary="beta")
    # The log is append-only: an old event is made by creating it with its time.
    AuditEvent.objects.create(
        team=team,
        actor_label="user:=cmd|evil",
        action="source.delete",
        summary="=HYPERLINK(1)",
        created_at=timezone.now() - timedelta(days=10),
    )


def test_it_filters_the_audit_log_by_an_action_prefix_actor_and_dates(
    client, admin_user, team, audit_events
):
    client.force_login(admin_user)
    url = f"/t/{team.slug}/audit/"

    def actions(**params):  # type: ignore[no-untyped-def]
        return sorted(e.action for e in client.get(url, params).context["page"])

    assert actions(action="source.") == ["source.add", "source.approve", "source.delete"]
    assert actions(action="source") == ["source.add", "source.approve", "source.delete"]
    assert actions(action="source.approve") == ["source.approve"]
    assert actions(actor="evil") == ["source.delete"]
    day = (timezone.now() - timedelta(days=10)).date().isoformat()
    assert actions(before=day) == ["source.delete"]
    assert "source.delete" not in actions(after=(timezone.now().date().isoformat()))
    assert actions(q="did token") == ["token.create"]
    html = client.get(url).content.decode()
    assert '<option value="source.">source.* (all)</option>' in html  # the choices
    assert client.get(url, {"after": "not a date"}).status_code == 400


def test_it_exports_the_filtered_audit_log_as_csv(client, admin_user, team, audit_events):
    client.force_login(admin_user)
    rows = _csv(client.get(f"/t/{team.slug}/audit/", {"export": "csv", "action": "source.delete"}))
    assert rows[0] == [
        "when",
        "actor",
        "action",
        "target_type",
        "target_id",
        "summary",
        "request_id",
    ]
    (row,) = rows[1:]
    assert row[1] == "user:=cmd|evil"  # not a formula start: kept as is
    assert row[5] == "'=HYPERLINK(1)"
    everything = _csv(client.get(f"/t/{team.slug}/audit/", {"export": "csv"}))
    assert "beta" not in str(everything)


# ----------------------------------------------------------------------------- tokens


def test_it_filters_tokens_by_state_and_never_exports_a_secret(client, admin_user, team):
    actor = Actor(user=admin_user)
    _, live = token_create(actor=actor, team=team, name="ci", scopes=["sources:read"])
    old, _ = token_create(actor=actor, team=team, name="old", scopes=["context:read"])
    token_revoke(actor=actor, token=old)
    gone, _ = token_create(actor=actor, team=team, name="gone", scopes=["sources:read"])
    ApiToken.objects.filter(pk=gone.pk).update(expires_at=timezone.now() - timedelta(days=1))
    client.force_login(admin_user)
    url = f"/t/{team.slug}/tokens/"

    def names(**params):  # type: ignore[no-untyped-def]
        return sorted(t.name for t in client.get(url, params).context["tokens"])

    assert names(state="active") == ["ci"]
    assert names(state="revoked") == ["old"]
    assert names(state="expired") == ["gone"]
    assert names(scope="sources:read") == ["ci", "gone"]
    assert names(q="ci") == ["ci"]
    assert names(sort="name") == ["ci", "gone", "old"]
    response = client.get(url, {"export": "csv"})
    assert response["Cache-Control"] == "no-store"
    rows = _csv(response)
    assert live not in str(rows) and "secret_hash" not in rows[0]
    assert sorted(r[0] for r in rows[1:]) == ["ci", "gone", "old"]
    assert client.get(url, {"state": "lost"}).status_code == 400


# ----------------------------------------------------------------------------- sources


def test_it_filters_sources_on_the_page_and_the_api_alike(client, viewer_user, team, token_client):
    kinds = [
        (Health.FRESH, SourceState.APPROVED),
        (Health.STALE, SourceState.APPROVED),
        (Health.NEVER, SourceState.PENDING),
    ]
    for index, (health, state) in enumerate(kinds):
        Source.objects.create(
            team=team,
            kind=SourceKind.HTTPS,
            identity=f"https://s{index}.example.org/memories.json",
            display_name=f"Source {index}",
            health=health,
            state=state,
        )
    client.force_login(viewer_user)
    api = token_client(team, [Scope.SOURCES_READ])
    for params, expected in (
        ({"health": "stale"}, ["Source 1"]),
        ({"state": "pending"}, ["Source 2"]),
        ({"q": "s0.example"}, ["Source 0"]),
        ({"sort": "-name"}, ["Source 2", "Source 1", "Source 0"]),
    ):
        page = client.get(f"/t/{team.slug}/sources/", params).context["sources"]
        listed = api.get("/api/sources/", params).json()["results"]
        assert [s.display_name for s in page] == expected, params
        assert [s["name"] for s in listed] == expected, params
    bad = api.get("/api/sources/", {"health": "great"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid-filter"
    assert "health" in bad.json()["error"]["details"]
    assert client.get(f"/t/{team.slug}/sources/", {"health": "great"}).status_code == 400
    rows = _csv(client.get(f"/t/{team.slug}/sources/", {"export": "csv", "health": "fresh"}))
    assert [r[1] for r in rows[1:]] == ["Source 0"]


def test_it_filters_and_exports_a_sources_records(client, viewer_user, admin_user, team, tmp_path):
    records = {
        "deploy": record_text("deploy", title="Deploy on Tuesdays", body="Ship it."),
        "rollback": record_text("rollback", title="Rollback steps", body="=1+2 undo"),
    }
    folder = write_source(tmp_path / "src", records)
    actor = Actor(user=admin_user)
    with transaction.atomic():
        source = source_add(actor=actor, team=team, location=str(folder))
    source_approve(actor=actor, source=source)
    run = source_refresh_request(actor=actor, source=source)
    source_refresh(source_id=source.pk, run_id=run.pk)
    client.force_login(viewer_user)
    url = f"/t/{team.slug}/sources/{source.pk}/"
    found = client.get(url, {"q": "tuesdays"}).context["page"]
    assert [r.record_id for r in found] == ["deploy"]
    ordered = client.get(url, {"sort": "-title"}).context["page"]
    assert [r.title for r in ordered] == ["Rollback steps", "Deploy on Tuesdays"]
    rows = _csv(client.get(url, {"export": "csv", "q": "rollback"}))
    assert rows[0][:4] == ["record_id", "kind", "scope", "title"]
    assert [r[0] for r in rows[1:]] == ["rollback"]


# ----------------------------------------------------------------------------- members


def test_it_exports_members_and_sorts_them(client, admin_user, make_user, team):
    make_user("=bob", team=team, role=Role.VIEWER)
    client.force_login(admin_user)
    rows = _csv(client.get(f"/t/{team.slug}/members/", {"export": "csv", "sort": "user"}))
    assert rows[0] == ["username", "name", "email", "role", "since"]
    assert [r[0] for r in rows[1:]] == ["'=bob", "alice"]
