"""A worker and a web process move what start-up made out of the collector's way."""

from __future__ import annotations

import gc

from celery.signals import worker_process_init, worker_ready

import memoryadmin.celery  # noqa: F401  (connects the worker's signals)
from memoryadmin.process import freeze_startup_objects


def _connected(signal) -> bool:  # type: ignore[no-untyped-def]
    return any(receiver is freeze_startup_objects for _, receiver in signal.receivers)


def test_a_prefork_child_and_a_ready_worker_freeze_their_start_up():
    assert _connected(worker_process_init)
    assert _connected(worker_ready)


def test_freezing_moves_the_live_objects_to_the_permanent_generation():
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    marker = [object() for _ in range(10)]
    try:
        freeze_startup_objects(sender=None)  # as a signal calls it
        frozen = gc.get_freeze_count()
        assert frozen > len(marker)
        gc.collect()
        assert gc.get_freeze_count() == frozen  # a full collection leaves them frozen
    finally:
        gc.unfreeze()
