"""What this process serves: "web" once memoryadmin/wsgi.py loaded the application, else ""
(a Celery worker, a management command, a test). Lower floors mark it, upper floors read it
(bundles/embeddings/model.py tunes torch for query encoding in web processes)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_role = ""
# collector_paused: how many sections are open in this process, and whether the collector
# ran before the first of them
_pause = threading.Lock()
_paused = 0
_was_enabled = False


def process_mark(role: str) -> None:
    global _role
    _role = role


def process_role() -> str:
    return _role


def freeze_startup_objects(**_: object) -> None:
    """After start-up (settings, apps, URLconf, task modules): collect once, then move every
    object alive into the collector's permanent generation (`gc.freeze`). They live as long as
    the process anyway; a full collection in a large piece of work then walks only what the
    work made (two of them were 0.07-0.1 s of a 10k-record cold refresh), and children forked
    later keep sharing their pages. Takes a signal's keyword arguments (Celery's)."""
    gc.collect()
    gc.freeze()


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector stays off while a bulk piece of work runs (a refresh, an
    index), then runs as before. Such work makes hundreds of thousands of container objects
    that live a while (records, rows, batches), and the collector kept walking them: ~180
    young-generation collections, 15 middle ones and a full one per 10,000-record refresh,
    50-60 ms of CPU, as much again per 5,000-memory index. The work makes next to no cycles
    (225 objects left for the collector after a 10k refresh without it, none after an
    index): reference counting frees the rest as it goes, so memory stays as flat as before.

    Works as a decorator too. Sections may nest and run on several threads at once: the
    collector comes back when the last one ends, and only if it ran before the first."""
    global _paused, _was_enabled
    with _pause:
        if _paused == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _pause:
            _paused -= 1
            if _paused == 0 and _was_enabled:
                gc.enable()
