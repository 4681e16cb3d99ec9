"""Every long action shows its state live in the page (htmx fragments) and through the API."""

from __future__ import annotations

from django.urls import reverse
from django.utils import timezone

from bundles.models import ImportJob
from memoryadmin.audit import Actor
from reviews.models import Memory, Repository, SyncState
from reviews.services.decisions import proposal_approve
from reviews.services.repositories import repository_sync, repository_sync_request
from sources.models import RefreshRun, RunStatus, Source, SourceState

SQLITE = "20260201-use-sqlite"


def test_it_tracks_a_repository_sync_from_queued_to_idle_in_page_and_api(
    client,
    repository,
    admin_user,
    token_client,
    team,
    other_team,
    django_capture_on_commit_callbacks,
):
    client.force_login(admin_user)
    # the task is queued on commit: look at the page before it runs, then let it run
    with django_capture_on_commit_callbacks(execute=True):
        repository_sync_request(actor=Actor(user=admin_user), repository=repository)
        repository.refresh_from_db()
        assert repository.sync_state == SyncState.QUEUED
        fragment = client.get(
            reverse("repository-sync-status", args=["alpha", repository.pk])
        ).content.decode()
        assert "sync queued" in fragment and 'hx-trigger="every 1s"' in fragment
        Repository.objects.filter(pk=repository.pk).update(sync_state=SyncState.RUNNING)
        api = token_client(team, ["reviews:read"])
        body = api.get(f"/api/reviews/repositories/{repository.pk}/").json()
        assert body["sync_state"] == "running"
    repository.refresh_from_db()
    assert repository.sync_state == SyncState.IDLE and repository.sync_started_at is not None
    response = client.get(
        reverse("repository-sync-status", args=["alpha", repository.pk]), {"was": "busy"}
    )
    assert "synced" in response.content.decode() and "hx-get" not in response.content.decode()
    assert response["HX-Refresh"] == "true"
    page = client.get(reverse("repository-detail", args=["alpha", repository.pk])).content
    assert b'id="sync-status"' in page
    other = token_client(other_team, ["reviews:read"])
    assert other.get(f"/api/reviews/repositories/{repository.pk}/").status_code == 404


def test_it_shows_a_failed_sync_and_its_error_in_page_and_api(
    client, repository, admin_user, token_client, team
):
    Repository.objects.filter(pk=repository.pk).update(remote_url="file:///nonexistent/x.git")
    repository_sync(repository_id=repository.pk)
    repository.refresh_from_db()
    assert repository.sync_state == SyncState.IDLE and repository.last_sync_ok is False
    client.force_login(admin_user)
    fragment = client.get(reverse("repository-sync-status", args=["alpha", repository.pk]))
    assert "last sync failed" in fragment.content.decode()
    body = token_client(team, ["reviews:read"]).get("/api/reviews/repositories/").json()
    (row,) = body["results"]
    assert row["last_sync_ok"] is False and row["last_error"] and row["sync_state"] == "idle"


def test_it_polls_a_pending_decision_on_the_proposal_page_and_lists_push_states(
    client, repository, reviewer_user, token_client, team, django_capture_on_commit_callbacks
):
    memory = Memory.objects.get(repository=repository, memory_id=SQLITE)
    # the push runs on commit: the decision is pending until the block ends
    with django_capture_on_commit_callbacks(execute=True):
        proposal_approve(actor=Actor(user=reviewer_user), memory=memory)
        client.force_login(reviewer_user)
        fragment = client.get(
            reverse("proposal-decisions", args=["alpha", memory.pk])
        ).content.decode()
        assert "pending" in fragment and 'hx-trigger="every 2s"' in fragment
        api = token_client(team, ["reviews:read"])
        pending = api.get("/api/reviews/decisions/", {"state": "pending"}).json()
        assert pending["count"] == 1
        assert pending["results"][0]["state"] == "pending"
        assert pending["results"][0]["attempts"] == 0
    fragment = client.get(reverse("proposal-decisions", args=["alpha", memory.pk])).content
    assert b"pushed" in fragment and b"hx-get" not in fragment
    api = token_client(team, ["reviews:read"])
    assert api.get("/api/reviews/decisions/", {"state": "pushed"}).json()["count"] == 1


def test_it_reports_the_latest_source_refresh_in_the_api(token_client, team, other_team):
    source = Source.objects.create(
        team=team, kind="local", identity="/srv/m", state=SourceState.APPROVED
    )
    api = token_client(team, ["sources:read"])
    missing = api.get(f"/api/sources/{source.pk}/runs/latest/")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "no-runs"
    assert api.get(f"/api/sources/{source.pk}/").json()["latest_run"] is None
    RefreshRun.objects.create(source=source, status=RunStatus.SUCCEEDED)
    run = RefreshRun.objects.create(
        source=source, status=RunStatus.RUNNING, started_at=timezone.now()
    )
    body = api.get(f"/api/sources/{source.pk}/runs/latest/").json()
    assert (body["id"], body["status"], body["finished"]) == (run.pk, "running", False)
    assert api.get(f"/api/sources/{source.pk}/").json()["latest_run"]["id"] == run.pk
    outsider = token_client(other_team, ["sources:read"])
    assert outsider.get(f"/api/sources/{source.pk}/runs/latest/").status_code == 404


def test_it_has_a_live_fragment_for_every_long_action(client, team, admin_user):
    """Source refresh and bundle import fragments already existed: keep them polling."""
    source = Source.objects.create(
        team=team, kind="local", identity="/srv/m", state=SourceState.APPROVED
    )
    run = RefreshRun.objects.create(source=source, status=RunStatus.QUEUED)
    job = ImportJob.objects.create(team=team, filename="b.json", records_total=10)
    client.force_login(admin_user)
    fragment = client.get(reverse("source-run-status", args=["alpha", source.pk, run.pk]))
    assert b"hx-trigger" in fragment.content
    fragment = client.get(reverse("brain-job", args=["alpha", job.pk]), HTTP_HX_REQUEST="true")
    assert b"hx-trigger" in fragment.content and b"<progress" in fragment.content
