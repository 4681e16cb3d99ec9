"""Pages and API with permissions: viewers read, reviewers decide, other teams see 404."""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest
from django.urls import reverse

from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent, Role
from reviews.models import Decision, Memory, PushState, Repository
from reviews.services.decisions import proposal_reject
from tests.reviews.test_workflow import ATTEMPT, SECRET, SQLITE, proposal


def test_it_lists_the_queue_with_flags_for_a_viewer(client, viewer_user, repository):
    client.force_login(viewer_user)
    response = client.get(reverse("review-queue", args=["alpha"]))
    body = response.content.decode()
    assert response.status_code == 200
    assert "3 proposals waiting" in body
    assert proposal(repository, SECRET).ref in body and "badge bad" in body
    assert 'name="proposals"' not in body  # viewers cannot decide
    response = client.get(reverse("review-queue", args=["alpha"]), {"flag": "secret"})
    assert "1 proposal waiting" in response.content.decode()
    response = client.get(reverse("review-queue", args=["alpha"]), {"type": "attempt"})
    assert "1 proposal waiting" in response.content.decode()


def _bulk_attempts(repository, count: int) -> None:  # type: ignore[no-untyped-def]
    """`count` proposed attempts beside one real proposal file (rows only, no files)."""
    base = proposal(repository, ATTEMPT)
    Memory.objects.bulk_create(
        Memory(
            team=repository.team,
            repository=repository,
            memory_id=f"20260301-bulk-{n}",
            ref=f"BLK-{n:04x}",
            type="attempt",
            title=f"Bulk {n:03d}",
            status="proposed",
            path=f".memoryrail/memories/20260301-bulk-{n}.md",
            blob_sha="0" * 40,
            created=base.created,
            updated=base.updated,
            added_at=base.added_at,
        )
        for n in range(count)
    )


def test_it_keeps_the_queue_query_count_flat_with_thousands(
    client, reviewer_user, repository, django_assert_max_num_queries
):
    _bulk_attempts(repository, 3000)
    client.force_login(reviewer_user)
    url = reverse("review-queue", args=["alpha"])
    client.get(url)  # warm the session and role caches
    # +2 since routing and two approvals: the assignees prefetch and the team review setting
    with django_assert_max_num_queries(11):  # +1: the filter bar's repository choices
        response = client.get(url, {"page": 40})
    assert response.status_code == 200
    assert "3003 proposals waiting" in response.content.decode()


def test_it_renders_the_proposal_sanitised_side_by_side(client, viewer_user, repository):
    client.force_login(viewer_user)
    memory = proposal(repository, SQLITE)
    response = client.get(reverse("proposal-detail", args=["alpha", memory.pk]))
    body = response.content.decode()
    assert response.status_code == 200
    assert "<script>" not in body.split("<main")[1]
    assert 'href="javascript:' not in body and "&lt;script&gt;" in body
    assert "Use PostgreSQL" in body and 'class="side-by-side"' in body
    assert "custom_field" in body
    assert memory.added_commit[:10] in body


def test_it_lets_a_reviewer_approve_from_the_page(
    client, reviewer_user, repository, remote, django_capture_on_commit_callbacks
):
    client.force_login(reviewer_user)
    memory = proposal(repository, ATTEMPT)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("proposal-approve", args=["alpha", memory.pk]), {"comment": "ok"}
        )
    assert response.status_code == 302
    decision = Decision.objects.get()
    assert decision.state == PushState.PUSHED
    history = client.get(reverse("review-history", args=["alpha"])).content.decode()
    assert decision.commit_sha[:10] in history and "pushed" in history


def test_it_requires_a_comment_to_reject_and_an_override_for_secrets(
    client, reviewer_user, repository
):
    client.force_login(reviewer_user)
    memory = proposal(repository, SECRET)
    response = client.post(reverse("proposal-reject", args=["alpha", memory.pk]), follow=True)
    assert "Say why" in response.content.decode()
    response = client.post(reverse("proposal-approve", args=["alpha", memory.pk]), follow=True)
    assert "override" in response.content.decode()
    assert not Decision.objects.exists()


def test_it_forbids_a_viewer_to_decide_and_hides_other_teams(
    client, viewer_user, make_user, other_team, repository
):
    memory = proposal(repository, ATTEMPT)
    client.force_login(viewer_user)
    response = client.post(reverse("proposal-approve", args=["alpha", memory.pk]))
    assert response.status_code == 403
    outsider = make_user("olga", team=other_team, role=Role.ADMIN)
    client.force_login(outsider)
    assert client.get(reverse("proposal-detail", args=["alpha", memory.pk])).status_code == 404
    assert client.get(reverse("review-queue", args=["alpha"])).status_code == 404
    # and a member of beta cannot reach alpha's proposal through beta's URL
    assert client.get(reverse("proposal-detail", args=["beta", memory.pk])).status_code == 404


def test_it_batches_from_the_queue(
    client, reviewer_user, repository, remote, django_capture_on_commit_callbacks
):
    client.force_login(reviewer_user)
    ids = [proposal(repository, m).pk for m in (SQLITE, ATTEMPT)]
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            reverse("review-batch", args=["alpha"]),
            {"proposals": ids, "action": "reject", "comment": "Not now"},
        )
    assert Decision.objects.get().state == PushState.PUSHED
    assert remote.log("%s")[0] == "Reject 2 proposals"


def test_it_lets_an_admin_add_and_sync_a_repository(
    client, admin_user, remote, data_dir, django_capture_on_commit_callbacks
):
    client.force_login(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("repository-add", args=["alpha"]),
            {
                "name": "web",
                "remote_url": remote.url,
                "branch": "main",
                "credential_kind": "https-token",
                "credential_secret": "tok-supersecret-123",
                "push_enabled": "on",
            },
        )
    repository = Repository.objects.get(name="web")
    assert response.status_code == 302
    assert repository.last_sync_ok is True and repository.head_commit
    assert "tok-supersecret-123" not in repository.credential_encrypted
    page = client.get(reverse("repository-detail", args=["alpha", repository.pk])).content
    assert b"tok-supersecret-123" not in page and repository.head_commit.encode() in page
    event = AuditEvent.objects.get(action="repository.create")
    assert "tok-supersecret" not in str(event.data)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("repository-sync", args=["alpha", repository.pk]))
    assert AuditEvent.objects.filter(action="repository.sync-request").exists()


def test_it_refuses_credentials_in_the_url_and_unknown_schemes(client, admin_user, data_dir):
    client.force_login(admin_user)
    for url in (
        "https://bob:pw@example.com/r.git",
        "ext::sh -c touch% /tmp/x",
        "--upload-pack=x",
    ):
        response = client.post(
            reverse("repository-add", args=["alpha"]),
            {"name": "x", "remote_url": url, "branch": "main", "credential_kind": "none"},
        )
        assert response.status_code == 400  # the form again, with the reason
    assert not Repository.objects.exists()


def test_it_shows_the_dashboard_card(client, viewer_user, repository):
    client.force_login(viewer_user)
    body = client.get(reverse("team-home", args=["alpha"])).content.decode()
    assert "3</strong> proposals waiting" in body


# API


def test_it_lists_and_retrieves_proposals_by_pk_id_or_ref(token_client, team, repository):
    api = token_client(team, ["reviews:read"])
    body = api.get("/api/reviews/proposals/").json()
    assert body["count"] == 3
    memory = proposal(repository, SQLITE)
    for key in (str(memory.pk), memory.memory_id, memory.ref):
        got = api.get(f"/api/reviews/proposals/{key}/")
        assert got.status_code == 200, got.content
        assert got.json()["id"] == SQLITE
    assert api.get("/api/reviews/repositories/").json()["results"][0]["name"] == "app"
    assert api.get("/api/reviews/proposals/DEC-zzzz/").status_code == 404


def test_it_approves_through_the_api_as_the_token(
    token_client, team, repository, remote, admin_user, django_capture_on_commit_callbacks
):
    from memoryadmin.tokens import token_create

    _, secret = token_create(
        actor=Actor(user=admin_user), team=team, name="ci", scopes=["reviews:write"]
    )
    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    memory = proposal(repository, ATTEMPT)
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(f"/api/reviews/proposals/{memory.ref}/approve/", {}, format="json")
    assert response.status_code == 202, response.content
    assert response.json()["state"] == "pending"
    decision = Decision.objects.get()
    assert decision.state == PushState.PUSHED
    assert decision.actor_label.startswith("token:ci")
    assert remote.log("%an|%ae")[0] == "Alice|alice@example.org"  # the token's creator


def test_it_uses_the_bot_identity_for_a_token_without_creator(
    token_client, team, repository, remote, django_capture_on_commit_callbacks
):
    api = token_client(team, ["reviews:write", "reviews:read"])
    ids = [proposal(repository, m).memory_id for m in (SQLITE, ATTEMPT)]
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(
            "/api/reviews/batch/",
            {"action": "reject", "proposals": ids, "comment": "cleanup"},
            format="json",
        )
    assert response.status_code == 202, response.content
    assert remote.log("%an|%ae|%s")[0] == "memoryadmin|bot@localhost|Reject 2 proposals"
    decision_id = response.json()["decisions"][0]["id"]
    assert api.get(f"/api/reviews/decisions/{decision_id}/").json()["state"] == "pushed"


def test_it_returns_one_error_shape_for_api_refusals(token_client, team, other_team, repository):
    reader = token_client(team, ["reviews:read"])
    memory = proposal(repository, SECRET)
    response = reader.post(f"/api/reviews/proposals/{memory.pk}/approve/", {}, format="json")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "insufficient-scope"
    writer = token_client(team, ["reviews:write"])
    response = writer.post(f"/api/reviews/proposals/{memory.pk}/approve/", {}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "secret-override-required"
    response = writer.post(f"/api/reviews/proposals/{memory.pk}/reject/", {}, format="json")
    assert response.json()["error"]["code"] == "invalid"
    outsider = token_client(other_team, ["reviews:read", "reviews:write"])
    assert outsider.get(f"/api/reviews/proposals/{memory.pk}/").status_code == 404
    response = outsider.post(f"/api/reviews/proposals/{memory.pk}/approve/", {}, format="json")
    assert response.status_code == 404


@pytest.mark.parametrize("scope", ["reviews:read"])
def test_it_keeps_api_list_queries_flat(
    token_client, team, repository, scope, django_assert_max_num_queries
):
    api = token_client(team, [scope])
    api.get("/api/reviews/proposals/")
    with django_assert_max_num_queries(7):  # +1: the assignees prefetch
        assert api.get("/api/reviews/proposals/").status_code == 200


def test_it_lands_on_the_next_proposal_of_the_same_queue_after_a_decision(
    client, reviewer_user, repository, remote, django_capture_on_commit_callbacks
):
    client.force_login(reviewer_user)
    sqlite, key, attempt = (proposal(repository, m) for m in (SQLITE, SECRET, ATTEMPT))
    url = reverse("proposal-reject", args=["alpha", sqlite.pk])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"comment": "no"})
    assert response["Location"] == reverse("proposal-detail", args=["alpha", key.pk])
    # Within a filtered queue (attempts only) the next is the next of that queue: none left.
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("proposal-reject", args=["alpha", attempt.pk]),
            {"comment": "no", "type": "attempt"},
        )
    assert response["Location"] == reverse("review-queue", args=["alpha"]) + "?type=attempt"
    page = client.get(reverse("proposal-detail", args=["alpha", key.pk])).content.decode()
    assert 'data-shortcut="approve"' in page and "Keyboard shortcuts" in page


def test_it_keeps_a_refused_batch_and_marks_the_row_that_blocks(
    client, reviewer_user, repository, remote, django_capture_on_commit_callbacks
):
    client.force_login(reviewer_user)
    ids = [proposal(repository, m).pk for m in (SQLITE, SECRET, ATTEMPT)]
    key = proposal(repository, SECRET)
    data = {"proposals": ids, "action": "approve", "comment": "Ship it"}
    response = client.post(reverse("review-batch", args=["alpha"]), data)
    body = response.content.decode()
    assert response.status_code == 400 and not Decision.objects.exists()
    assert body.count("checked") == 3 and "Ship it</textarea>" in body
    assert f'id="blocked-{key.pk}"' in body and body.count('class="blocked"') == 1
    assert "Decide the others (2)" in body
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("review-batch", args=["alpha"]), {**data, "skip": "blocked"})
    assert response.status_code == 302
    decided = {i.memory_key for i in Decision.objects.get().items.all()}
    assert decided == {SQLITE, ATTEMPT}


def test_it_rerenders_a_refused_batch_on_the_page_sort_and_filters_it_was_sent_from(
    client, reviewer_user, repository
):
    _bulk_attempts(repository, 60)
    key = proposal(repository, SECRET)
    client.force_login(reviewer_user)
    shown = {"type": "attempt", "sort": "-title", "page": "2"}
    queue = client.get(reverse("review-queue", args=["alpha"]), shown)
    html = queue.content.decode()
    action = re.search(r'<form method="post" action="([^"]+)" id="batch-form">', html)[1]
    assert parse_qs(urlsplit(unescape(action)).query) == {k: [v] for k, v in shown.items()}
    on_page = [m.pk for m in queue.context["page"].object_list[:2]]
    data = {"proposals": [*on_page, key.pk], "action": "approve", "comment": "Ship it"}
    response = client.post(unescape(action), data)  # the secret one refuses without a reason
    assert response.status_code == 400 and not Decision.objects.exists()
    page = response.context["page"]
    assert page.number == 2 and page.paginator.count == 61
    titles = [m.title for m in page.object_list]
    assert titles == sorted(titles, reverse=True) and all(t.startswith("Bulk") for t in titles)
    body = response.content.decode()
    assert all(f'value="{pk}" id="p-{pk}" aria-label="Select' in body for pk in on_page)
    assert body.count(" checked>") == 2 and "Ship it</textarea>" in body
    # Links and the filter bar lead back to the queue, not to the batch URL the page is at.
    queue_url = reverse("review-queue", args=["alpha"])
    assert f'<form method="get" action="{queue_url}"' in body
    assert f'href="{queue_url}?type=attempt&amp;sort=-title&amp;page=1"' in body
    assert 'aria-sort="descending"' in body


def test_it_sorts_the_queue_and_the_history_by_their_headers(client, reviewer_user, repository):
    from tests.memoryadmin.test_sort_headers import assert_sortable

    _bulk_attempts(repository, 3)
    client.force_login(reviewer_user)
    queue = assert_sortable(client, reverse("review-queue", args=["alpha"]), {"type": "attempt"})
    assert set(queue) == {"Type", "Title", "Age"}
    memory = Memory.objects.filter(memory_id__startswith="20260301-bulk").first()
    proposal_reject(actor=Actor(user=reviewer_user), memory=memory, comment="not needed")
    history = assert_sortable(
        client, reverse("review-history", args=["alpha"]), {"reviewer": "rita"}
    )
    assert set(history) == {"When", "Decision", "Push"}
    assert history["When"]["sort"] == "descending"
