"""The review gate end to end on real git: sync, approve, reject, moved remotes, conflicts."""

from __future__ import annotations

import threading

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection

from formats import memoryrail
from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent
from reviews.git import LockNotHeld
from reviews.models import Decision, Memory, PushState
from reviews.services.decisions import (
    SecretOverrideRequired,
    proposal_approve,
    proposal_reject,
    proposals_review,
)
from reviews.services.push import repository_push_pending
from reviews.services.repositories import repository_create, repository_sync, working_copy
from tests.reviews.conftest import M, memory_text

SQLITE = "20260201-use-sqlite"
SECRET = "20260202-deploy-key"
ATTEMPT = "20260203-cache-attempt"


def proposal(repository, memory_id: str) -> Memory:
    return Memory.objects.get(repository=repository, memory_id=memory_id)


def test_it_indexes_every_memory_with_refs_authors_and_flags(repository):
    assert repository.last_sync_ok is True, repository.last_error
    assert repository.review_mode == "agents"
    rows = {m.memory_id: m for m in Memory.objects.filter(repository=repository)}
    assert len(rows) == 5
    sqlite = rows[SQLITE]
    assert sqlite.status == "proposed"
    assert sqlite.ref == memoryrail.short_ref(SQLITE, "decision")
    assert sqlite.author_name == "Agent Smith"
    assert sqlite.added_commit == repository.head_commit
    assert sqlite.supersedes == "20260101-use-postgres"
    assert rows[SECRET].has_secret
    assert {"rule": "github-token", "line": 9} in rows[SECRET].secret_findings
    assert "ghp_" not in str(rows[SECRET].secret_findings)
    assert not sqlite.has_secret


def test_it_approves_a_superseding_proposal_in_one_commit_by_the_reviewer(
    repository, remote, reviewer_user, django_capture_on_commit_callbacks, blobs_read
):
    memory = proposal(repository, SQLITE)
    with django_capture_on_commit_callbacks(execute=True):
        decision = proposal_approve(
            actor=Actor(user=reviewer_user), memory=memory, comment="Fine by me"
        )
    decision.refresh_from_db()
    assert decision.state == PushState.PUSHED, decision.state_detail
    log = remote.log()
    assert log[0].startswith("Rita|rita@example.org|memoryadmin|Approve DEC-")
    assert len(log) == 2
    assert decision.commit_sha == remote.log("%H")[0]
    new, _ = memoryrail.parse_memory(remote.show(f"{M}/{SQLITE}.md"), path=f"{M}/{SQLITE}.md")
    old, _ = memoryrail.parse_memory(
        remote.show(f"{M}/20260101-use-postgres.md"), path=f"{M}/20260101-use-postgres.md"
    )
    assert new.status == "active" and new.updated > "2026-01-01T00:00:00.000Z"
    assert new.meta["custom_field"] == {"keep": ["me", 1]}
    assert list(new.meta)[-1] == "custom_field"
    assert new.body == memory.body
    assert old.status == "superseded" and old.superseded_by == SQLITE
    # the proposal's blob, the superseded memory's, AGENTS.md's and the config's in one
    # `cat-file --batch`; AGENTS.md's block is rendered from the other 3 memories' blobs (the
    # 2 changed ones are the decision's bytes); the index after the push reads all 5
    assert [len(shas) for shas in blobs_read] == [4, 3, 5], blobs_read
    agents = remote.show("AGENTS.md")
    assert agents.startswith("# Agents\n\nHand-written intro.\n\n<!-- memoryrail:begin")
    assert agents.endswith("<!-- memoryrail:end -->\n\nFooter.\n")
    assert new.ref in agents and old.ref not in agents
    assert not (repository.working_dir / M).exists()  # the block was rendered from objects
    # the index follows the push
    assert proposal(repository, SQLITE).status == "active"
    actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert {"review.approve", "review.push-pushed"} <= actions


def test_it_does_not_touch_the_superseded_memory_before_approval(repository, remote):
    assert proposal(repository, "20260101-use-postgres").status == "active"
    assert 'status: "active"' in remote.show(f"{M}/20260101-use-postgres.md")


def test_it_rejects_by_deleting_the_file_and_requires_a_comment(
    repository, remote, reviewer_user, django_capture_on_commit_callbacks
):
    memory = proposal(repository, ATTEMPT)
    with pytest.raises(ValidationError):
        proposal_reject(actor=Actor(user=reviewer_user), memory=memory, comment=" ")
    with django_capture_on_commit_callbacks(execute=True):
        decision = proposal_reject(
            actor=Actor(user=reviewer_user), memory=memory, comment="Not reproducible"
        )
    decision.refresh_from_db()
    assert decision.state == PushState.PUSHED
    assert not remote.exists(f"{M}/{ATTEMPT}.md")
    assert remote.log("%s")[0].startswith(f"Reject {memory.ref}: Caching the manifest failed")
    assert not Memory.objects.filter(pk=memory.pk).exists()


def test_it_refuses_a_secret_proposal_without_an_audited_override(
    repository, remote, reviewer_user, django_capture_on_commit_callbacks
):
    memory = proposal(repository, SECRET)
    with pytest.raises(SecretOverrideRequired):
        proposal_approve(actor=Actor(user=reviewer_user), memory=memory)
    with django_capture_on_commit_callbacks(execute=True):
        decision = proposal_approve(
            actor=Actor(user=reviewer_user), memory=memory, override_reason="Revoked token"
        )
    decision.refresh_from_db()
    assert decision.state == PushState.PUSHED
    event = AuditEvent.objects.get(action="review.secret-override")
    assert event.data["reason"] == "Revoked token" and "github-token" in event.data["rules"]


def test_it_refuses_a_viewer(repository, viewer_user):
    with pytest.raises(PermissionDenied):
        proposal_approve(actor=Actor(user=viewer_user), memory=proposal(repository, ATTEMPT))


def test_it_reapplies_the_decision_when_the_remote_moved(
    repository, remote, reviewer_user, django_capture_on_commit_callbacks
):
    memory = proposal(repository, ATTEMPT)
    remote.commit({"README.md": "moved\n"}, "Unrelated change from elsewhere")
    with django_capture_on_commit_callbacks(execute=True):
        decision = proposal_approve(actor=Actor(user=reviewer_user), memory=memory)
    decision.refresh_from_db()
    assert decision.state == PushState.PUSHED, decision.state_detail
    subjects = remote.log("%s")
    assert subjects[0].startswith(f"Approve {memory.ref}")
    assert subjects[1] == "Unrelated change from elsewhere"
    assert remote.show("README.md") == "moved\n"


def test_it_reapplies_after_a_push_is_rejected_because_the_remote_moved(
    repository, remote, reviewer_user
):
    """Move the remote between our fetch and our push: the push is rejected, then re-applied."""
    from reviews.services import push

    memory = proposal(repository, ATTEMPT)
    decision = proposal_approve(actor=Actor(user=reviewer_user), memory=memory)
    original = push.decision_changes
    calls = []

    def apply_then_move(copy, decision, head, *, now):  # the "elsewhere" push lands mid-flight
        changes = original(copy, decision, head, now=now)
        if not calls:
            remote.commit({"NOTES.md": "race\n"}, "Racing push")
        calls.append(1)
        return changes

    push.decision_changes = apply_then_move
    try:
        repository_push_pending(repository_id=repository.pk)
    finally:
        push.decision_changes = original
    decision.refresh_from_db()
    assert decision.state == PushState.PUSHED and len(calls) == 2
    assert remote.log("%s")[:2] == [remote.log("%s")[0], "Racing push"]
    assert remote.log("%s")[0].startswith("Approve")


def test_it_marks_a_conflict_when_the_proposal_changed_upstream(
    repository, remote, reviewer_user, django_capture_on_commit_callbacks
):
    memory = proposal(repository, ATTEMPT)
    edited = memory_text(ATTEMPT, type="attempt", title="Edited upstream", status="proposed")
    remote.commit({f"{M}/{ATTEMPT}.md": edited}, "Agent edits its proposal")
    with django_capture_on_commit_callbacks(execute=True):
        decision = proposal_approve(actor=Actor(user=reviewer_user), memory=memory)
    decision.refresh_from_db()
    assert decision.state == PushState.CONFLICT
    assert "changed upstream" in decision.state_detail
    assert remote.show(f"{M}/{ATTEMPT}.md") == edited
    assert remote.log("%s")[0] == "Agent edits its proposal"


def test_it_marks_a_conflict_when_the_proposal_vanished_upstream(
    repository, remote, reviewer_user, django_capture_on_commit_callbacks
):
    memory = proposal(repository, ATTEMPT)
    remote.commit({f"{M}/{ATTEMPT}.md": None}, "Agent withdraws")
    with django_capture_on_commit_callbacks(execute=True):
        decision = proposal_reject(actor=Actor(user=reviewer_user), memory=memory, comment="no")
    decision.refresh_from_db()
    assert decision.state == PushState.CONFLICT and "removed upstream" in decision.state_detail


def test_it_makes_one_commit_for_a_batch(
    repository, remote, reviewer_user, django_capture_on_commit_callbacks
):
    ids = [proposal(repository, m).pk for m in (SQLITE, ATTEMPT)]
    with django_capture_on_commit_callbacks(execute=True):
        (decision,) = proposals_review(
            actor=Actor(user=reviewer_user),
            team=repository.team,
            memory_ids=ids,
            kind="approve",
        ).decisions
    decision.refresh_from_db()
    assert decision.state == PushState.PUSHED
    assert len(remote.log()) == 2
    assert remote.log("%s")[0] == "Approve 2 proposals"
    body = remote.log("%b")
    assert any(line.startswith("- DEC-") for line in body)


def test_it_refuses_mutating_git_without_the_lock(repository):
    copy = working_copy(repository)
    with pytest.raises(LockNotHeld):
        copy.fetch()
    with pytest.raises(LockNotHeld):
        copy.commit_objects(
            parent=repository.head_commit,
            changes={"x.md": ("100644", b"x\n")},
            message="x",
            author=("a", "a@x"),
            committer=("a", "a@x"),
        )
    assert copy.rev_parse("HEAD") == repository.head_commit  # reads are fine


def test_it_shows_an_unreachable_remote_as_an_error_not_an_empty_queue(repository, remote):
    import shutil

    shutil.rmtree(remote.bare)
    repository = repository_sync(repository_id=repository.pk)
    assert repository.last_sync_ok is False
    assert "fetch failed" in repository.last_error
    assert Memory.objects.filter(repository=repository, status="proposed").count() == 3


def test_it_reports_broken_files_on_the_repository(repository, remote):
    remote.commit({f"{M}/20260301-broken.md": "---\nid: [unclosed\n---\n"}, "Broken")
    repository = repository_sync(repository_id=repository.pk)
    assert repository.last_sync_ok is True
    assert [p["code"] for p in repository.problems] == ["yaml-syntax"]
    assert repository.problems[0]["path"] == f"{M}/20260301-broken.md"


@pytest.mark.django_db(transaction=True)
def test_it_lands_two_concurrent_approvals_in_order(team, remote, data_dir, make_user):
    from memoryadmin.models import Role

    reviewer = make_user("rita", team=team, role=Role.REVIEWER)
    repo = repository_create(actor=Actor.system(), team=team, name="app", remote_url=remote.url)
    repository_sync(repository_id=repo.pk)
    targets = [proposal(repo, SQLITE), proposal(repo, ATTEMPT)]
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def approve(memory: Memory) -> None:
        try:
            barrier.wait()
            proposal_approve(actor=Actor(user=reviewer), memory=memory)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=approve, args=(m,)) for m in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    decisions = list(Decision.objects.order_by("id"))
    assert [d.state for d in decisions] == [PushState.PUSHED, PushState.PUSHED], [
        d.state_detail for d in decisions
    ]
    subjects = remote.log("%s")
    assert len(subjects) == 3  # seed + two decisions, none lost
    assert {s.split(":")[0] for s in subjects[:2]} == {
        f"Approve {targets[0].ref}",
        f"Approve {targets[1].ref}",
    }
    # in order: the later decision's commit sits on top of the earlier one
    assert subjects[0].startswith(f"Approve {decisions[1].items.get().ref}")
    assert proposal(repo, SQLITE).status == "active" and proposal(repo, ATTEMPT).status == "active"


def test_it_syncs_due_repositories_from_the_beat_task(repository, remote):
    from datetime import timedelta

    from django.utils import timezone

    from reviews.models import Repository
    from reviews.tasks import sync_due_repositories

    head = remote.commit({"README.md": "new\n"}, "Move on")
    assert sync_due_repositories() == 0  # just synced: not due
    Repository.objects.filter(pk=repository.pk).update(
        last_sync_at=timezone.now() - timedelta(hours=1)
    )
    assert sync_due_repositories() == 1  # eager in tests: runs now
    repository.refresh_from_db()
    assert repository.head_commit == head


def test_it_keeps_the_history_query_count_flat(
    client, reviewer_user, repository, django_assert_max_num_queries
):
    from django.urls import reverse

    for memory_id in (SQLITE, ATTEMPT):
        proposal_reject(
            actor=Actor(user=reviewer_user), memory=proposal(repository, memory_id), comment="no"
        )
    client.force_login(reviewer_user)
    url = reverse("review-history", args=["alpha"])
    client.get(url)
    with django_assert_max_num_queries(9):  # +1: the filter bar's repository choices
        body = client.get(url).content.decode()
    assert body.count("badge warn") == 2 and 'hx-trigger="every 2s"' in body
