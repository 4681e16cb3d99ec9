from __future__ import annotations

import pytest

from memoryadmin.celery import ping
from memoryadmin.health import health

pytestmark = pytest.mark.worker


def test_it_runs_a_task_in_a_real_worker_process(celery_worker):
    result = ping.apply_async(args=["round-trip"], ignore_result=False)
    # Without a result backend we observe the worker through its log instead.
    from tests.conftest import wait_for

    wait_for(
        lambda: (
            "memoryadmin.ping" in celery_worker.log_path.read_text()
            and "succeeded" in celery_worker.log_path.read_text()
        ),
        timeout=30,
    )
    assert result.id


def test_it_reports_a_live_worker_in_healthz(celery_worker, client):
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 200, body
    assert body["checks"]["worker"]["ok"] is True
    assert body["checks"]["database"]["ok"] is True
    ok, _ = health()
    assert ok
