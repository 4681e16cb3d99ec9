"""Push failures on the team home count only while they are the last word on their proposals."""

from __future__ import annotations

from django.urls import reverse

from memoryadmin.audit import Actor
from reviews.models import Decision, PushState
from reviews.selectors import dashboard_summary, open_push_failures
from reviews.services.decisions import proposals_review
from reviews.services.push import decision_push_retry
from reviews.services.repositories import repository_sync
from tests.reviews.test_retry import REFUSAL, refuse_pushes
from tests.reviews.test_workflow import ATTEMPT, SQLITE, proposal


def decide(kind: str, repository, memory_id: str, user, capture) -> Decision:  # type: ignore[no-untyped-def]
    with capture(execute=True):
        decision = proposals_review(
            actor=Actor(user=user),
            team=repository.team,
            memory_ids=[proposal(repository, memory_id).pk],
            kind=kind,
            comment="not now" if kind == "reject" else "",
        ).decisions[0]
    decision.refresh_from_db()
    return decision


def failures(team) -> tuple[int, list[int]]:  # type: ignore[no-untyped-def]
    summary = dashboard_summary(team)
    return summary["push_failures"], [d.pk for d in summary["failed_decisions"]]


def test_it_stops_counting_a_failure_once_its_proposal_is_decided_again(
    repository, remote, reviewer_user, admin_user, team, client, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    hook = refuse_pushes(remote)
    rejected = decide("reject", repository, ATTEMPT, reviewer_user, capture)
    approved = decide("approve", repository, SQLITE, reviewer_user, capture)
    assert rejected.state == approved.state == PushState.FAILED
    assert REFUSAL in rejected.state_detail
    assert failures(team) == (2, [approved.pk, rejected.pk])
    hook.unlink()
    # The reviewer changes their mind: a new decision (approve) on the rejected proposal lands.
    again = decide("approve", repository, ATTEMPT, reviewer_user, capture)
    assert again.state == PushState.PUSHED, again.state_detail
    assert proposal(repository, ATTEMPT).status == "active"
    assert failures(team) == (1, [approved.pk])
    # The other failure is retried: pending, then pushed; nothing is left to act on.
    with capture(execute=True):
        decision_push_retry(actor=Actor(user=reviewer_user), decision=approved)
    approved.refresh_from_db()
    assert approved.state == PushState.PUSHED, approved.state_detail
    assert failures(team) == (0, [])
    rejected.refresh_from_db()
    assert rejected.state == PushState.FAILED  # history keeps what happened
    client.force_login(admin_user)
    home = client.get(reverse("team-home", args=[team.slug])).content.decode()
    assert "push failure" not in home
    history = client.get(reverse("review-history", args=[team.slug])).content.decode()
    assert "resolved since: decided again or no longer waiting" in history
    assert f"Retry push of decision {rejected.pk}" not in history


def test_it_counts_a_failure_again_decided_and_failed_only_once(
    repository, remote, reviewer_user, team, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    refuse_pushes(remote)
    first = decide("reject", repository, ATTEMPT, reviewer_user, capture)
    second = decide("approve", repository, ATTEMPT, reviewer_user, capture)
    assert first.state == second.state == PushState.FAILED
    # The latest word on the proposal is the second failure: one failure to act on, not two.
    assert failures(team) == (1, [second.pk])
    assert list(open_push_failures(team)) == [second]


def test_it_stops_counting_a_failure_whose_proposal_left_the_queue_upstream(
    repository, remote, reviewer_user, admin_user, team, client, django_capture_on_commit_callbacks
):
    from tests.reviews.conftest import M

    capture = django_capture_on_commit_callbacks
    hook = refuse_pushes(remote)
    failed = decide("reject", repository, ATTEMPT, reviewer_user, capture)
    assert failures(team) == (1, [failed.pk])
    client.force_login(admin_user)
    history = client.get(reverse("review-history", args=[team.slug])).content.decode()
    assert f"Retry push of decision {failed.pk}" in history
    hook.unlink()
    remote.commit({f"{M}/{ATTEMPT}.md": None}, "The agent withdraws its proposal")
    repository_sync(repository_id=repository.pk)
    assert failures(team) == (0, [])
