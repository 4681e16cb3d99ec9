"""Fault tests start and kill their own workers; the session's shared worker must not compete.

It consumes the same default queue, and without these tests' environment (for example the
loopback-http allowance) it would take their tasks and fail them, so it stops consuming for the
length of each test here.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memoryadmin.celery import app, queue_names
from tests.conftest import SESSION_WORKER


@pytest.fixture(autouse=True)
def session_worker_paused() -> Iterator[None]:
    name = SESSION_WORKER.get("name")
    queues = queue_names(app.conf.task_default_queue)
    if name:
        for queue in queues:
            app.control.cancel_consumer(queue, destination=[name], reply=True, timeout=5)
    try:
        yield
    finally:
        if name:
            for queue in queues:
                app.control.add_consumer(queue, destination=[name], reply=True, timeout=5)
