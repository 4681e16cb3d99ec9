"""The base class of every task (the app's `task_cls`): queue after commit, never raise a
broker outage into the request that queued the work."""

from __future__ import annotations

from typing import Any

from celery.contrib.django.task import DjangoTask
from django.db import transaction


class MemoryadminTask(DjangoTask):
    """`delay_on_commit` / `apply_async_on_commit` send once the caller's transaction commits
    (nothing is sent if it rolls back); a broker failure is logged, the commit stands, and the
    periodic sweeps pick the work up later."""

    def delay_on_commit(self, *args: Any, **kwargs: Any) -> None:
        self.apply_async_on_commit(args, kwargs)

    def apply_async_on_commit(self, *args: Any, **kwargs: Any) -> None:
        def send() -> None:  # a function, not a partial: Django logs a failure by __qualname__
            self.apply_async(*args, **kwargs)

        # robust: a broker outage is logged by Django and does not undo the caller's commit.
        transaction.on_commit(send, robust=True)
