"""A real refresh end to end through a Celery worker process."""

from __future__ import annotations

import pytest

from memoryadmin.audit import Actor
from sources import selectors
from sources.models import RefreshRun, RunStatus
from sources.services.lifecycle import source_add, source_approve, source_refresh_request
from tests.conftest import wait_for
from tests.sources.helpers import record_text, write_source

pytestmark = pytest.mark.worker


def test_it_refreshes_a_source_in_a_real_worker(celery_worker, team, tmp_path):
    write_source(tmp_path, {"a": record_text("a"), "b": record_text("b")})
    source = source_add(actor=Actor.system(), team=team, location=str(tmp_path))
    source_approve(actor=Actor.system(), source=source)
    run = source_refresh_request(actor=Actor.system(), source=source)
    finished = wait_for(
        lambda: RefreshRun.objects.filter(pk=run.pk, status=RunStatus.SUCCEEDED).first(),
        timeout=60,
    )
    assert finished.record_count == 2
    assert sorted(r.record_id for r in selectors.context_records(team)) == ["a", "b"]
