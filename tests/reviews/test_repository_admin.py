"""Repositories after adding: edit (and Test) against real git remotes, disable, delete."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from bundles.models import ChunkOrigin
from memoryadmin import crypto
from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent, Scope
from reviews.models import CredentialKind, Decision, Memory, Repository
from reviews.selectors import repositories_due
from reviews.services import repository_admin as admin
from reviews.services.repositories import repository_sync_request
from tests.reviews.conftest import make_remote


def _update(repository: Repository, **changes):  # type: ignore[no-untyped-def]
    values = {
        "name": repository.name,
        "remote_url": repository.remote_url,
        "branch": repository.branch,
        "credential_kind": repository.credential_kind,
        "credential_username": repository.credential_username,
        "push_enabled": repository.push_enabled,
        **changes,
    }
    return admin.repository_update(actor=Actor.system(), repository=repository, **values)


def _served(repository: Repository) -> int:
    return ChunkOrigin.objects.filter(group=f"repository:{repository.pk}", active=True).count()


# ----------------------------------------------------------------------------- services


def test_it_moves_a_repository_to_a_new_remote_and_syncs_it(
    repository, tmp_path, django_capture_on_commit_callbacks
):
    other = make_remote(tmp_path / "other")
    other.commit({".memoryrail/memories/readme.txt": "moved"}, "A commit only the new remote has")
    head = admin.repository_test(remote_url=other.url, branch="main")
    with django_capture_on_commit_callbacks(execute=True) as queued:
        repository = _update(repository, remote_url=other.url, name="app moved")
    assert len(queued) == 1  # the sync of the new remote
    repository.refresh_from_db()
    assert repository.remote_url == other.url and repository.name == "app moved"
    assert repository.head_commit == head  # the eager sync recloned from the new remote
    event = AuditEvent.objects.get(action="repository.update")
    assert event.data["changed"] == ["name", "remote_url"]
    assert event.data["before"]["remote_url"] != event.data["after"]["remote_url"]


def test_it_keeps_the_stored_secret_when_the_edit_leaves_it_blank(repository):
    repository = _update(repository, credential_kind="https-token", credential_secret="tok-1")
    stored = repository.credential_encrypted
    assert crypto.decrypt(stored) == "tok-1"
    repository = _update(repository, push_enabled=False)
    assert repository.credential_encrypted == stored and not repository.push_enabled
    repository = _update(repository, credential_kind=CredentialKind.NONE)
    assert not repository.has_credential
    for event in AuditEvent.objects.filter(action="repository.update"):
        assert "tok-1" not in str(event.data)


def test_it_refuses_an_edit_the_add_form_would_refuse(repository, settings):
    with pytest.raises(ValidationError) as caught:
        _update(repository, remote_url="https://user:pw@example.org/x.git")
    assert "remote_url" in caught.value.message_dict
    with pytest.raises(ValidationError) as caught:
        _update(repository, branch="../main")
    assert "branch" in caught.value.message_dict
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = False
    with pytest.raises(ValidationError) as caught:
        _update(repository, remote_url="file:///srv/else.git")
    assert "remote_url" in caught.value.message_dict
    repository.refresh_from_db()
    assert repository.name == "app" and not AuditEvent.objects.filter(action="repository.update")


def test_it_says_why_a_test_of_a_wrong_remote_fails(db, remote, data_dir, tmp_path):
    with pytest.raises(admin.RemoteTestFailed) as caught:
        admin.repository_test(remote_url=(tmp_path / "nowhere.git").as_uri(), branch="main")
    assert caught.value.code == "remote-test-failed"
    with pytest.raises(admin.RemoteTestFailed) as caught:
        admin.repository_test(remote_url=remote.url, branch="no-such-branch")
    assert "no branch named 'no-such-branch'" in caught.value.message_dict["remote_url"][0]
    with pytest.raises(ValidationError):
        admin.repository_test(remote_url="https://127.0.0.1/x.git", branch="main")
    assert not Repository.objects.exists()


def test_it_neither_syncs_nor_pushes_a_disabled_repository(repository):
    repository = admin.repository_set_enabled(
        actor=Actor.system(), repository=repository, enabled=False
    )
    assert repository.pk not in repositories_due(repository.created_at.replace(year=2100))
    with pytest.raises(ValidationError) as caught:
        repository_sync_request(actor=Actor.system(), repository=repository)
    assert caught.value.code == "repository-disabled"
    served = _served(repository)
    assert served > 0  # what it served stays as of its last sync
    admin.repository_set_enabled(actor=Actor.system(), repository=repository, enabled=True)
    assert [e.action for e in AuditEvent.objects.filter(action__startswith="repository.e")] == [
        "repository.enable"
    ]
    assert AuditEvent.objects.filter(action="repository.disable").count() == 1


def test_it_deletes_a_repository_with_its_index_and_its_brain_origins(
    repository, data_dir, django_capture_on_commit_callbacks
):
    assert _served(repository) > 0 and repository.working_dir.exists()
    preview = admin.repository_delete_preview(repository)
    assert preview["memories"] == Memory.objects.filter(repository=repository).count() > 0
    pk, working_dir = repository.pk, repository.working_dir
    with django_capture_on_commit_callbacks(execute=True):
        counts = admin.repository_delete(actor=Actor.system(), repository=repository)
    assert counts == preview
    assert not Repository.objects.filter(pk=pk).exists()
    assert not Memory.objects.filter(repository_id=pk).exists()
    assert not ChunkOrigin.objects.filter(group=f"repository:{pk}", active=True).exists()
    assert not working_dir.exists()
    event = AuditEvent.objects.get(action="repository.delete")
    assert event.target_id == str(pk) and event.data["removed"] == counts


# ----------------------------------------------------------------------------- pages


def test_it_edits_a_repository_through_its_page(client, admin_user, repository):
    client.force_login(admin_user)
    url = reverse("repository-edit", args=["alpha", repository.pk])
    assert 'value="app"' in client.get(url).content.decode()
    data = {
        "name": "renamed",
        "remote_url": repository.remote_url,
        "branch": "main",
        "credential_kind": "none",
    }
    response = client.post(url, {**data, "test": "1"})
    assert response.status_code == 200 and "Test passed" in response.content.decode()
    assert Repository.objects.get(pk=repository.pk).name == "app"  # Test saves nothing
    response = client.post(url, {**data, "branch": "nope"} | {"test": "1"})
    assert response.status_code == 400 and "no branch named" in response.content.decode()
    response = client.post(url, data)
    assert response.status_code == 302
    repository.refresh_from_db()
    assert repository.name == "renamed" and repository.push_enabled is False


def test_it_asks_before_disabling_and_hides_the_sync_banner(client, admin_user, repository):
    repository.last_sync_ok, repository.last_error = False, "git fetch failed: nope"
    repository.save()
    client.force_login(admin_user)
    queue = reverse("review-queue", args=["alpha"])
    assert "failed to sync" in client.get(queue).content.decode()
    url = reverse("repository-disable", args=["alpha", repository.pk])
    page = client.get(url).content.decode()
    assert "Disable this repository?" in page and "stops pushing decisions" in page
    assert Repository.objects.get(pk=repository.pk).enabled  # GET changes nothing
    assert client.post(url).status_code == 302
    assert "failed to sync" not in client.get(queue).content.decode()
    detail = client.get(reverse("repository-detail", args=["alpha", repository.pk]))
    assert "Disabled." in detail.content.decode()
    assert client.post(reverse("repository-enable", args=["alpha", repository.pk])).status_code
    assert Repository.objects.get(pk=repository.pk).enabled


def test_it_says_what_goes_before_deleting(client, admin_user, repository):
    client.force_login(admin_user)
    url = reverse("repository-delete", args=["alpha", repository.pk])
    page = client.get(url).content.decode()
    assert "Delete this repository?" in page and "open proposal" in page
    assert "withdrawn" in page and "not touched" in page
    assert client.post(url)["Location"] == reverse("repository-list", args=["alpha"])
    assert not Repository.objects.filter(pk=repository.pk).exists()


def test_it_tests_a_remote_from_the_add_page_without_a_row(client, admin_user, remote, data_dir):
    client.force_login(admin_user)
    data = {"name": "x", "remote_url": remote.url, "branch": "main", "credential_kind": "none"}
    response = client.post(reverse("repository-add", args=["alpha"]), {**data, "test": "1"})
    assert "Test passed" in response.content.decode()
    assert not Repository.objects.exists()


# ----------------------------------------------------------------------------- API


def test_it_scripts_a_repository_through_the_api(token_client, team, remote, data_dir):
    api = token_client(team, [Scope.REVIEWS_READ, Scope.REVIEWS_MANAGE])
    body = {"name": "api-repo", "remote_url": remote.url, "branch": "main"}
    tested = api.post("/api/reviews/repositories/test/", body, format="json")
    assert tested.status_code == 200 and len(tested.json()["head"]) == 40
    created = api.post("/api/reviews/repositories/", body, format="json")
    assert created.status_code == 201, created.json()
    pk = created.json()["id"]
    assert created.json()["enabled"] is True and created.json()["credential_set"] is False
    changed = api.patch(
        f"/api/reviews/repositories/{pk}/",
        {"push_enabled": False, "credential_kind": "https-token", "credential_secret": "s3"},
        format="json",
    )
    assert changed.status_code == 200 and changed.json()["push_enabled"] is False
    assert changed.json()["credential_set"] is True and "s3" not in changed.content.decode()
    assert api.post(f"/api/reviews/repositories/{pk}/sync/").status_code == 202
    disabled = api.post(f"/api/reviews/repositories/{pk}/disable/")
    assert disabled.json()["enabled"] is False
    refused = api.post(f"/api/reviews/repositories/{pk}/sync/")
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "repository-disabled"
    assert api.post(f"/api/reviews/repositories/{pk}/enable/").json()["enabled"] is True
    assert api.delete(f"/api/reviews/repositories/{pk}/").status_code == 204
    assert not Repository.objects.filter(pk=pk).exists()


def test_it_answers_api_mistakes_with_codes(token_client, team, repository):
    api = token_client(team, [Scope.REVIEWS_READ, Scope.REVIEWS_MANAGE])
    bad = api.patch(
        f"/api/reviews/repositories/{repository.pk}/",
        {"remote_url": "https://u:p@example.org/x.git"},
        format="json",
    )
    assert bad.status_code == 400 and "remote_url" in bad.json()["error"]["details"]
    wrong = api.get(f"/api/reviews/repositories/{repository.pk}/sync/")
    assert wrong.status_code == 405
    assert wrong.json()["error"]["code"] == "method-not-allowed"
    assert wrong.json()["error"]["details"] == {"allowed": ["POST"]}
    assert "use POST" in wrong.json()["error"]["message"]
    reader = token_client(team, [Scope.REVIEWS_READ])
    denied = reader.delete(f"/api/reviews/repositories/{repository.pk}/")
    assert denied.status_code == 403 and Decision.objects.count() == 0
    assert Repository.objects.filter(pk=repository.pk).exists()
