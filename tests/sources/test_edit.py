"""Editing sources, honest states (failed, never read; TLS failures), Test before saving, and
the confirmation steps for disabling and clearing a credential."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent
from sources.fetchers import Credential
from sources.models import Health, RunStatus, Source, SourceState
from sources.services.edit import SourceTestFailed, source_test, source_update
from sources.services.lifecycle import source_add, source_approve
from sources.services.refresh import source_refresh
from tests.sources.helpers import manifest_text, record_text, write_source


def _publish(server, ids: list[str]) -> None:  # type: ignore[no-untyped-def]
    server.serve("memories.json", manifest_text(ids, name="Remote"))
    for record_id in ids:
        server.serve(f"records/{record_id}.md", record_text(record_id))


def _added(team, url: str, credential: Credential | None = None) -> Source:  # type: ignore[no-untyped-def]
    return source_add(actor=Actor.system(), team=team, location=url, credential=credential)


# ----------------------------------------------------------------------------- edit


def test_it_renames_a_source_and_changes_its_interval_audited(https_server, team):
    source = _added(team, https_server.base)
    source = source_update(
        actor=Actor.system(),
        source=source,
        name="  Team notes ",
        refresh_interval=timedelta(hours=6),
    )
    assert source.label == "Team notes" and source.refresh_interval == timedelta(hours=6)
    event = AuditEvent.objects.get(action="source.update")
    assert event.data["before"] == {"name": "", "refresh_minutes": 60}
    assert event.data["after"] == {"name": "Team notes", "refresh_minutes": 360}
    source_update(actor=Actor.system(), source=source, name="Team notes")
    assert AuditEvent.objects.filter(action="source.update").count() == 1  # nothing changed
    _publish(https_server, ["a"])
    source_refresh(source_id=source.pk)  # the manifest's name does not replace the given one
    source.refresh_from_db()
    assert source.display_name == "Remote" and source.label == "Team notes"
    source = source_update(actor=Actor.system(), source=source, name="")
    assert source.label == "Remote"


def test_it_refuses_an_interval_out_of_range_and_writes_nothing(https_server, team):
    source = _added(team, https_server.base)
    for interval in (timedelta(seconds=30), timedelta(days=8)):
        with pytest.raises(ValidationError) as caught:
            source_update(actor=Actor.system(), source=source, refresh_interval=interval)
        assert "refresh_interval" in caught.value.message_dict
    source.refresh_from_db()
    assert source.refresh_interval == timedelta(hours=1)
    assert not AuditEvent.objects.filter(action="source.update").exists()


def test_it_edits_a_source_through_its_page(client, admin_user, https_server, team):
    source = _added(team, https_server.base)
    client.force_login(admin_user)
    url = reverse("source-edit", args=[team.slug, source.pk])
    assert 'value="60"' in client.get(url).content.decode()
    response = client.post(url, {"name": "Renamed", "refresh_minutes": 0})
    assert response.status_code == 400
    response = client.post(url, {"name": "Renamed", "refresh_minutes": 15})
    assert response.status_code == 302
    source.refresh_from_db()
    assert source.label == "Renamed" and source.refresh_interval == timedelta(minutes=15)


# ----------------------------------------------------------------------------- honest states


def test_it_calls_a_source_that_never_read_failed_not_stale(https_server, team, client, admin_user):
    source = _added(team, https_server.base)  # nothing published: the manifest is a 404
    run = source_refresh(source_id=source.pk)
    source.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert source.health == Health.FAILED and source.get_health_display() == "Failed, never read"
    client.force_login(admin_user)
    page = client.get(reverse("source-detail", args=[team.slug, source.pk])).content.decode()
    assert "Failed, never read" in page and 'class="badge bad"' in page
    assert "approving it serves nothing" in page
    response = client.post(reverse("source-approve", args=[team.slug, source.pk]), follow=True)
    assert "it has never been read successfully" in response.content.decode()
    _publish(https_server, ["a"])
    source_refresh(source_id=source.pk)
    source.refresh_from_db()
    assert source.health == Health.FRESH
    https_server.serve("memories.json", "gone", status=500)
    source_refresh(source_id=source.pk)
    source.refresh_from_db()
    assert source.health == Health.STALE  # now there is an older good copy to serve


def test_it_gives_tls_verification_failures_their_own_code(
    https_server, team, monkeypatch, tmp_path
):
    _publish(https_server, ["a"])
    source = source_approve(actor=Actor.system(), source=_added(team, https_server.base))
    other_ca = tmp_path / "unrelated-ca.pem"
    import trustme

    trustme.CA().cert_pem.write_to_path(str(other_ca))
    monkeypatch.setenv("SSL_CERT_FILE", str(other_ca))  # the server's CA is not trusted now
    run = source_refresh(source_id=source.pk)
    source.refresh_from_db()
    assert run.error_code == "tls-verify-failed" == source.last_error_code
    assert "SSL_CERT_FILE" in run.error and "certificate" in run.error
    with pytest.raises(SourceTestFailed) as caught:
        source_test(actor=Actor.system(), team=team, location=https_server.base)
    assert caught.value.code == "source-test-failed"
    assert caught.value.message_dict["location"][0].startswith("tls-verify-failed: ")


def test_it_refuses_plain_http_in_the_form_like_ftp(client, admin_user, team, settings):
    settings.SOURCE_ALLOW_HTTP_LOOPBACK = False
    client.force_login(admin_user)
    for location in ("http://example.org/memories/", "http://127.0.0.1:9/"):
        response = client.post(
            reverse("source-add", args=[team.slug]),
            {"location": location, "credential_kind": "none", "refresh_minutes": 60},
        )
        assert "Plain http:// is refused" in response.content.decode()
    settings.SOURCE_ALLOW_HTTP_LOOPBACK = True
    with pytest.raises(ValidationError):
        _added(team, "http://example.org/memories/")  # loopback hosts only, even then
    assert _added(team, "http://127.0.0.1:9/").identity == "http://127.0.0.1:9/"
    assert Source.objects.count() == 1


# ----------------------------------------------------------------------------- Test button


def test_it_tests_a_location_without_leaving_a_row(client, admin_user, https_server, team):
    _publish(https_server, ["a", "b"])
    client.force_login(admin_user)
    url = reverse("source-add", args=[team.slug])
    data = {"location": https_server.base, "credential_kind": "none", "refresh_minutes": 60}
    response = client.post(url, {**data, "test": "1"}, follow=True)
    assert "Test passed: the manifest lists 2 records" in response.content.decode()
    response = client.post(url, {**data, "location": https_server.base + "nope/", "test": "1"})
    assert "not-found: the manifest" in response.content.decode()
    assert not Source.objects.exists()
    assert not AuditEvent.objects.filter(action__startswith="source").exists()


def test_it_tests_a_local_folder(team, tmp_path, settings):
    settings.SOURCE_LOCAL_ROOTS = [str(tmp_path)]
    write_source(tmp_path / "notes", {"r1": record_text("r1")})
    manifest = source_test(actor=Actor.system(), team=team, location=str(tmp_path / "notes"))
    assert [entry.id for entry in manifest.entries] == ["r1"]
    with pytest.raises(ValidationError):
        source_test(actor=Actor.system(), team=team, location="/etc")


# ----------------------------------------------------------------------------- confirmations


def test_it_asks_before_disabling_a_source(client, admin_user, https_server, team):
    source = source_approve(actor=Actor.system(), source=_added(team, https_server.base))
    client.force_login(admin_user)
    url = reverse("source-disable", args=[team.slug, source.pk])
    page = client.get(url).content.decode()
    assert "Disable this source?" in page and "withdraws it from the brain" in page
    assert Source.objects.get(pk=source.pk).state == SourceState.APPROVED
    assert client.post(url).status_code == 302
    assert Source.objects.get(pk=source.pk).state == SourceState.DISABLED


def test_it_asks_before_clearing_a_credential(client, admin_user, https_server, team):
    source = _added(team, https_server.base, Credential(kind="bearer", token="tok-secret"))
    client.force_login(admin_user)
    response = client.post(
        reverse("source-credential", args=[team.slug, source.pk]), {"credential_kind": "none"}
    )
    clear = reverse("source-credential-clear", args=[team.slug, source.pk])
    assert response["Location"] == clear
    page = client.get(clear).content.decode()
    assert "Clear the credential?" in page and "cannot be shown or restored" in page
    assert "tok-secret" not in page
    assert Source.objects.get(pk=source.pk).has_credential
    assert client.post(clear).status_code == 302
    assert not Source.objects.get(pk=source.pk).has_credential
    assert AuditEvent.objects.filter(action="source.credential.clear").count() == 1


# ----------------------------------------------------------------------------- API


def test_it_scripts_a_source_through_the_api(https_server, team, token_client):
    _publish(https_server, ["a"])
    api = token_client(team, ["sources:manage", "sources:read"])
    tested = api.post("/api/sources/test/", {"location": https_server.base}, format="json")
    assert tested.status_code == 200 and tested.json() == {"entries": 1, "rejected": 0}
    body = {
        "location": https_server.base,
        "name": "API source",
        "refresh_minutes": 30,
        "credential": {"kind": "bearer", "token": "api-secret"},
    }
    created = api.post("/api/sources/", body, format="json")
    assert created.status_code == 201, created.json()
    data = created.json()
    assert data["name"] == "API source" and data["refresh_minutes"] == 30
    assert data["state"] == "pending" and "api-secret" not in created.content.decode()
    pk = data["id"]
    changed = api.patch(f"/api/sources/{pk}/", {"refresh_minutes": 120}, format="json")
    assert changed.status_code == 200 and changed.json()["refresh_minutes"] == 120
    assert changed.json()["name"] == "API source"
    approved = api.post(f"/api/sources/{pk}/approve/")
    assert approved.json()["state"] == "approved"
    disabled = api.post(f"/api/sources/{pk}/disable/")
    assert disabled.json()["state"] == "disabled"
    assert api.delete(f"/api/sources/{pk}/").status_code == 204


def test_it_answers_api_source_mistakes_with_codes(https_server, team, token_client, settings):
    settings.SOURCE_ALLOW_HTTP_LOOPBACK = False
    api = token_client(team, ["sources:manage", "sources:read"])
    insecure = api.post("/api/sources/", {"location": "http://example.org/"}, format="json")
    assert insecure.status_code == 400
    assert "location" in insecure.json()["error"]["details"]
    failed = api.post("/api/sources/test/", {"location": https_server.base}, format="json")
    assert failed.status_code == 400
    assert failed.json()["error"]["code"] == "source-test-failed"
    assert failed.json()["error"]["details"]["location"][0].startswith("not-found: ")
    wrong = api.get("/api/sources/test/")
    assert wrong.status_code == 405 and wrong.json()["error"]["details"] == {"allowed": ["POST"]}
    source = _added(team, https_server.base)
    source_refresh(source_id=source.pk)  # the manifest is missing: failed, never read
    approved = api.post(f"/api/sources/{source.pk}/approve/")
    assert approved.status_code == 200 and approved.json()["health"] == "failed"
    assert "never been read successfully" in approved.json()["warnings"][0]
    reader = token_client(team, ["sources:read"])
    assert (
        reader.patch(f"/api/sources/{source.pk}/", {"name": "x"}, format="json").status_code == 403
    )
    assert not Source.objects.exclude(pk=source.pk).exists()


def test_it_calls_a_failed_run_stale_only_after_the_source_was_once_read(
    https_server, team, client, admin_user
):
    source = _added(team, https_server.base)  # nothing published: the first read fails
    source_refresh(source_id=source.pk)
    client.force_login(admin_user)
    url = reverse("source-detail", args=[team.slug, source.pk])
    page = client.get(url).content.decode()
    assert '<span class="badge bad">Failed, nothing to serve yet</span>' in page
    assert "Failed (stale)" not in page and "older copy served" not in page
    _publish(https_server, ["a"])
    source_refresh(source_id=source.pk)
    https_server.serve("memories.json", "gone", status=500)
    last = source_refresh(source_id=source.pk)
    page = client.get(url).content.decode()
    assert (
        page.count('<span class="badge warn">Failed (older copy served)</span>') == 2
    )  # banner + row
    assert (
        page.count('<span class="badge bad">Failed, nothing to serve yet</span>') == 1
    )  # the first
    partial = client.get(reverse("source-run-status", args=[team.slug, source.pk, last.pk]))
    assert "Failed (older copy served)" in partial.content.decode()
