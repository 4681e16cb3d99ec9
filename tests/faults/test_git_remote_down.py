"""A git remote that is unreachable, then back; a remote that refuses the push.

Unreachable: a real `git http-backend` behind a token, stopped (connection refused) while a
decision is pushed by a real worker. The decision stays `pending` with the scrubbed reason,
the task retries with backoff, history shows it; once the server is back, the beat's sync
pushes it, once. Refusing: a pre-receive hook declines; the decision fails with the remote's
reason, shown in history and on the team dashboard, and a new approval lands once it accepts.
"""

from __future__ import annotations

import base64
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from django.db import transaction
from django.test import Client

from memoryadmin.audit import Actor
from memoryadmin.celery import app
from memoryadmin.models import AuditEvent
from reviews.models import Decision, Memory, PushState, Repository
from reviews.services.decisions import proposal_approve
from reviews.services.push import TRAILER
from reviews.services.repositories import repository_create, repository_sync
from reviews.tasks import sync_due_repositories
from tests.conftest import wait_for
from tests.faults.workers import worker
from tests.reviews.conftest import git, make_remote
from tests.reviews.test_http_remote import _handler

TOKEN = "faults-remote-token-5f2b9c"
ATTEMPT = "20260203-cache-attempt"
SQLITE = "20260201-use-sqlite"


class GitHttpServer:
    """`git http-backend` on a fixed loopback port that can go away and come back."""

    def __init__(self, root: Path) -> None:
        basic = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
        self.handler = _handler(root, f"Basic {basic}")
        self.port = 0
        self.httpd: ThreadingHTTPServer | None = None
        self.start()

    def start(self) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), self.handler)
        self.port = self.httpd.server_port
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/remote.git"


def _commits(bare: Path, decision: Decision) -> list[str]:
    return git(bare, "log", "--format=%H", f"--grep=^{TRAILER}: {decision.pk}$", "main").split()


@pytest.mark.worker
def test_it_keeps_a_decision_pending_while_the_remote_is_unreachable(
    transactional_db, team, reviewer_user, tmp_path, settings
):
    settings.DATA_DIR = tmp_path / "data"
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = True  # loopback http
    remote = make_remote(tmp_path / "git")
    server = GitHttpServer(remote.bare.parent)
    previous = app.conf.task_always_eager
    try:
        with transaction.atomic():  # eager: the first sync runs here
            repository = repository_create(
                actor=Actor.system(),
                team=team,
                name="http",
                remote_url=server.url,
                credential_kind="https-token",
                credential_secret=TOKEN,
            )
        repository_sync(repository_id=repository.pk)
        memory = Memory.objects.get(repository=repository, memory_id=ATTEMPT)
        server.stop()  # connection refused from now on
        app.conf.task_always_eager = False
        local = {"MEMORYADMIN_REPOSITORY_ALLOW_LOCAL_REMOTES": "true"}
        with worker(tmp_path, queue=app.conf.task_default_queue, pool="solo", env=local) as running:
            decision = proposal_approve(actor=Actor(user=reviewer_user), memory=memory)
            wait_for(
                lambda: Decision.objects.get(pk=decision.pk).state_detail.startswith("retrying"),
                timeout=60,
            )
            decision.refresh_from_db()
            assert decision.state == PushState.PENDING
            assert "refused" in decision.state_detail.lower() or "connect" in (
                decision.state_detail.lower()
            ), decision.state_detail
            assert TOKEN not in decision.state_detail
            wait_for(lambda: "Retry in" in running.log_path.read_text(), timeout=30)

            client = Client()
            client.force_login(reviewer_user)
            history = client.get(f"/t/{team.slug}/reviews/history/").content.decode()
            assert "pending" in history and "retrying" in history and TOKEN not in history

            server.start()  # back, on the same port
            Repository.objects.filter(pk=repository.pk).update(last_sync_at=None)
            assert sync_due_repositories() == 1  # the beat's sweep: sync, then push pending
            wait_for(
                lambda: Decision.objects.get(pk=decision.pk).state != PushState.PENDING,
                timeout=60,
            )
            log = running.log_path.read_text()
    finally:
        app.conf.task_always_eager = previous
        server.stop()
    decision.refresh_from_db()
    assert decision.state == PushState.PUSHED, (decision.state, decision.state_detail, log[-3000:])
    assert decision.attempts >= 2
    assert _commits(remote.bare, decision) == [decision.commit_sha]  # pushed once
    assert 'status: "active"' in remote.show(f".memoryrail/memories/{ATTEMPT}.md")
    assert TOKEN not in log


def test_it_fails_a_push_the_remote_refuses_and_says_why(
    transactional_db, team, reviewer_user, tmp_path, settings
):
    settings.DATA_DIR = tmp_path / "data"
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = True
    remote = make_remote(tmp_path / "git")
    with transaction.atomic():
        repository = repository_create(
            actor=Actor.system(), team=team, name="app", remote_url=remote.url, allow_local=True
        )
    repository_sync(repository_id=repository.pk)
    hook = remote.bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'pushes are frozen until Monday' >&2\nexit 1\n")
    hook.chmod(0o755)
    memory = Memory.objects.get(repository=repository, memory_id=ATTEMPT)

    decision = proposal_approve(actor=Actor(user=reviewer_user), memory=memory)  # eager push
    decision.refresh_from_db()
    assert decision.state == PushState.FAILED
    assert "pushes are frozen until Monday" in decision.state_detail
    assert _commits(remote.bare, decision) == []
    assert AuditEvent.objects.filter(action="review.push-failed", team=team).count() == 1

    client = Client()
    client.force_login(reviewer_user)
    for page in (f"/t/{team.slug}/reviews/history/", f"/t/{team.slug}/"):
        html = client.get(page).content.decode()
        assert "failed" in html and "frozen until Monday" in html, page

    hook.unlink()  # the remote accepts again: the proposal is still open, approve it again
    again = proposal_approve(actor=Actor(user=reviewer_user), memory=memory)
    again.refresh_from_db()
    assert again.state == PushState.PUSHED, again.state_detail
    assert _commits(remote.bare, again) == [again.commit_sha]
    assert Decision.objects.get(pk=decision.pk).state == PushState.FAILED  # history unchanged
