"""Deleting a source: its rows go, the brain withdraws what only it backed, the audit log keeps
its URL, and a refresh that runs for it afterwards (or meanwhile) ends quietly."""

from __future__ import annotations

from django.db import connection
from django.urls import reverse

from bundles.models import Chunk
from bundles.selectors import served_chunks
from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent
from sources import selectors
from sources.fetchers import Credential
from sources.models import HttpValidator, Record, RefreshRun, RunStatus, Snapshot, Source
from sources.services.lifecycle import (
    source_add,
    source_approve,
    source_delete,
    source_refresh_request,
)
from sources.services.refresh import source_refresh
from sources.tasks import source_refresh as source_refresh_task
from tests.sources.helpers import manifest_text, record_text, write_source

SHARED = "Deploys go out on Tuesdays"


def _approved(team, root, records: dict[str, str]) -> Source:  # type: ignore[no-untyped-def]
    write_source(root, records)
    source = source_add(actor=Actor.system(), team=team, location=str(root))
    source_approve(actor=Actor.system(), source=source)
    source_refresh(source_id=source.pk)
    source.refresh_from_db()
    return source


def _served(team) -> set[str]:  # type: ignore[no-untyped-def]
    contents = served_chunks(team).values_list("content", flat=True)
    return {content.split("\n")[0] for content in contents}


def test_it_deletes_the_source_with_its_snapshots_records_and_runs(team, tmp_path, admin_user):
    source = _approved(
        team, tmp_path / "one", {"a": record_text("a"), "b": record_text("b", title="B")}
    )
    source_refresh(source_id=source.pk)
    other = _approved(team, tmp_path / "two", {"c": record_text("c", title="C")})
    counts = source_delete(actor=Actor(user=admin_user), source=source)
    # runs: queued by add and approve, and two refreshes
    assert counts == {"snapshots": 1, "records": 2, "runs": 4}
    assert not Source.objects.filter(pk=source.pk).exists()
    for model in (Snapshot, Record, RefreshRun):
        assert not model.objects.filter(source_id=source.pk).exists()
    assert Record.objects.filter(source=other).count() == 1
    assert [r.record_id for r in selectors.context_records(team)] == ["c"]
    event = AuditEvent.objects.get(action="source.delete")
    assert event.actor_user == admin_user and event.target_id == str(source.pk)
    assert event.target_type == "sources.source"
    assert event.data["identity"] == source.identity and event.data["removed"] == counts
    assert source.identity in event.summary


def test_it_withdraws_from_the_brain_only_what_the_deleted_source_backed(team, tmp_path):
    first = _approved(
        team,
        tmp_path / "one",
        {"a": record_text("a", title=SHARED), "b": record_text("b", title="Only here")},
    )
    _approved(team, tmp_path / "two", {"z": record_text("z", title=SHARED)})
    assert _served(team) == {SHARED, "Only here"}
    chunks = Chunk.objects.filter(team=team).count()
    source_delete(actor=Actor.system(), source=first)
    assert _served(team) == {SHARED}  # still backed by the other source
    assert Chunk.objects.filter(team=team).count() == chunks  # withdrawn, never deleted
    mirror = AuditEvent.objects.filter(action="brain.mirror").order_by("-pk").first()
    assert mirror.data["group"] == f"source:{first.pk}" and mirror.data["deactivated"] == 2


def test_it_keeps_the_credential_out_of_the_delete_event(https_server, team):
    https_server.serve("memories.json", manifest_text(["a"]))
    https_server.serve("records/a.md", record_text("a"))
    source = source_add(
        actor=Actor.system(),
        team=team,
        location=https_server.base,
        credential=Credential(kind="bearer", token="s3cret-token"),
    )
    source_approve(actor=Actor.system(), source=source)
    source_refresh(source_id=source.pk)
    assert HttpValidator.objects.filter(source=source).exists()
    source_delete(actor=Actor.system(), source=source)
    assert not HttpValidator.objects.filter(source_id=source.pk).exists()
    event = AuditEvent.objects.get(action="source.delete")
    assert event.data["credential"] == "bearer"
    assert "s3cret-token" not in f"{event.summary} {event.data}"


def test_it_ends_a_refresh_task_quietly_when_its_source_was_deleted(team, tmp_path):
    source = _approved(team, tmp_path, {"a": record_text("a")})
    run = source_refresh_request(actor=Actor.system(), source=source)
    source_delete(actor=Actor.system(), source=source)
    result = source_refresh_task.apply(args=[source.pk, run.pk])
    assert result.successful() and result.result == "gone"


def test_it_ends_quietly_when_the_source_is_deleted_during_its_refresh(
    transactional_db, https_server, team
):
    """The delete commits from another connection while the worker is reading the manifest."""
    https_server.serve("memories.json", manifest_text(["a"]))
    https_server.serve("records/a.md", record_text("a"))
    source = source_add(actor=Actor.system(), team=team, location=https_server.base)
    source_approve(actor=Actor.system(), source=source)  # runs its refresh on commit
    source.refresh_from_db()
    assert source.current_snapshot is not None

    def delete_then_answer(_request):  # type: ignore[no-untyped-def]
        try:
            source_delete(actor=Actor.system(), source=Source.objects.get(pk=source.pk))
        finally:
            connection.close()  # this server thread's own database connection
        return (200, {}, manifest_text(["a"]).encode())

    https_server.routes["/src/memories.json"] = delete_then_answer
    result = source_refresh_task.apply(args=[source.pk])
    assert result.successful() and result.result == "gone"
    assert not Source.objects.filter(pk=source.pk).exists()
    assert not Snapshot.objects.filter(source_id=source.pk).exists()
    assert AuditEvent.objects.filter(action="source.delete").count() == 1


# ----------------------------------------------------------------------------- page and API


def test_it_confirms_then_deletes_from_the_source_page(client, team, tmp_path, admin_user):
    source = _approved(team, tmp_path, {"a": record_text("a"), "b": record_text("b", title="B")})
    client.force_login(admin_user)
    url = reverse("source-delete", args=[team.slug, source.pk])
    detail = client.get(reverse("source-detail", args=[team.slug, source.pk])).content.decode()
    assert url in detail
    page = client.get(url).content.decode()
    assert "Delete this source?" in page and source.identity in page
    assert "its 2 records" in page and "2 chunks mirrored from it are withdrawn" in page
    assert 'method="post"' in page and "csrfmiddlewaretoken" in page
    assert Source.objects.filter(pk=source.pk).exists()  # GET deletes nothing
    response = client.post(url, follow=True)
    assert response.redirect_chain[-1][0] == reverse("source-list", args=[team.slug])
    assert f"Deleted {source.label}" in response.content.decode()
    assert not Source.objects.filter(pk=source.pk).exists()
    assert client.post(url).status_code == 404


def test_it_refuses_deletion_to_viewers_and_reviewers(
    client, team, tmp_path, viewer_user, reviewer_user
):
    source = _approved(team, tmp_path, {"a": record_text("a")})
    for user in (viewer_user, reviewer_user):
        client.force_login(user)
        url = reverse("source-delete", args=[team.slug, source.pk])
        assert client.get(url).status_code == 403
        assert client.post(url).status_code == 403
    assert Source.objects.filter(pk=source.pk).exists()


def test_it_deletes_through_the_api_with_the_manage_scope_only(
    team, other_team, tmp_path, token_client
):
    source = _approved(team, tmp_path, {"a": record_text("a")})
    url = f"/api/sources/{source.pk}/"
    reader = token_client(team, ["sources:read", "bundles:import"])
    response = reader.delete(url)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "insufficient-scope"
    outsider = token_client(other_team, ["sources:manage", "sources:read"])
    assert outsider.delete(url).status_code == 404
    manager = token_client(team, ["sources:manage", "sources:read"])
    response = manager.delete(url)
    assert response.status_code == 204 and response.content == b""
    assert reader.get(url).status_code == 404
    assert manager.delete(url).json()["error"]["code"] == "not-found"
    event = AuditEvent.objects.get(action="source.delete")
    assert event.actor_token is not None


def test_it_skips_a_deleted_source_in_the_beat_job(team, tmp_path):
    from sources.tasks import sources_refresh_due

    source = _approved(team, tmp_path, {"a": record_text("a")})
    RefreshRun.objects.filter(source=source).update(status=RunStatus.SUCCEEDED)
    source_delete(actor=Actor.system(), source=source)
    assert sources_refresh_due() == 0
