"""A worker SIGKILLed in the middle of a source refresh and in the middle of a git push.

Real prefork workers, real signals, a real bare remote whose pre-receive hook holds the push
open long enough to kill the worker while `git push` runs. Locks are Redis locks with a short
renewed lease when REDIS_URL is set (a dead holder frees them after one lease), else flocks
(freed by the kernel when the process dies).
"""

from __future__ import annotations

import os
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import transaction

from memoryadmin.audit import Actor
from memoryadmin.celery import app
from reviews.models import Decision, Memory, PushState
from reviews.services.decisions import proposal_approve
from reviews.services.push import TRAILER
from reviews.services.repositories import repository_create, repository_sync
from reviews.tasks import sync_due_repositories
from sources.models import RefreshRun, RunStatus, Snapshot, Source
from sources.services.lifecycle import source_add, source_approve, source_refresh_request
from tests.conftest import wait_for
from tests.faults.workers import worker
from tests.reviews.conftest import git, make_remote
from tests.sources.helpers import record_text, write_source

pytestmark = pytest.mark.worker

LEASE_ENV = {"MEMORYADMIN_LOCK_LEASE_SECONDS": "2"}


@pytest.fixture
def not_eager():  # type: ignore[no-untyped-def]
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = False
    yield
    app.conf.task_always_eager = previous


def _state(source: Source) -> tuple[int | None, list[tuple[str, str]]]:
    source.refresh_from_db()
    snapshot = source.current_snapshot
    rows = list(snapshot.records.order_by("record_id").values_list("record_id", "body"))
    return snapshot.pk, rows


class SlowSourceServer:
    """Plain HTTP on 127.0.0.1 serving a folder; a GET of `hold` waits until released."""

    def __init__(self, folder: Path, hold: str) -> None:
        self.asked, self.release = threading.Event(), threading.Event()
        server = self

        class Handler(SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
                super().__init__(*args, directory=str(folder), **kwargs)

            def do_GET(self) -> None:
                if self.path == hold:
                    server.asked.set()
                    server.release.wait(60)
                super().do_GET()

            def log_message(self, *args: object) -> None:
                return None

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}/src/"

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def test_it_keeps_the_old_snapshot_when_a_refresh_is_killed(
    transactional_db, team, tmp_path, settings, not_eager
):
    settings.SOURCE_ALLOW_HTTP_LOOPBACK = True
    records = {f"r{i}": record_text(f"r{i}") for i in range(10)}
    write_source(tmp_path / "www" / "src", records)
    server = SlowSourceServer(tmp_path / "www", hold="/src/records/zz-slow.md")
    try:
        app.conf.task_always_eager = True  # setup: the refresh on approval runs here
        with transaction.atomic():
            source = source_add(actor=Actor.system(), team=team, location=server.base)
            source_approve(actor=Actor.system(), source=source)
        app.conf.task_always_eager = False
        before = _state(source)
        snapshots = Snapshot.objects.filter(source=source).count()
        records["zz-slow"] = record_text("zz-slow", body="Held by the server.\n")
        manifest = write_source(tmp_path / "www" / "src", records) / "memories.json"
        later = time.time() + 10  # a new Last-Modified: no 304 for the changed manifest
        os.utime(manifest, (later, later))
        env = {**LEASE_ENV, "MEMORYADMIN_SOURCE_ALLOW_HTTP_LOOPBACK": "true"}
        with worker(tmp_path, queue=app.conf.task_default_queue, env=env) as running:
            with transaction.atomic():
                first = source_refresh_request(actor=Actor.system(), source=source)
            assert server.asked.wait(30), RefreshRun.objects.get(pk=first.pk).__dict__
            assert RefreshRun.objects.get(pk=first.pk).status == RunStatus.RUNNING
            running.kill_child()  # mid-refresh: the held record is being read
            server.release.set()
            time.sleep(0.5)
            assert _state(source) == before  # the old snapshot, every record as it was
            assert Snapshot.objects.filter(source=source).count() == snapshots

            with transaction.atomic():  # a re-run, on the worker's fresh child
                second = source_refresh_request(actor=Actor.system(), source=source)
            wait_for(lambda: RefreshRun.objects.get(pk=second.pk).is_finished, timeout=90)
            wait_for(lambda: RefreshRun.objects.get(pk=first.pk).is_finished, timeout=30)
            log = running.log_path.read_text()
    finally:
        server.close()
    first.refresh_from_db()
    second.refresh_from_db()
    assert second.status == RunStatus.SUCCEEDED, (second.error_code, second.error)
    # Redelivered and finished (Redis), or found abandoned by the next run under the lock.
    assert (first.status, first.error_code) in (
        (RunStatus.SUCCEEDED, ""),
        (RunStatus.FAILED, "worker-lost"),
    ), (first.status, first.error_code)
    assert "WorkerLostError" in log or "SIGKILL" in log, log[-2000:]
    snapshot_id, rows = _state(source)
    assert snapshot_id != before[0] and len(rows) == 11
    assert not RefreshRun.objects.filter(source=source, status=RunStatus.RUNNING).exists()


def _slow_hook(bare: Path, marks: Path) -> None:
    """Hold the first push in pre-receive for 3 s (then accept it); later pushes pass at once."""
    marks.mkdir()
    (marks / "slow").touch()
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(
        "#!/bin/sh\n"
        f'if [ -f "{marks}/slow" ]; then\n'
        f'  rm "{marks}/slow"; touch "{marks}/started"; sleep 3; touch "{marks}/done"\n'
        "fi\nexit 0\n"
    )
    hook.chmod(0o755)


def test_it_records_a_push_whose_worker_was_killed_mid_push(
    transactional_db, team, reviewer_user, tmp_path, settings, not_eager
):
    settings.DATA_DIR = tmp_path / "data"
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = True
    remote = make_remote(tmp_path / "git")
    app.conf.task_always_eager = True  # setup: the first sync runs here
    with transaction.atomic():
        repository = repository_create(
            actor=Actor.system(), team=team, name="app", remote_url=remote.url, allow_local=True
        )
    repository_sync(repository_id=repository.pk)
    app.conf.task_always_eager = False
    marks = tmp_path / "marks"
    _slow_hook(remote.bare, marks)
    memory = Memory.objects.get(repository=repository, memory_id="20260203-cache-attempt")

    with worker(tmp_path, queue=app.conf.task_default_queue, env=LEASE_ENV) as running:
        decision = proposal_approve(actor=Actor(user=reviewer_user), memory=memory)
        wait_for(lambda: (marks / "started").exists(), timeout=60)
        running.kill_child()  # `git push` is inside the hook now; it outlives the worker
        assert Decision.objects.get(pk=decision.pk).state == PushState.PENDING  # recorded
        wait_for(lambda: (marks / "done").exists(), timeout=20)
        if django_settings.REDIS_URL:
            # The pool parent requeues the message; the redelivered task waits out the dead
            # holder's lock lease, finds the commit by its trailer and records it.
            wait_for(
                lambda: Decision.objects.get(pk=decision.pk).state != PushState.PENDING,
                timeout=60,
            )
        else:
            # The filesystem transport may not hand the message back: the beat's sweeper
            # syncs the repository, which pushes what is pending.
            repository.__class__.objects.filter(pk=repository.pk).update(last_sync_at=None)
            assert sync_due_repositories() >= 1
            wait_for(
                lambda: Decision.objects.get(pk=decision.pk).state != PushState.PENDING,
                timeout=60,
            )
        log = running.log_path.read_text()
    decision.refresh_from_db()
    assert decision.state == PushState.PUSHED, (decision.state, decision.state_detail)
    assert "WorkerLostError" in log or "SIGKILL" in log, log[-2000:]
    commits = git(remote.bare, "log", "--format=%H", f"--grep=^{TRAILER}: {decision.pk}$", "main")
    assert commits.split() == [decision.commit_sha]  # pushed exactly once
    assert 'status: "active"' in remote.show(".memoryrail/memories/20260203-cache-attempt.md")
