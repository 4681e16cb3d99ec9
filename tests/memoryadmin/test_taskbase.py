"""Every task queues after commit: nothing is sent for work whose transaction rolled back."""

from __future__ import annotations

import pytest
from django.db import transaction

from memoryadmin.celery import ping
from memoryadmin.taskbase import MemoryadminTask


def test_it_makes_every_task_a_memoryadmin_task():
    assert isinstance(ping, MemoryadminTask)


@pytest.mark.django_db
def test_it_sends_after_commit_and_never_after_a_rollback(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks, transaction.atomic():
        ping.delay_on_commit("kept")
    assert len(callbacks) == 1
    with (
        django_capture_on_commit_callbacks(execute=False) as rolled_back,
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        ping.delay_on_commit("dropped")
        raise RuntimeError("roll back")
    assert rolled_back == []
