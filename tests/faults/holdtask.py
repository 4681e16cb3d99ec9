"""A task that holds its worker until the test lets it go (loaded with `celery worker -I`)."""

from __future__ import annotations

import time
from pathlib import Path

from memoryadmin.celery import app


@app.task(name="tests.faults.hold")
def hold(folder: str, limit: float = 120.0) -> None:
    """Write `started`, then wait (busy, in this worker's main thread under the solo pool)
    until `release` exists; gives up after `limit` seconds so a failed test leaves no worker."""
    started = Path(folder) / "started"
    release = Path(folder) / "release"
    started.write_text(str(time.time()))
    deadline = time.monotonic() + limit
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
