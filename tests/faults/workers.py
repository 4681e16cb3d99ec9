"""Real Celery worker processes on a private queue, that tests may kill."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memoryadmin.celery import queue_names
from tests.conftest import ROOT, _worker_env


class Worker:
    def __init__(
        self,
        queue: str,
        log: Path,
        *,
        pool: str = "prefork",
        env: dict | None = None,
        only: list[str] | None = None,
        args: list[str] | None = None,
    ):
        """Consumes every queue of the default queue `queue`, or exactly the queues `only`."""
        self.queue = queue
        self.log_path = log
        self.name = f"faults-{uuid.uuid4().hex[:8]}@%h"
        self.log = log.open("a")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "memoryadmin",
                "worker",
                f"--pool={pool}",
                "--concurrency=1",
                "--loglevel=INFO",
                "-Q",
                ",".join(only or queue_names(queue)),
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "-n",
                self.name,
                *(args or []),
            ],
            cwd=ROOT,
            env={**_worker_env(), **(env or {})},
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("worker exited:\n" + self.log_path.read_text())
            if "ready." in self.log_path.read_text():
                return
            time.sleep(0.2)
        raise RuntimeError("worker not ready:\n" + self.log_path.read_text())

    def children(self) -> list[int]:
        path = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        return [int(pid) for pid in path.read_text().split()] if path.exists() else []

    def kill_child(self) -> int:
        (pid,) = self.children()
        os.kill(pid, signal.SIGKILL)
        return pid

    def kill_all(self) -> list[int]:
        """SIGKILL the parent first (so nobody requeues the message), then its pool children."""
        children = self.children()
        os.kill(self.process.pid, signal.SIGKILL)
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.wait()
        return [self.process.pid, *children]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


@contextmanager
def worker(tmp_path: Path, queue: str | None = None, **kwargs) -> Iterator[Worker]:  # type: ignore[no-untyped-def]
    queue = queue or f"faults-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    running = Worker(queue, tmp_path / f"{queue}.log", **kwargs)
    try:
        running.wait_ready()
        yield running
    finally:
        running.stop()
