"""The reviews tasks: Celery's own retries for transient failures, a visible end after the
last one, and the sync that pushes what is still pending."""

from __future__ import annotations

import socket

import pytest
from celery.exceptions import Retry

from memoryadmin.audit import Actor
from reviews.gitenv import CONNECT_FAILED
from reviews.models import Decision, PushState, Repository
from reviews.services.decisions import proposal_approve
from reviews.tasks import repository_push_pending, repository_sync
from tests.reviews.test_workflow import ATTEMPT, proposal


def closed_port_url() -> str:
    """An http remote on loopback that refuses every connection (curl: couldn't connect)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/memories.git"


def test_it_keeps_a_decision_pending_and_says_why_while_a_transient_failure_has_retries_left(
    repository, reviewer_user
):
    decision = proposal_approve(
        actor=Actor(user=reviewer_user), memory=proposal(repository, ATTEMPT)
    )
    Repository.objects.filter(pk=repository.pk).update(remote_url=closed_port_url())
    with pytest.raises(Retry):  # eager in tests: the retry Celery schedules surfaces here
        repository_push_pending.apply(args=[repository.pk])
    decision.refresh_from_db()
    assert decision.state == PushState.PENDING
    assert decision.state_detail == "retrying: git fetch failed: " + CONNECT_FAILED


def test_it_pushes_what_is_pending_after_a_sync(
    repository, reviewer_user, remote, django_capture_on_commit_callbacks
):
    decision = proposal_approve(
        actor=Actor(user=reviewer_user), memory=proposal(repository, ATTEMPT)
    )
    assert Decision.objects.get(pk=decision.pk).state == PushState.PENDING  # push never queued
    with django_capture_on_commit_callbacks(execute=True):
        repository_sync.delay(repository.pk)
    decision.refresh_from_db()
    assert decision.state == PushState.PUSHED
    assert remote.log("%H")[0] == decision.commit_sha


def test_it_names_the_repository_lock_after_the_repository(repository):
    assert repository.lock_name == f"repo:{repository.pk}"
