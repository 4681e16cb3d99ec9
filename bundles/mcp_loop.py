"""The threads an MCP request runs on (bundles/mcp.py): the process's one event loop thread, where
the SDK handles the request, and the request's own thread, where its tools run.

asgiref's `async_to_sync` starts a new event loop on a new thread for every call, and its
`sync_to_async` hands the tools back to the request thread; here the loop is started once per
process and the hand-back is a queue the request thread reads until its answer is ready.
"""

from __future__ import annotations

import asyncio
import os
import queue
import threading
from concurrent.futures import Future
from typing import Any


class RequestThread:
    """Work the event loop hands back to the request's thread: `call` (from the loop) queues a
    function and returns a future; `run_until` (on the request thread) runs what is queued
    until the request's own future is done."""

    def __init__(self) -> None:
        self._work: queue.SimpleQueue[tuple[Any, tuple, Future] | None] = queue.SimpleQueue()

    def call(self, function: Any, *args: Any) -> Future:
        future: Future = Future()
        self._work.put((function, args, future))
        return future

    def run_until(self, done: Future) -> Any:
        done.add_done_callback(lambda _: self._work.put(None))
        while (item := self._work.get()) is not None:
            function, args, future = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(function(*args))
            except BaseException as exc:  # handed to the awaiting tool call
                future.set_exception(exc)
        return done.result()


class EventLoopThread:
    """The process's event loop for MCP requests, on a daemon thread started on first use
    (again in a forked child: a thread does not survive fork)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = 0

    def get(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="mcp-loop", daemon=True)
                thread.start()
                self._loop, self._pid = loop, os.getpid()
            return self._loop
