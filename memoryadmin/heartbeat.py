"""Worker liveness without asking the worker: each worker writes a heartbeat to the cache.

A `celery worker` process starts a daemon thread when it is ready (`worker_ready`) that writes
`{"at": <epoch seconds>, "pid": …}` under its node name every `WORKER_HEARTBEAT_SECONDS`, and
keeps the list of node names in one index key. The thread runs beside the pool, so a worker busy
with a long task (even the `solo` pool, whose main thread is inside the task) keeps beating;
`celery inspect ping` would wait for that task and call the worker dead.

A heartbeat older than `WORKER_HEARTBEAT_STALE_AFTER` seconds means the process is gone or
frozen. A worker that shuts down cleanly removes its own heartbeat (`worker_shutdown`).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import cache

logger = logging.getLogger(__name__)

INDEX_KEY = "memoryadmin.worker-heartbeat.index"
KEY_PREFIX = "memoryadmin.worker-heartbeat."


@dataclass(frozen=True)
class Beat:
    name: str
    at: float

    def age(self, now: float) -> float:
        return max(0.0, now - self.at)


def _key(name: str) -> str:
    return KEY_PREFIX + name


def beat_write(name: str, *, now: float | None = None) -> None:
    """Record that worker `name` is alive now, and make sure the index lists it."""
    at = time.time() if now is None else now
    # Kept well past the stale mark, so a stale worker is reported as stale, not as absent.
    ttl = int(settings.WORKER_HEARTBEAT_STALE_AFTER * 10)
    cache.set(_key(name), {"at": at, "pid": os.getpid()}, timeout=ttl)
    names = set(cache.get(INDEX_KEY) or ())
    if name not in names:
        # A race with another worker's first beat can drop one name; its next beat re-adds it.
        live = cache.get_many([_key(n) for n in names])
        cache.set(INDEX_KEY, sorted({n for n in names if _key(n) in live} | {name}), timeout=None)


def beat_remove(name: str) -> None:
    cache.delete(_key(name))
    names = [n for n in (cache.get(INDEX_KEY) or ()) if n != name]
    cache.set(INDEX_KEY, names, timeout=None)


def beats_read() -> list[Beat]:
    """Every heartbeat still in the cache, newest first (stale ones included)."""
    names = list(cache.get(INDEX_KEY) or ())
    found = cache.get_many([_key(n) for n in names])
    beats = [
        Beat(name=n, at=float(found[_key(n)]["at"]))
        for n in names
        if isinstance(found.get(_key(n)), dict) and "at" in found[_key(n)]
    ]
    return sorted(beats, key=lambda beat: beat.at, reverse=True)


class HeartbeatThread(threading.Thread):
    """Writes `name`'s heartbeat every `interval` seconds until stopped."""

    def __init__(self, name: str, interval: float) -> None:
        super().__init__(name="memoryadmin-heartbeat", daemon=True)
        self.worker_name = name
        self.interval = interval
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                beat_write(self.worker_name)
            except Exception:  # the cache is down: try again next time, never kill the worker
                logger.warning("worker heartbeat not written", exc_info=True)
            self.stopping.wait(self.interval)

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=self.interval + 5)
        try:
            beat_remove(self.worker_name)
        except Exception:
            logger.warning("worker heartbeat not removed", exc_info=True)


_running: dict[str, HeartbeatThread] = {}


def on_worker_ready(sender: Any = None, **kwargs: Any) -> None:
    name = getattr(sender, "hostname", None) or f"worker-{os.getpid()}"
    thread = HeartbeatThread(name, float(settings.WORKER_HEARTBEAT_SECONDS))
    _running[name] = thread
    thread.start()


def on_worker_shutdown(sender: Any = None, **kwargs: Any) -> None:
    for name in list(_running):
        _running.pop(name).stop()
