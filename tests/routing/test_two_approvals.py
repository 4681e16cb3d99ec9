"""Two approvals for constraints and decisions, on real git: browser, API and batch."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent, Role
from memoryadmin.tokens import token_create
from reviews.models import Approval, Decision, Memory, PushState
from reviews.services.approvals import AlreadyApproved
from reviews.services.decisions import proposal_reject, proposals_review
from reviews.services.repositories import repository_sync
from reviews.services.routing import review_settings_update
from tests.reviews.conftest import M, git, memory_text

SQLITE = "20260201-use-sqlite"  # decision, proposed
ATTEMPT = "20260203-cache-attempt"  # attempt, proposed


def proposal(repository, memory_id: str) -> Memory:
    return Memory.objects.get(repository=repository, memory_id=memory_id)


@pytest.fixture
def two(repository, admin_user):  # type: ignore[no-untyped-def]
    review_settings_update(
        actor=Actor(user=admin_user), team=repository.team, require_two_approvals=True
    )
    return repository


@pytest.fixture
def bob(make_user, team):  # type: ignore[no-untyped-def]
    return make_user("bob", team=team, role=Role.REVIEWER)


def test_it_records_a_first_approval_without_committing_then_commits_the_second(
    two, remote, reviewer_user, bob, django_capture_on_commit_callbacks
):
    before = remote.log("%H")
    with django_capture_on_commit_callbacks(execute=True):
        first = proposals_review(
            actor=Actor(user=reviewer_user),
            team=two.team,
            memory_ids=[proposal(two, SQLITE).pk],
            kind="approve",
            comment="Looks right",
        )
    assert first.decisions == [] and len(first.first_approvals) == 1
    assert remote.log("%H") == before  # nothing committed
    assert Decision.objects.count() == 0
    event = AuditEvent.objects.get(action="review.first-approval")
    assert event.actor_label == "user:rita" and "(1 of 2)" in event.summary
    # still in the queue, marked 1 of 2
    from reviews import selectors

    row = selectors.review_queue(two.team, filters={}).get(memory_id=SQLITE)
    assert row.first_approved_by == "user:rita"
    with django_capture_on_commit_callbacks(execute=True):
        second = proposals_review(
            actor=Actor(user=bob), team=two.team, memory_ids=[row.pk], kind="approve"
        )
    (decision,) = second.decisions
    decision.refresh_from_db()
    assert decision.state == PushState.PUSHED, decision.state_detail
    assert remote.log("%an <%ae>")[0] == "Bob <bob@example.org>"
    message = git(remote.bare, "log", "-1", "--format=%B", "main")
    assert "Reviewed-by: user:rita (first approval)\nReviewed-by: user:bob\n" in message
    assert "Co-authored-by: Rita <rita@example.org>\n" in message
    assert f"Memoryadmin-Decision: {decision.pk}" in message
    assert 'status: "active"' in remote.show(f"{M}/{SQLITE}.md")
    approve = AuditEvent.objects.get(action="review.approve")
    assert approve.data["first_approvals"] == {row.ref: "user:rita"}


def test_it_refuses_a_second_approval_by_the_same_person_even_through_their_token(
    two, reviewer_user
):
    memory = proposal(two, SQLITE)
    proposals_review(
        actor=Actor(user=reviewer_user), team=two.team, memory_ids=[memory.pk], kind="approve"
    )
    with pytest.raises(AlreadyApproved):
        proposals_review(
            actor=Actor(user=reviewer_user), team=two.team, memory_ids=[memory.pk], kind="approve"
        )
    token, _ = token_create(
        actor=Actor(user=reviewer_user), team=two.team, name="rita", scopes=["reviews:write"]
    )
    with pytest.raises(AlreadyApproved):
        proposals_review(
            actor=Actor(token=token), team=two.team, memory_ids=[memory.pk], kind="approve"
        )
    assert Approval.objects.count() == 1 and Decision.objects.count() == 0


def test_it_rejects_at_any_point(
    two, remote, reviewer_user, bob, django_capture_on_commit_callbacks
):
    memory = proposal(two, SQLITE)
    proposals_review(
        actor=Actor(user=reviewer_user), team=two.team, memory_ids=[memory.pk], kind="approve"
    )
    with django_capture_on_commit_callbacks(execute=True):
        decision = proposal_reject(actor=Actor(user=bob), memory=memory, comment="No")
    decision.refresh_from_db()
    assert decision.state == PushState.PUSHED
    assert not remote.exists(f"{M}/{SQLITE}.md")


def test_it_forgets_a_first_approval_when_the_proposal_changes_upstream(
    two, remote, reviewer_user, bob
):
    memory = proposal(two, SQLITE)
    proposals_review(
        actor=Actor(user=reviewer_user), team=two.team, memory_ids=[memory.pk], kind="approve"
    )
    remote.commit(
        {f"{M}/{SQLITE}.md": memory_text(SQLITE, title="Use SQLite, changed", status="proposed")},
        "Agent edits the proposal",
    )
    repository_sync(repository_id=two.pk)
    outcome = proposals_review(
        actor=Actor(user=bob), team=two.team, memory_ids=[memory.pk], kind="approve"
    )
    assert outcome.decisions == [] and len(outcome.first_approvals) == 1  # counts afresh


def test_it_needs_one_approval_for_other_types_and_when_the_setting_is_off(
    two, reviewer_user, admin_user
):
    outcome = proposals_review(
        actor=Actor(user=reviewer_user),
        team=two.team,
        memory_ids=[proposal(two, ATTEMPT).pk],
        kind="approve",
    )
    assert len(outcome.decisions) == 1 and outcome.first_approvals == []
    review_settings_update(actor=Actor(user=admin_user), team=two.team, require_two_approvals=False)
    outcome = proposals_review(
        actor=Actor(user=reviewer_user),
        team=two.team,
        memory_ids=[proposal(two, SQLITE).pk],
        kind="approve",
    )
    assert len(outcome.decisions) == 1
    assert AuditEvent.objects.filter(action="review.settings-update").count() == 2


def test_it_reports_first_approvals_in_the_api_and_the_batch(
    two, remote, team, reviewer_user, bob, django_capture_on_commit_callbacks
):
    from rest_framework.test import APIClient

    def client_for(user):  # type: ignore[no-untyped-def]
        _, secret = token_create(
            actor=Actor(user=user),
            team=team,
            name=user.username,
            scopes=["reviews:write", "reviews:read"],
        )
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        return api

    rita, bobs = client_for(reviewer_user), client_for(bob)
    sqlite, attempt = proposal(two, SQLITE), proposal(two, ATTEMPT)
    with django_capture_on_commit_callbacks(execute=True):
        response = rita.post(
            "/api/reviews/batch/",
            {"action": "approve", "proposals": [sqlite.ref, attempt.ref]},
            format="json",
        )
    assert response.status_code == 202, response.json()
    body = response.json()
    assert [d["refs"] for d in body["decisions"]] == [[attempt.ref]]
    (first,) = body["first_approvals"]
    assert first["ref"] == sqlite.ref and first["state"] == "awaiting-second-approval"
    assert (first["approvals"], first["approvals_required"]) == (1, 2)
    listed = rita.get("/api/reviews/proposals/").json()["results"]
    by_ref = {p["ref"]: p["first_approved_by"] for p in listed}
    assert by_ref[sqlite.ref].startswith("token:rita (") and attempt.ref not in by_ref
    again = rita.post(f"/api/reviews/proposals/{sqlite.pk}/approve/", {}, format="json")
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "already-approved"
    with django_capture_on_commit_callbacks(execute=True):
        done = bobs.post(f"/api/reviews/proposals/{sqlite.pk}/approve/", {}, format="json")
    assert done.status_code == 202 and done.json()["kind"] == "approve"
    state = bobs.get(f"/api/reviews/decisions/{done.json()['id']}/").json()
    assert state["state"] == "pushed"
    pushed = bobs.get("/api/reviews/decisions/", {"state": "pushed"}).json()
    assert pushed["count"] == 2
    # the token's creator is the person: author of the commit and co-author credit
    assert "Co-authored-by: Rita <rita@example.org>" in git(
        remote.bare, "log", "-1", "--format=%B", "main"
    )
    assert remote.log("%an")[0] == "Bob"


def test_it_shows_one_of_two_in_the_browser_and_settings_are_admin_only(
    client, two, reviewer_user, bob, viewer_user, admin_user, make_user, other_team
):
    memory = proposal(two, SQLITE)
    client.force_login(reviewer_user)
    response = client.post(reverse("proposal-approve", args=["alpha", memory.pk]), {})
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    assert "1 of 2 approvals (first by user:rita)" in page
    assert "A different reviewer must approve it too" in page
    assert (
        "1 of 2 approvals" in client.get(reverse("review-queue", args=["alpha"])).content.decode()
    )
    response = client.post(reverse("proposal-approve", args=["alpha", memory.pk]), {}, follow=True)
    assert "the second approval must come from a different reviewer" in response.content.decode()
    settings_url = reverse("review-settings", args=["alpha"])
    assert client.get(settings_url).status_code == 403
    client.force_login(viewer_user)
    assert client.post(settings_url, {}).status_code == 403
    client.force_login(admin_user)
    assert client.get(settings_url).status_code == 200
    assert client.post(settings_url, {}).status_code == 302  # unchecked: off
    assert AuditEvent.objects.filter(action="review.settings-update").count() == 2
    client.force_login(make_user("oscar", team=other_team, role=Role.ADMIN))
    assert client.get(settings_url).status_code == 404
