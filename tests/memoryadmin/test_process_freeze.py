"""A worker and a web process move what start-up made out of the collector's way, and bulk
work runs without it (memoryadmin.process)."""

from __future__ import annotations

import gc
import threading

import pytest
from celery.signals import worker_process_init, worker_ready

import memoryadmin.celery  # noqa: F401  (connects the worker's signals)
from memoryadmin.process import collector_paused, freeze_startup_objects


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


def test_a_paused_section_runs_without_the_collector_and_gives_it_back(collector_on):
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_the_collector_comes_back_after_an_error_too(collector_on):
    with pytest.raises(ValueError), collector_paused():
        raise ValueError("the work failed")
    assert gc.isenabled()


def test_nested_sections_give_it_back_when_the_outer_one_ends(collector_on):
    @collector_paused()
    def inner() -> bool:
        return gc.isenabled()

    with collector_paused():
        assert inner() is False
        assert not gc.isenabled()  # the inner section's end did not turn it back on
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off(collector_on):
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_sections_on_two_threads_give_it_back_when_the_last_one_ends(collector_on):
    entered, release = threading.Event(), threading.Event()

    def other() -> None:
        with collector_paused():
            entered.set()
            release.wait(5)

    thread = threading.Thread(target=other)
    with collector_paused():
        thread.start()
        assert entered.wait(5)
    assert not gc.isenabled()  # the other thread's section is still open
    release.set()
    thread.join(5)
    assert gc.isenabled()
