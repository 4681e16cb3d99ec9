"""A decision pushed by a real Celery worker process."""

from __future__ import annotations

import shutil

import pytest

from memoryadmin.audit import Actor
from memoryadmin.models import Role
from reviews.models import Decision, PushState
from reviews.services.decisions import proposal_approve
from reviews.services.push import decision_push_retry
from reviews.services.repositories import repository_create, repository_sync
from tests.conftest import wait_for
from tests.reviews.test_workflow import ATTEMPT, proposal

pytestmark = pytest.mark.worker


def test_it_pushes_a_decision_from_a_real_worker(celery_worker, settings, team, make_user, remote):
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = True  # the in-process sync checks it too
    reviewer = make_user("rita", team=team, role=Role.REVIEWER)
    # The worker runs with the default DATA_DIR, so this test uses it too (and cleans up).
    repository = repository_create(
        actor=Actor.system(), team=team, name="app", remote_url=remote.url, allow_local=True
    )
    try:
        repository_sync(repository_id=repository.pk)
        memory = proposal(repository, ATTEMPT)
        decision = proposal_approve(actor=Actor(user=reviewer), memory=memory)
        assert decision.state == PushState.PENDING  # visible at once
        wait_for(
            lambda: Decision.objects.get(pk=decision.pk).state != PushState.PENDING, timeout=60
        )
        decision.refresh_from_db()
        assert decision.state == PushState.PUSHED, decision.state_detail
        assert remote.log("%s")[0].startswith(f"Approve {memory.ref}")
        assert "reviews.tasks.push_repository" in celery_worker.log_path.read_text()
    finally:
        shutil.rmtree(repository.working_dir, ignore_errors=True)


def test_it_retries_a_refused_push_on_a_real_worker(
    celery_worker, settings, team, make_user, remote
):
    from memoryadmin.models import AuditEvent
    from tests.reviews.test_retry import REFUSAL, commits_of, refuse_pushes

    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = True  # the in-process sync checks it too

    reviewer = make_user("rita", team=team, role=Role.REVIEWER)
    repository = repository_create(
        actor=Actor.system(), team=team, name="app", remote_url=remote.url, allow_local=True
    )
    try:
        repository_sync(repository_id=repository.pk)
        hook = refuse_pushes(remote)
        decision = proposal_approve(
            actor=Actor(user=reviewer), memory=proposal(repository, ATTEMPT)
        )
        wait_for(
            lambda: Decision.objects.get(pk=decision.pk).state != PushState.PENDING, timeout=60
        )
        decision.refresh_from_db()
        assert decision.state == PushState.FAILED and REFUSAL in decision.state_detail
        hook.unlink()
        retried = decision_push_retry(actor=Actor(user=reviewer), decision=decision)
        assert retried.state == PushState.PENDING  # visible at once; the worker pushes
        wait_for(
            lambda: Decision.objects.get(pk=decision.pk).state != PushState.PENDING, timeout=60
        )
        decision.refresh_from_db()
        assert decision.state == PushState.PUSHED, decision.state_detail
        assert commits_of(remote, decision) == [decision.commit_sha]
        assert AuditEvent.objects.filter(action="review.push-retry").count() == 1
    finally:
        shutil.rmtree(repository.working_dir, ignore_errors=True)


def test_it_fails_the_pending_decisions_visibly_after_the_last_retry_on_a_real_worker(
    celery_worker, settings, team, make_user, remote
):
    from memoryadmin.models import AuditEvent
    from reviews.gitenv import CONNECT_FAILED
    from reviews.models import Repository
    from reviews.tasks import repository_push_pending
    from tests.reviews.test_tasks import closed_port_url

    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = True  # the in-process sync checks it too
    reviewer = make_user("rita", team=team, role=Role.REVIEWER)
    repository = repository_create(
        actor=Actor.system(), team=team, name="app", remote_url=remote.url, allow_local=True
    )
    try:
        repository_sync(repository_id=repository.pk)
        Repository.objects.filter(pk=repository.pk).update(remote_url=closed_port_url())
        decision = proposal_approve(
            actor=Actor(user=reviewer), memory=proposal(repository, ATTEMPT)
        )  # its first push fails and is retried later, with backoff
        # The run that Celery would send after the last backoff: it fails, and gives up.
        repository_push_pending.apply_async(
            args=[repository.pk], retries=repository_push_pending.max_retries
        )
        wait_for(
            lambda: Decision.objects.get(pk=decision.pk).state != PushState.PENDING, timeout=60
        )
        decision.refresh_from_db()
        assert decision.state == PushState.FAILED
        assert decision.state_detail == "git fetch failed: " + CONNECT_FAILED
        assert AuditEvent.objects.filter(
            action="review.push-failed", target_id=str(decision.pk)
        ).exists()
    finally:
        shutil.rmtree(repository.working_dir, ignore_errors=True)
