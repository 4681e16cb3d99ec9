"""Named locks that hold across processes (and, with Redis, across machines).

With REDIS_URL set the lock is a Redis lock with a timeout; otherwise an flock on a file
under DATA_DIR/locks, which serialises the processes of one machine (the embedded default).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings


class LockBusy(Exception):
    """The lock is held by someone else and did not come free within the wait."""


@contextmanager
def named_lock(name: str, *, wait: float = 0.0, ttl: int = 900) -> Iterator[None]:
    if settings.REDIS_URL:
        import redis

        client = redis.Redis.from_url(settings.REDIS_URL)
        # A short lease, renewed while the holder lives: a SIGKILLed holder frees the lock
        # after one lease instead of after the whole ttl (15 minutes of "busy" before).
        lease = max(1, min(ttl, settings.LOCK_LEASE_SECONDS))
        # thread_local=False: the renewing thread must see the token the holder acquired with
        # (a thread-local token made every renewal fail, so a lock held past one lease expired).
        lock = client.lock(
            f"memoryadmin:lock:{name}",
            timeout=lease,
            blocking_timeout=wait or None,
            thread_local=False,
        )
        if not lock.acquire(blocking=wait > 0):
            raise LockBusy(name)
        done = threading.Event()
        renewer = threading.Thread(
            target=_renew, args=(lock, lease, time.monotonic() + ttl, done), daemon=True
        )
        renewer.start()
        try:
            yield
        finally:
            done.set()
            renewer.join(timeout=5)
            # expired while held: the ttl is the upper bound we chose
            with contextlib.suppress(redis.exceptions.LockError):
                lock.release()
        return
    settings.LOCK_DIR.mkdir(parents=True, exist_ok=True)
    path = settings.LOCK_DIR / (name.replace("/", "_").replace(":", "_") + ".lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockBusy(name) from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _renew(lock, lease: int, until: float, done: threading.Event) -> None:  # type: ignore[no-untyped-def]
    """Reset the lock's expiry every third of a lease, up to the holder's ttl."""
    import redis

    while not done.wait(lease / 3) and time.monotonic() < until:
        try:
            lock.reacquire()
        except (redis.exceptions.LockError, redis.exceptions.RedisError):
            return  # lost or unreachable: the holder's work is bounded by its own timeouts
