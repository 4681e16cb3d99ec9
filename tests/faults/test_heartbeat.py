"""/healthz and a busy worker: liveness comes from the worker's heartbeat, not from a ping.

A real `celery worker` with the solo pool (its main thread runs the task, so it answers no
control message) is held inside a long task. Its heartbeat thread keeps writing, so /healthz
still names it alive while `celery inspect ping` gets no answer from it. Killed, it goes stale.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from django.test import override_settings

from memoryadmin.celery import app
from memoryadmin.heartbeat import beats_read
from tests.faults.workers import worker

pytestmark = [pytest.mark.worker, pytest.mark.timeout(180)]

HEARTBEAT = {"MEMORYADMIN_WORKER_HEARTBEAT_SECONDS": "1"}
STALE_AFTER = 3


@pytest.fixture
def not_eager():  # type: ignore[no-untyped-def]
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = False
    yield
    app.conf.task_always_eager = previous


def _node(name: str) -> str:
    return name.replace("%h", socket.gethostname())


def _wait_for(condition, what: str, timeout: float = 60.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"gave up waiting for {what}")


def _beat_of(node: str) -> float | None:
    return next((beat.at for beat in beats_read() if beat.name == node), None)


@override_settings(WORKER_HEARTBEAT_STALE_AFTER=STALE_AFTER)
def test_a_worker_busy_with_a_long_task_is_alive_in_healthz(
    tmp_path, client, transactional_db, not_eager
):
    with worker(tmp_path, pool="solo", env=HEARTBEAT, args=["-I", "tests.faults.holdtask"]) as w:
        node = _node(w.name)
        app.send_task("tests.faults.hold", args=[str(tmp_path)], queue=w.queue)
        started_file = Path(tmp_path) / "started"
        _wait_for(started_file.exists, "the task to start")
        started = float(started_file.read_text())
        # Heartbeats written while the task runs, past the point where the first one is stale.
        _wait_for(
            lambda: (_beat_of(node) or 0) > started + STALE_AFTER + 1,
            "a heartbeat written while the worker is busy",
        )

        response = client.get("/healthz")
        body = response.json()
        assert response.status_code == 200, body
        assert node in body["checks"]["worker"]["workers"]
        # (workers killed by earlier tests may have left stale heartbeats in a shared cache)
        assert node not in body["checks"]["worker"].get("stale", {})
        # The blocking ping the health check used to send gets no answer from this worker.
        assert app.control.ping(destination=[node], timeout=1.0) == []

        (Path(tmp_path) / "release").write_text("go")


@override_settings(WORKER_HEARTBEAT_STALE_AFTER=STALE_AFTER)
def test_a_killed_worker_goes_stale_and_a_stopped_one_is_gone(tmp_path, client, transactional_db):
    with worker(tmp_path, pool="solo", env=HEARTBEAT) as w:
        node = _node(w.name)
        _wait_for(lambda: _beat_of(node), "the first heartbeat")
        w.kill_all()
        last = _beat_of(node)
        assert last is not None
        _wait_for(lambda: time.time() > last + STALE_AFTER + 1, "the heartbeat to age")
        check = client.get("/healthz").json()["checks"]["worker"]
        assert node not in check["workers"]
        assert check["stale"][node] > STALE_AFTER

    with worker(tmp_path, pool="solo", env=HEARTBEAT) as w:
        node = _node(w.name)
        _wait_for(lambda: _beat_of(node), "the first heartbeat")
    # stop() ended it with SIGTERM: a clean shutdown takes its heartbeat away.
    assert _beat_of(node) is None
