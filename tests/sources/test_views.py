"""Browser flows through the Django test client: add, preview, approve, refresh, source page."""

from __future__ import annotations

from django.urls import reverse

from memoryadmin.audit import Actor
from memoryadmin.models import Role
from sources.models import RefreshRun, RunStatus, Source, SourceState
from sources.services.lifecycle import source_add, source_approve
from sources.services.refresh import source_refresh
from tests.sources.helpers import record_text, write_source


def _demo_dir(tmp_path):  # type: ignore[no-untyped-def]
    return write_source(
        tmp_path,
        {
            "good": record_text("good", body="Hello <script>alert(1)</script> **bold**\n"),
            "old": record_text("old"),
            "new": record_text("new", extra="supersedes: ['old']\n"),
            "broken": record_text("broken", updated="yesterday"),
        },
        name="Team knowledge",
    )


def test_it_adds_previews_approves_and_refreshes_a_source(
    client, admin_user, team, tmp_path, django_capture_on_commit_callbacks
):
    root = _demo_dir(tmp_path)
    client.force_login(admin_user)
    page = client.get(reverse("source-add", args=[team.slug]))
    assert page.status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("source-add", args=[team.slug]),
            {"location": str(root), "credential_kind": "none", "refresh_minutes": 60},
        )
    source = Source.objects.get(team=team)
    detail = reverse("source-detail", args=[team.slug, source.pk])
    assert response.status_code == 302 and response["Location"] == detail
    preview = client.get(detail).content.decode()
    assert "Preview." in preview and "Team knowledge" in preview
    assert "bad-timestamp" in preview and "superseded" in preview
    assert "<script>alert(1)</script>" not in preview and "<strong>bold</strong>" in preview
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("source-approve", args=[team.slug, source.pk]))
    source.refresh_from_db()
    assert source.state == SourceState.APPROVED and source.approved_by == admin_user
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("source-refresh", args=[team.slug, source.pk]))
    run = RefreshRun.objects.filter(source=source).first()
    assert run.status == RunStatus.SUCCEEDED and run.requested_by == "user:alice"
    status = client.get(
        reverse("source-run-status", args=[team.slug, source.pk, run.pk]), HTTP_HX_REQUEST="true"
    )
    assert status["HX-Refresh"] == "true" and "Succeeded" in status.content.decode()
    page = client.get(detail).content.decode()
    assert "Active records (2)" in page and "Refresh history" in page


def test_it_polls_a_queued_run(client, admin_user, team, tmp_path):
    source = source_add(actor=Actor.system(), team=team, location=str(tmp_path))
    run = RefreshRun.objects.get(source=source)
    client.force_login(admin_user)
    html = client.get(reverse("source-run-status", args=[team.slug, source.pk, run.pk]))
    assert 'hx-trigger="every 1s"' in html.content.decode()
    assert "HX-Refresh" not in html


def test_it_shows_the_denied_banner_and_withholds_records(client, viewer_user, team, tmp_path):
    write_source(tmp_path, {"a": record_text("a", title="Secret title")})
    source = source_add(actor=Actor.system(), team=team, location=str(tmp_path))
    source_refresh(source_id=source.pk)
    Source.objects.filter(pk=source.pk).update(health="denied", last_error="answered 401")
    client.force_login(viewer_user)
    html = client.get(reverse("source-detail", args=[team.slug, source.pk])).content.decode()
    assert "Access denied" in html and "Secret title" not in html


def test_it_lets_a_viewer_look_but_not_add_or_approve(client, viewer_user, team, tmp_path):
    source = source_add(actor=Actor.system(), team=team, location=str(tmp_path))
    client.force_login(viewer_user)
    assert client.get(reverse("source-list", args=[team.slug])).status_code == 200
    assert client.get(reverse("source-detail", args=[team.slug, source.pk])).status_code == 200
    assert client.get(reverse("source-add", args=[team.slug])).status_code == 403
    assert client.post(reverse("source-approve", args=[team.slug, source.pk])).status_code == 403
    assert client.post(reverse("source-refresh", args=[team.slug, source.pk])).status_code == 403
    source.refresh_from_db()
    assert source.state == SourceState.PENDING


def test_it_hides_other_teams_sources(client, make_user, team, other_team, tmp_path):
    source = source_add(actor=Actor.system(), team=other_team, location=str(tmp_path))
    user = make_user("mallory", team=team, role=Role.ADMIN)
    client.force_login(user)
    assert client.get(reverse("source-detail", args=[team.slug, source.pk])).status_code == 404
    assert client.post(reverse("source-approve", args=[team.slug, source.pk])).status_code == 404
    assert client.get(reverse("source-list", args=[other_team.slug])).status_code == 404


def test_it_shows_form_errors_for_bad_locations(client, admin_user, team):
    client.force_login(admin_user)
    response = client.post(
        reverse("source-add", args=[team.slug]),
        {"location": "ftp://example.org/", "credential_kind": "none", "refresh_minutes": 60},
    )
    assert response.status_code == 200 and "https://" in response.content.decode()
    assert not Source.objects.exists()


def test_it_lists_sources_in_constant_queries(
    client, admin_user, team, tmp_path, django_assert_max_num_queries
):
    for index in range(5):
        root = write_source(tmp_path / str(index), {"a": record_text("a")})
        source = source_add(actor=Actor.system(), team=team, location=str(root))
        source_refresh(source_id=source.pk)
    client.force_login(admin_user)
    with django_assert_max_num_queries(8):
        response = client.get(reverse("source-list", args=[team.slug]))
    assert response.content.decode().count("Test source") == 5


def test_it_shows_the_dashboard_card(client, admin_user, team, tmp_path):
    write_source(tmp_path, {"a": record_text("a")})
    source = source_add(actor=Actor.system(), team=team, location=str(tmp_path))
    source_approve(actor=Actor.system(), source=source)
    source_refresh(source_id=source.pk)
    client.force_login(admin_user)
    html = client.get(reverse("team-home", args=[team.slug])).content.decode()
    assert "1 fresh" in html
