"""Import jobs nobody runs: a task that was never sent, a worker that died. The beat's sweeper.

An ImportJob carries a lease (`heartbeat_at`): the time its task was last sent while queued,
the worker's heartbeat while running. `bundles.tasks.sweep_import_jobs` sends again every job
whose lease is older than BUNDLE_IMPORT_LEASE_SECONDS. This does not depend on the broker
flagging a redelivered message (kombu's filesystem transport never does).
"""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from bundles.imports.jobs import MAX_ATTEMPTS, import_jobs_sweep
from bundles.models import Chunk, ImportJob, JobState
from bundles.tasks import import_job_run_task
from bundles.uploads import scratch_dir
from memoryadmin.celery import app
from memoryadmin.models import AuditEvent
from tests.bundles.helpers import chunk, make_bundle
from tests.conftest import wait_for
from tests.faults.workers import worker

LEASE = 2  # seconds, for the worker processes of these tests


def _bundle_file(count: int, tag: str) -> tuple[str, int]:
    chunks = [chunk(i, f"{tag} chunk {i} " + "x" * 200) for i in range(count)]
    path = scratch_dir() / f"sweeper-{tag}-{time.monotonic_ns()}.json"
    data = json.dumps(make_bundle(chunks=chunks)).encode()
    path.write_bytes(data)
    return str(path), len(data)


@pytest.fixture
def not_eager():  # type: ignore[no-untyped-def]
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = False
    yield
    app.conf.task_always_eager = previous


def test_it_fails_a_job_that_lost_its_worker_too_often(db, team, settings):
    settings.BUNDLE_IMPORT_LEASE_SECONDS = 60
    old = timezone.now() - timedelta(minutes=5)
    job = ImportJob.objects.create(
        team=team, state=JobState.RUNNING, heartbeat_at=old, attempts=MAX_ATTEMPTS
    )
    fresh = ImportJob.objects.create(team=team, state=JobState.RUNNING, heartbeat_at=timezone.now())
    assert import_jobs_sweep() == [job.pk]
    job.refresh_from_db()
    assert (job.state, job.error_code) == (JobState.FAILED, "worker-lost")
    assert str(MAX_ATTEMPTS) in job.error_message
    assert ImportJob.objects.get(pk=fresh.pk).state == JobState.RUNNING  # alive: left alone
    assert AuditEvent.objects.filter(action="bundle.import_failed", team=team).count() == 1


@pytest.mark.worker
def test_it_sends_again_a_job_whose_task_was_never_sent(
    transactional_db, team, settings, tmp_path, not_eager
):
    """The upload committed its job, then the broker was down: the job sits `queued`."""
    settings.BUNDLE_IMPORT_LEASE_SECONDS = 60
    path, size = _bundle_file(50, "queued")
    job = ImportJob.objects.create(
        team=team,
        scratch_path=path,
        size_bytes=size,
        heartbeat_at=timezone.now() - timedelta(minutes=2),
    )
    young = ImportJob.objects.create(team=team, heartbeat_at=timezone.now())  # just sent
    with worker(tmp_path, queue=app.conf.task_default_queue, pool="solo"):
        assert import_jobs_sweep() == [job.pk]
        assert import_jobs_sweep() == []  # its lease is fresh again: sent once
        wait_for(lambda: ImportJob.objects.get(pk=job.pk).is_finished, timeout=60)
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED, (job.error_code, job.error_message)
    assert (job.attempts, job.records_done) == (1, 50)
    assert Chunk.objects.filter(team=team).count() == 50
    assert ImportJob.objects.get(pk=young.pk).state == JobState.QUEUED
    event = AuditEvent.objects.get(action="bundle.import_requeued", team=team)
    assert event.data == {"was": "queued", "attempts": 0}


@pytest.mark.worker
def test_it_takes_over_a_job_whose_worker_was_killed(
    transactional_db, team, settings, tmp_path, not_eager
):
    """SIGKILL the whole worker (parent first: nobody requeues or redelivers the message)."""
    settings.BUNDLE_IMPORT_LEASE_SECONDS = LEASE
    count = 40_000
    path, size = _bundle_file(count, "killed")
    job = ImportJob.objects.create(
        team=team, scratch_path=path, size_bytes=size, heartbeat_at=timezone.now()
    )
    lease_env = {"MEMORYADMIN_BUNDLE_IMPORT_LEASE_SECONDS": str(LEASE)}
    with worker(tmp_path, env=lease_env) as first:
        import_job_run_task.apply_async(args=[job.pk], queue=first.queue)
        wait_for(lambda: ImportJob.objects.get(pk=job.pk).state == JobState.RUNNING, timeout=60)
        started = ImportJob.objects.get(pk=job.pk).heartbeat_at
        if connection.vendor == "postgresql":  # SQLite: the import holds the one write lock
            wait_for(lambda: ImportJob.objects.get(pk=job.pk).heartbeat_at > started, timeout=10)
        else:
            time.sleep(1.0)
        assert ImportJob.objects.get(pk=job.pk).state == JobState.RUNNING  # mid-import
        first.kill_all()
    assert import_jobs_sweep() == []  # still inside its lease
    time.sleep(LEASE + 0.5)
    job.refresh_from_db()
    assert job.state == JobState.RUNNING  # nobody will ever finish it by itself
    assert Chunk.objects.filter(team=team).count() == 0  # the killed import rolled back
    with worker(tmp_path, queue=app.conf.task_default_queue, env=lease_env):
        assert import_jobs_sweep() == [job.pk]
        wait_for(lambda: ImportJob.objects.get(pk=job.pk).is_finished, timeout=120)
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED, (job.error_code, job.error_message)
    assert job.attempts == 2
    assert Chunk.objects.filter(team=team).count() == count  # complete, each chunk once
    event = AuditEvent.objects.get(action="bundle.import_requeued", team=team)
    assert event.data == {"was": "running", "attempts": 1}
