"""Retrying a failed push: a real bare remote refuses (pre-receive hook), then accepts again."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.exceptions import PermissionDenied
from django.urls import reverse

from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent, Role
from reviews.models import Decision, Memory, PushState
from reviews.services.decisions import ProposalNotOpen, proposal_approve, proposal_reject
from reviews.services.push import (
    TRAILER,
    DecisionNotRetryable,
    decision_push_retry,
    repository_push_pending,
)
from reviews.services.repositories import repository_sync, working_copy
from tests.reviews.conftest import M, Remote, git, memory_text
from tests.reviews.test_workflow import ATTEMPT, SQLITE, proposal

REFUSAL = "pushes are frozen until Monday"


def refuse_pushes(remote: Remote) -> Path:
    hook = remote.bare / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\necho '{REFUSAL}' >&2\nexit 1\n")
    hook.chmod(0o755)
    return hook


def commits_of(remote: Remote, decision: Decision) -> list[str]:
    """Commits on the remote's main that carry this decision's trailer."""
    return git(
        remote.bare, "log", "--format=%H", f"--grep=^{TRAILER}: {decision.pk}$", "main"
    ).split()


@pytest.fixture
def hook(remote: Remote) -> Path:
    return refuse_pushes(remote)


@pytest.fixture
def failed(repository, hook, reviewer_user, django_capture_on_commit_callbacks) -> Decision:
    """An approval whose push the remote refused (the push task runs eagerly)."""
    with django_capture_on_commit_callbacks(execute=True):
        decision = proposal_approve(
            actor=Actor(user=reviewer_user), memory=proposal(repository, ATTEMPT), comment="ok"
        )
    decision.refresh_from_db()
    assert decision.state == PushState.FAILED, decision.state_detail
    assert REFUSAL in decision.state_detail
    return decision


def retry(decision: Decision, user, capture) -> Decision:  # type: ignore[no-untyped-def]
    with capture(execute=True):
        decision_push_retry(actor=Actor(user=user), decision=decision)
    decision.refresh_from_db()
    return decision


def test_it_pushes_a_failed_decision_once_the_remote_accepts_again(
    failed, hook, remote, repository, make_user, team, django_capture_on_commit_callbacks
):
    other_reviewer = make_user("rex", team=team, role=Role.REVIEWER)
    assert commits_of(remote, failed) == []
    hook.unlink()
    decision = retry(failed, other_reviewer, django_capture_on_commit_callbacks)
    assert decision.state == PushState.PUSHED, decision.state_detail
    assert decision.attempts == 2 and decision.finished_at is not None
    assert decision.state_detail == ""
    assert commits_of(remote, decision) == [decision.commit_sha]  # pushed once
    # Still the original reviewer's decision: the retry does not change who decided.
    assert remote.log("%an|%s")[0].startswith(f"Rita|Approve {failed.items.get().ref}")
    assert 'status: "active"' in remote.show(f"{M}/{ATTEMPT}.md")
    assert proposal(repository, ATTEMPT).status == "active"  # re-indexed after the push
    event = AuditEvent.objects.get(action="review.push-retry")
    assert event.actor_user == other_reviewer and event.target_id == str(decision.pk)
    assert event.data["previous_state"] == "failed" and REFUSAL in event.data["previous_detail"]
    assert event.data["refs"] == [failed.items.get().ref]
    actions = list(
        AuditEvent.objects.filter(target_id=str(decision.pk), action__startswith="review.push")
        .order_by("id")
        .values_list("action", flat=True)
    )
    assert actions == ["review.push-failed", "review.push-retry", "review.push-pushed"]


def test_it_fails_again_visibly_while_the_remote_still_refuses_and_can_retry_again(
    failed, hook, remote, reviewer_user, django_capture_on_commit_callbacks
):
    decision = retry(failed, reviewer_user, django_capture_on_commit_callbacks)
    assert decision.state == PushState.FAILED and REFUSAL in decision.state_detail
    assert decision.attempts == 2 and commits_of(remote, decision) == []
    hook.unlink()
    decision = retry(decision, reviewer_user, django_capture_on_commit_callbacks)
    assert decision.state == PushState.PUSHED and decision.attempts == 3
    assert commits_of(remote, decision) == [decision.commit_sha]


def test_it_reapplies_on_a_remote_that_moved_meanwhile_without_forcing(
    failed, hook, remote, reviewer_user, django_capture_on_commit_callbacks
):
    hook.unlink()
    moved = remote.commit({"README.md": "moved\n"}, "Unrelated change from elsewhere")
    decision = retry(failed, reviewer_user, django_capture_on_commit_callbacks)
    assert decision.state == PushState.PUSHED, decision.state_detail
    assert remote.log("%H")[1] == moved  # on top of the other commit, which is kept
    assert remote.show("README.md") == "moved\n"


def test_it_marks_pushed_a_decision_whose_commit_landed_before_the_failure_was_recorded(
    failed, hook, remote, repository, reviewer_user, django_capture_on_commit_callbacks
):
    """E.g. the connection dropped after the remote took the push: no second commit."""
    from reviews.services.decision_changes import decision_changes
    from reviews.services.push import commit_message

    hook.unlink()
    copy = working_copy(repository)
    with copy.locked(wait=10):
        head = copy.sync()
        sha = copy.commit_objects(
            parent=head,
            changes=decision_changes(copy, failed, head, now="2026-02-01T00:00:00.000Z"),
            message=commit_message(failed),
            author=(failed.author_name, failed.author_email),
            committer=("memoryadmin", "bot@localhost"),
        )
        copy.push(sha)
    decision = retry(failed, reviewer_user, django_capture_on_commit_callbacks)
    assert decision.state == PushState.PUSHED and decision.commit_sha == sha
    assert commits_of(remote, decision) == [sha]


def test_it_refuses_to_retry_a_pending_a_pushed_or_a_conflicting_decision(
    repository, remote, reviewer_user, django_capture_on_commit_callbacks
):
    actor = Actor(user=reviewer_user)
    pending = proposal_reject(
        actor=actor, memory=proposal(repository, ATTEMPT), comment="no"
    )  # its push task was never run
    with pytest.raises(DecisionNotRetryable) as refused:
        decision_push_retry(actor=actor, decision=pending)
    assert refused.value.code == "decision-not-retryable"
    assert "still being pushed" in refused.value.messages[0]

    edited = memory_text(SQLITE, title="Edited upstream", status="proposed")
    remote.commit({f"{M}/{SQLITE}.md": edited}, "Agent edits its proposal")
    with django_capture_on_commit_callbacks(execute=True):
        conflict = proposal_approve(actor=actor, memory=proposal(repository, SQLITE))
    conflict.refresh_from_db()
    pending.refresh_from_db()
    assert conflict.state == PushState.CONFLICT and pending.state == PushState.PUSHED
    for decision, words in ((conflict, "Review the proposal again"), (pending, "already pushed")):
        with pytest.raises(DecisionNotRetryable) as refused:
            decision_push_retry(actor=actor, decision=decision)
        assert refused.value.code == "decision-not-retryable"
        assert words in refused.value.messages[0]
    assert not AuditEvent.objects.filter(action="review.push-retry").exists()
    assert Decision.objects.get(pk=conflict.pk).state == PushState.CONFLICT


def test_it_refuses_a_retry_once_the_proposal_was_decided_again(
    failed, hook, repository, reviewer_user, django_capture_on_commit_callbacks
):
    actor = Actor(user=reviewer_user)
    again = proposal_reject(
        actor=actor, memory=proposal(repository, ATTEMPT), comment="on second thought"
    )
    with pytest.raises(ProposalNotOpen, match="decided again"):
        decision_push_retry(actor=actor, decision=failed)
    hook.unlink()
    with django_capture_on_commit_callbacks(execute=True):
        repository_push_pending(repository_id=repository.pk)
    assert Decision.objects.get(pk=again.pk).state == PushState.PUSHED
    with pytest.raises(ProposalNotOpen, match="no longer a proposal"):
        decision_push_retry(actor=actor, decision=failed)
    assert Decision.objects.get(pk=failed.pk).state == PushState.FAILED


def test_it_refuses_a_retry_when_the_proposal_changed_upstream_since_the_review(
    failed, hook, remote, repository, reviewer_user
):
    hook.unlink()
    edited = memory_text(ATTEMPT, type="attempt", title="Edited upstream", status="proposed")
    remote.commit({f"{M}/{ATTEMPT}.md": edited}, "Agent edits its proposal")
    repository_sync(repository_id=repository.pk)
    with pytest.raises(ProposalNotOpen, match="changed upstream"):
        decision_push_retry(actor=Actor(user=reviewer_user), decision=failed)


def test_it_refuses_a_viewer_and_a_token_without_the_write_scope(
    failed, viewer_user, team, make_token
):
    from memoryadmin.models import ApiToken

    with pytest.raises(PermissionDenied):
        decision_push_retry(actor=Actor(user=viewer_user), decision=failed)
    make_token(team, ["reviews:read"], name="reader")
    reader = ApiToken.objects.get(name="reader")
    with pytest.raises(PermissionDenied):
        decision_push_retry(actor=Actor(token=reader), decision=failed)
    assert Decision.objects.get(pk=failed.pk).state == PushState.FAILED


def test_it_refuses_a_retry_when_the_repository_does_not_push(failed, repository, reviewer_user):
    type(repository).objects.filter(pk=repository.pk).update(push_enabled=False)
    with pytest.raises(DecisionNotRetryable) as refused:
        decision_push_retry(actor=Actor(user=reviewer_user), decision=failed)
    assert refused.value.code == "push-disabled"


# Pages


def test_it_offers_retry_on_the_history_and_proposal_pages_to_reviewers_only(
    client, failed, viewer_user, reviewer_user
):
    memory_pk = failed.items.get().memory_id
    pages = [
        reverse("review-history", args=["alpha"]),
        reverse("proposal-detail", args=["alpha", memory_pk]),
        reverse("proposal-decisions", args=["alpha", memory_pk]),
    ]
    action = reverse("decision-retry", args=["alpha", failed.pk])
    client.force_login(reviewer_user)
    for url in pages:
        html = client.get(url).content.decode()
        assert f'action="{action}"' in html and "Retry push" in html, url
        assert REFUSAL in html
    client.force_login(viewer_user)
    for url in pages:
        assert action not in client.get(url).content.decode(), url
    assert client.post(action).status_code == 403
    assert Decision.objects.get(pk=failed.pk).state == PushState.FAILED


def test_it_retries_from_the_history_page_and_returns_there(
    client, failed, hook, reviewer_user, django_capture_on_commit_callbacks
):
    hook.unlink()
    client.force_login(reviewer_user)
    history = reverse("review-history", args=["alpha"]) + "?page=1"
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("decision-retry", args=["alpha", failed.pk]), {"next": history}
        )
    assert response.status_code == 302 and response["Location"] == history
    failed.refresh_from_db()
    assert failed.state == PushState.PUSHED
    html = client.get(history).content.decode()
    assert f"Pushing decision #{failed.pk} again." in html
    assert failed.commit_sha[:10] in html and "Retry push" not in html


def test_it_retries_from_the_proposal_page_and_says_why_it_cannot(
    client, failed, reviewer_user, django_capture_on_commit_callbacks
):
    client.force_login(reviewer_user)
    back = reverse("proposal-detail", args=["alpha", failed.items.get().memory_id])
    url = reverse("decision-retry", args=["alpha", failed.pk])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"next": back})  # the hook still refuses
    assert response["Location"] == back
    assert Decision.objects.get(pk=failed.pk).state == PushState.FAILED
    Decision.objects.filter(pk=failed.pk).update(state=PushState.PUSHED)
    response = client.post(url, {"next": back}, follow=True)
    assert "already pushed" in response.content.decode()


def test_it_only_returns_to_a_page_of_the_same_team(client, failed, reviewer_user):
    client.force_login(reviewer_user)
    url = reverse("decision-retry", args=["alpha", failed.pk])
    history = reverse("review-history", args=["alpha"])
    for bad in ("https://evil.example/", "//evil.example/t/alpha/reviews/", "/t/beta/reviews/"):
        Decision.objects.filter(pk=failed.pk).update(state=PushState.FAILED)
        assert client.post(url, {"next": bad})["Location"] == history, bad


def test_it_hides_another_teams_decision(client, failed, make_user, other_team):
    client.force_login(make_user("olga", team=other_team, role=Role.ADMIN))
    assert client.post(reverse("decision-retry", args=["beta", failed.pk])).status_code == 404


# API


def test_it_retries_through_the_api_and_answers_202_with_the_pending_decision(
    failed, hook, remote, token_client, team, django_capture_on_commit_callbacks
):
    hook.unlink()
    api = token_client(team, ["reviews:write", "reviews:read"])
    url = f"/api/reviews/decisions/{failed.pk}/retry/"
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(url, format="json")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["id"] == failed.pk and body["state"] == "pending"
    assert body["state_detail"].startswith("retry requested by token:t")
    assert body["refs"] == [failed.items.get().ref]
    assert api.get(f"/api/reviews/decisions/{failed.pk}/").json()["state"] == "pushed"
    again = api.post(url, format="json")
    assert again.status_code == 409
    error = again.json()["error"]
    assert error["code"] == "decision-not-retryable" and "already pushed" in error["message"]
    assert set(error) == {"code", "message", "details"}


def test_it_answers_409_proposal_not_open_and_the_one_error_shape_for_refusals(
    failed, repository, token_client, team, other_team, reviewer_user
):
    url = f"/api/reviews/decisions/{failed.pk}/retry/"
    reader = token_client(team, ["reviews:read"])
    response = reader.post(url, format="json")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "insufficient-scope"
    outsider = token_client(other_team, ["reviews:write"])
    response = outsider.post(url, format="json")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not-found"
    proposal_reject(
        actor=Actor(user=reviewer_user), memory=proposal(repository, ATTEMPT), comment="no"
    )
    response = token_client(team, ["reviews:write"]).post(url, format="json")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "proposal-not-open"
    assert Memory.objects.filter(repository=repository, memory_id=ATTEMPT).exists()
