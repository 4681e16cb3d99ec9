"""Rotating or clearing a source's credential: service, source page and API, against a real TLS
server that checks the Authorization header."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent
from sources import selectors
from sources.credentials import source_credential
from sources.fetchers import Credential
from sources.models import CredentialKind, Health, RefreshRun, RunStatus, Source
from sources.services.lifecycle import source_add, source_approve, source_credential_set
from sources.services.refresh import source_refresh
from tests.sources.helpers import manifest_text, record_text

OLD, NEW = "old-s3cret-token", "new-s3cret-token"


def _guarded(server, accepted: set[str]) -> None:  # type: ignore[no-untyped-def]
    """Serve one record, but only to requests whose Authorization header is in `accepted`
    (mutable: the test changes what the server takes)."""

    def route(body: bytes):  # type: ignore[no-untyped-def]
        def handler(request):  # type: ignore[no-untyped-def]
            if request.headers.get("Authorization", "") not in accepted:
                return (401, {}, b"who are you")
            return (200, {}, body)

        return handler

    server.routes["/src/memories.json"] = route(manifest_text(["a"], name="Private").encode())
    server.routes["/src/records/a.md"] = route(record_text("a", title="Secret plans").encode())


def _source(team, url: str, credential: Credential | None = None) -> Source:  # type: ignore[no-untyped-def]
    source = source_add(actor=Actor.system(), team=team, location=url, credential=credential)
    return source_approve(actor=Actor.system(), source=source)


def _refresh(source: Source) -> RefreshRun:
    run = source_refresh(source_id=source.pk)
    source.refresh_from_db()
    return run


def _texts(source: Source) -> str:
    """Everything we store that a secret must never reach."""
    parts = [source.credential_encrypted, source.last_error]
    parts += list(RefreshRun.objects.values_list("error", flat=True))
    parts += [f"{e.summary} {e.data}" for e in AuditEvent.objects.all()]
    return "\n".join(parts)


# ----------------------------------------------------------------------------- service


def test_it_replaces_the_credential_of_a_denied_source_and_the_next_refresh_recovers(
    https_server, team, admin_user
):
    accepted = {f"Bearer {OLD}"}
    _guarded(https_server, accepted)
    source = _source(team, https_server.base, Credential(kind="bearer", token=OLD))
    assert _refresh(source).status == RunStatus.SUCCEEDED
    accepted.clear()
    accepted.add(f"Bearer {NEW}")  # the server rotated its token: ours is refused now
    assert _refresh(source).status == RunStatus.DENIED
    assert source.health == Health.DENIED and list(selectors.context_records(team)) == []
    added_at = source.credential_changed_at

    source = source_credential_set(
        actor=Actor(user=admin_user), source=source, credential=Credential("bearer", NEW)
    )
    assert source.health == Health.DENIED  # nothing is fetched until the next refresh
    assert source.credential_changed_at > added_at
    event = AuditEvent.objects.get(action="source.credential.set")
    assert event.actor_user == admin_user and event.target_id == str(source.pk)
    assert event.data == {"identity": source.identity, "from": "bearer", "to": "bearer"}
    assert "Replaced the credential" in event.summary

    run = _refresh(source)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert source.health == Health.FRESH and source.denied_since is None
    assert [r.title for r in selectors.context_records(team)] == ["Secret plans"]
    assert https_server.requests[-1][1]["Authorization"] == f"Bearer {NEW}"
    assert OLD not in _texts(source) and NEW not in _texts(source)


def test_it_switches_to_basic_auth_and_clears_the_credential(https_server, team):
    _guarded(https_server, {"Basic dXNlcjpwYXNzIHdvcmQ=", ""})  # user:pass word, or none
    source = _source(team, https_server.base, Credential(kind="bearer", token=OLD))
    source_credential_set(
        actor=Actor.system(),
        source=source,
        credential=Credential(kind="basic", username="user", password="pass word"),
    )
    source.refresh_from_db()
    assert source.credential_kind == CredentialKind.BASIC
    assert _refresh(source).status == RunStatus.SUCCEEDED
    assert https_server.requests[-1][1]["Authorization"] == "Basic dXNlcjpwYXNzIHdvcmQ="

    source_credential_set(actor=Actor.system(), source=source, credential=None)
    source.refresh_from_db()
    assert not source.has_credential and source.credential_kind == CredentialKind.NONE
    assert source.credential_changed_at is not None
    assert _refresh(source).status == RunStatus.SUCCEEDED
    assert "Authorization" not in https_server.requests[-1][1]
    cleared = AuditEvent.objects.get(action="source.credential.clear")
    assert cleared.data["from"] == "basic" and cleared.data["to"] == "none"

    # Clearing again changes nothing and records nothing.
    source_credential_set(actor=Actor.system(), source=source, credential=Credential(kind="none"))
    assert AuditEvent.objects.filter(action__startswith="source.credential").count() == 2


@pytest.mark.parametrize(
    ("credential", "field"),
    [
        (Credential(kind="bearer", token=""), "token"),
        (Credential(kind="bearer", token="two\nlines"), "token"),
        (Credential(kind="bearer", token="x" * 5000), "token"),
        (Credential(kind="basic", username=""), "username"),
        (Credential(kind="basic", username="a:b", password="p"), "username"),
        (Credential(kind="basic", username="a", password="p\r\nX-Injected: 1"), "password"),
        (Credential(kind="digest", token="x"), "credential_kind"),
    ],
)
def test_it_refuses_a_credential_it_cannot_send_and_changes_nothing(
    team, https_server, credential, field
):
    source = _source(team, https_server.base, Credential(kind="bearer", token=OLD))
    before = (source.credential_kind, source.credential_encrypted, source.credential_changed_at)
    with pytest.raises(ValidationError) as info:
        source_credential_set(actor=Actor.system(), source=source, credential=credential)
    assert field in info.value.message_dict
    source.refresh_from_db()
    assert (source.credential_kind, source.credential_encrypted, source.credential_changed_at) == (
        before
    )
    assert not AuditEvent.objects.filter(action__startswith="source.credential").exists()


def test_it_refuses_a_credential_for_a_local_directory(team, tmp_path):
    source = source_add(actor=Actor.system(), team=team, location=str(tmp_path))
    with pytest.raises(ValidationError) as info:
        source_credential_set(
            actor=Actor.system(), source=source, credential=Credential("bearer", NEW)
        )
    assert "credential_kind" in info.value.message_dict
    source.refresh_from_db()
    assert not source.has_credential


# ----------------------------------------------------------------------------- source page


def test_it_shows_that_a_credential_is_set_but_never_the_secret(
    client, team, https_server, admin_user, viewer_user
):
    source = _source(team, https_server.base, Credential(kind="bearer", token=OLD))
    detail = reverse("source-detail", args=[team.slug, source.pk])
    client.force_login(admin_user)
    page = client.get(detail).content.decode()
    assert "A credential is set: Bearer token, last changed" in page
    assert OLD not in page
    assert reverse("source-credential", args=[team.slug, source.pk]) in page
    client.force_login(viewer_user)
    page = client.get(detail).content.decode()
    assert "A credential is set: Bearer token" in page
    assert reverse("source-credential", args=[team.slug, source.pk]) not in page


def test_it_replaces_the_credential_from_the_source_page_and_says_what_happens_next(
    client, team, https_server, admin_user
):
    accepted = {"never"}
    _guarded(https_server, accepted)
    source = _source(team, https_server.base, Credential(kind="bearer", token=OLD))
    _refresh(source)
    assert source.health == Health.DENIED
    client.force_login(admin_user)
    response = client.post(
        reverse("source-credential", args=[team.slug, source.pk]),
        {"credential_kind": "bearer", "token": NEW},
        follow=True,
    )
    page = response.content.decode()
    assert response.redirect_chain[-1][0] == reverse("source-detail", args=[team.slug, source.pk])
    assert "Credential saved (Bearer token): the next refresh uses it." in page
    assert "use Refresh now to try it at once" in page
    assert NEW not in page and OLD not in page
    source.refresh_from_db()
    assert source_credential(source).token == NEW
    assert AuditEvent.objects.get(action="source.credential.set").actor_user == admin_user


def test_it_shows_form_errors_on_the_source_page_and_keeps_the_old_credential(
    client, team, https_server, admin_user
):
    source = _source(team, https_server.base, Credential(kind="bearer", token=OLD))
    client.force_login(admin_user)
    url = reverse("source-credential", args=[team.slug, source.pk])
    response = client.post(url, {"credential_kind": "bearer", "token": ""})
    assert response.status_code == 400
    assert "Enter the bearer token." in response.content.decode()
    response = client.post(url, {"credential_kind": "basic", "username": "a:b"})
    assert response.status_code == 400
    assert "no colon" in response.content.decode()
    assert client.get(url).status_code == 405
    source.refresh_from_db()
    assert source_credential(source).token == OLD


def test_it_refuses_the_credential_form_to_viewers_and_reviewers(
    client, team, https_server, viewer_user, reviewer_user
):
    source = _source(team, https_server.base, Credential(kind="bearer", token=OLD))
    for user in (viewer_user, reviewer_user):
        client.force_login(user)
        response = client.post(
            reverse("source-credential", args=[team.slug, source.pk]),
            {"credential_kind": "none"},
        )
        assert response.status_code == 403
    source.refresh_from_db()
    assert source.has_credential


# ----------------------------------------------------------------------------- API


def test_it_replaces_and_clears_the_credential_through_the_api(https_server, team, token_client):
    source = _source(team, https_server.base)
    api = token_client(team, ["sources:manage", "sources:read"])
    url = f"/api/sources/{source.pk}/credential/"
    response = api.put(url, {"kind": "bearer", "token": NEW}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["kind"] == "bearer" and body["set"] is True and body["changed_at"]
    assert NEW not in response.content.decode()
    detail = api.get(f"/api/sources/{source.pk}/").json()
    assert detail["credential"] == body
    event = AuditEvent.objects.get(action="source.credential.set")
    assert event.actor_token is not None and NEW not in f"{event.summary} {event.data}"

    assert api.delete(url).status_code == 204
    detail = api.get(f"/api/sources/{source.pk}/").json()
    assert detail["credential"]["set"] is False and detail["credential"]["kind"] == "none"


def test_it_answers_400_with_a_code_for_a_credential_it_refuses(
    https_server, team, tmp_path, token_client
):
    source = _source(team, https_server.base, Credential(kind="bearer", token=OLD))
    api = token_client(team, ["sources:manage"])
    url = f"/api/sources/{source.pk}/credential/"
    error = api.put(url, {"kind": "bearer"}, format="json").json()["error"]
    assert error["code"] == "credential-invalid" and "token" in error["details"]
    error = api.put(url, {"kind": "basic", "username": "a:b"}, format="json").json()["error"]
    assert error["code"] == "credential-invalid" and "username" in error["details"]
    response = api.put(url, {"kind": "digest"}, format="json")
    assert response.status_code == 400 and "kind" in response.json()["error"]["details"]
    response = api.put(url, {"kind": "bearer", "token": "x" * 5000}, format="json")
    assert response.status_code == 400
    response = api.put(url, "not json", content_type="application/json")
    assert response.status_code == 400
    local = source_add(actor=Actor.system(), team=team, location=str(tmp_path))
    response = api.put(
        f"/api/sources/{local.pk}/credential/", {"kind": "bearer", "token": NEW}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["details"] == {
        "kind": ["A local directory takes no credential."]
    }
    source.refresh_from_db()
    assert source_credential(source).token == OLD


def test_it_refuses_the_credential_api_without_the_manage_scope_or_role(
    https_server, team, token_client, api_client, viewer_user, reviewer_user, admin_user
):
    source = _source(team, https_server.base, Credential(kind="bearer", token=OLD))
    url = f"/api/sources/{source.pk}/credential/?team={team.slug}"
    reader = token_client(team, ["sources:read", "context:read", "bundles:import"])
    response = reader.put(url, {"kind": "none"}, format="json")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "insufficient-scope"
    assert reader.delete(url).status_code == 403
    for user in (viewer_user, reviewer_user):
        api_client.force_login(user)
        response = api_client.put(url, {"kind": "none"}, format="json")
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "insufficient-role"
    api_client.force_login(admin_user)
    assert api_client.delete(url).status_code == 204
