"""A worker process killed with SIGKILL in the middle of a background import.

Celery is configured with acks_late + reject_on_worker_lost: the pool's parent sees its child
die, requeues the message, and a new child runs the task again. The import must then be
complete (every chunk once) and the job's state honest — not "running" forever.
"""

from __future__ import annotations

import json
import time

import pytest
from django.conf import settings

from bundles.models import Chunk, ImportJob, JobState
from bundles.tasks import import_job_run_task
from bundles.uploads import scratch_dir
from memoryadmin.celery import app
from tests.bundles.helpers import chunk, make_bundle
from tests.conftest import wait_for
from tests.faults.workers import worker

pytestmark = [
    pytest.mark.worker,
    pytest.mark.skipif(
        not settings.REDIS_URL,
        reason="kombu's filesystem transport does not mark requeued messages as redelivered",
    ),
]


def _big_bundle_file(count: int) -> tuple[str, int]:
    chunks = [chunk(i, f"chunk number {i} " + "x" * 200) for i in range(count)]
    fd_path = scratch_dir() / f"faults-{time.monotonic_ns()}.json"
    data = json.dumps(make_bundle(chunks=chunks)).encode()
    fd_path.write_bytes(data)
    return str(fd_path), len(data)


def test_it_finishes_an_import_whose_worker_was_killed_mid_way(transactional_db, team, tmp_path):
    count = 40_000
    path, size = _big_bundle_file(count)
    job = ImportJob.objects.create(team=team, scratch_path=path, size_bytes=size)
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = False
    try:
        with worker(tmp_path) as running:
            import_job_run_task.apply_async(args=[job.pk], queue=running.queue)
            wait_for(lambda: ImportJob.objects.get(pk=job.pk).state == JobState.RUNNING, timeout=60)
            time.sleep(1.0)  # well inside the import's one transaction
            assert ImportJob.objects.get(pk=job.pk).state == JobState.RUNNING
            killed = running.kill_child()
            # The parent requeues the message; a fresh child runs the task again.
            wait_for(
                lambda: (
                    ImportJob.objects.get(pk=job.pk).state in (JobState.SUCCEEDED, JobState.FAILED)
                ),
                timeout=120,
            )
            log = running.log_path.read_text()
    finally:
        app.conf.task_always_eager = previous
    job.refresh_from_db()
    assert "WorkerLostError" in log or str(killed) in log, log[-2000:]
    assert job.state == JobState.SUCCEEDED, (job.state, job.error_code, job.error_message)
    assert Chunk.objects.filter(team=team).count() == count  # complete, and each chunk once
