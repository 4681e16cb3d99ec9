"""A local source's streamed read in a process of its own (`ForkedRead`): the same read as
`refresh_stream.StreamedRead`, forked from the refresh's process, its manifest, records (with
their rows to store) and result sent back through a pipe as they are read.

Why a process: on a thread, the read and the swap share one interpreter lock. A 10,000-record
cold refresh then took as long streamed as read first and stored after (1.14-1.22 s against
1.23 s), and spent 0.26 s more CPU in the handing of the lock back and forth (at each of the
read's 40,000 file calls). In a process of its own the read runs on the machine's other core
while the swap formats its rows and waits on PostgreSQL.

What the child may do: read the source with the fetcher it was forked with (the same folder
checks and limits as on a thread), parse, and write to its pipe. It never touches the database
connection, the broker or any other socket it inherited, and it ends with `os._exit`: no exit
handler, no finaliser, and no object of the parent's is freed (freeing a psycopg connection
would end the parent's session on the server). A child silent for the refresh deadline is
killed. Where `os.fork` is missing or refuses, the read runs on a thread as before.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pickle
import select
import signal
import struct
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Any

from django.conf import settings

from formats import openmemories as om
from sources.fetchers import Fetcher, SourceError
from sources.fetchers.read import ReadResult, RecordSpool, pack_record
from sources.services import refresh_stream
from sources.services.refresh_stream import ReadFailed, StreamedRead, provisional_rows

# A frame's length, before its pickle (`_frame_write`)
_LENGTH = struct.Struct("!Q")
# The pipe's buffer: the read runs ahead of the swap by about this much (Linux may refuse a
# size over /proc/sys/fs/pipe-max-size, 1 MiB by default; the default 64 KiB is kept then)
PIPE_BYTES = 1 << 20
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


class ReadProcessEnded(RuntimeError):
    """The read's process ended without telling its result (killed, or out of memory)."""


def local_read(fetcher: Fetcher, **read: Any) -> StreamedRead:
    """A local source's full read for the swap to stream: in a process of its own where this
    system forks and `SOURCE_READ_PROCESS` allows it, else on a thread."""
    forked = settings.SOURCE_READ_PROCESS and hasattr(os, "fork")
    return (ForkedRead if forked else StreamedRead)(fetcher, **read)


class ForkedRead(StreamedRead):
    """`StreamedRead`'s contract, its read in a forked process. The parent keeps the records'
    spool (the child sends each record as the spool packs it) and builds the result from the
    child's last message; `close` kills a child the swap gave up on."""

    def __init__(self, fetcher: Fetcher, **read: Any) -> None:
        super().__init__(fetcher, **read)  # now, previous_records, previous_manifest
        self._spool: RecordSpool | None = None
        self._pid = 0  # 0 while none is forked: a refused fork leaves the thread its ways
        self._data = -1  # the parent's end of the child's frames
        self._control = -1  # the parent's end of what it tells the child (the rows' maker)
        self._poller = select.poll()
        self._ended = False
        self._deadline = float(fetcher.policy.refresh_deadline)  # type: ignore[attr-defined]

    # -- the parent

    def start(self) -> None:
        data_read, data_write = os.pipe()
        control_read, control_write = os.pipe()
        with contextlib.suppress(OSError):
            fcntl.fcntl(data_write, F_SETPIPE_SZ, PIPE_BYTES)
        try:
            pid = os.fork()
        except OSError:
            for descriptor in (data_read, data_write, control_read, control_write):
                os.close(descriptor)
            super().start()  # no process to be had: the read's thread
            return
        if pid == 0:  # pragma: no cover - the child (its work is measured by the parent)
            os.close(data_read)
            os.close(control_write)
            _child(self, data_write, control_read)
        os.close(data_write)
        os.close(control_read)
        self._pid, self._data, self._control = pid, data_read, control_write
        self._poller.register(data_read, select.POLLIN)
        self._spool = RecordSpool(self._previous)
        self._fetcher.close()  # the parent's copy: the child reads with its own

    def rows_for(self, snapshot_id: int, source_id: int, now: datetime, at: datetime) -> None:
        if not self._pid:
            super().rows_for(snapshot_id, source_id, now, at)
            return
        with contextlib.suppress(OSError):  # a child already gone: `_next` tells why
            _frame_write(self._control, (snapshot_id, source_id, now, at))

    def _next(self) -> tuple[str, Any]:
        if not self._pid:
            return super()._next()
        try:
            kind, value = _frame_read(self._data, self._wait)
        except EOFError:
            status = self._reap(kill=False)
            raise ReadFailed(
                ReadProcessEnded(f"the source's read process ended without a result ({status})")
            ) from None
        if kind == "records":  # the records as the spool keeps them, then their rows
            spool = self._spool
            assert spool is not None
            data, rows = value
            packed = pickle.loads(data)  # noqa: S301 - from our own fork
            spool.add_pickled(data, len(packed))
            value = list(zip(map(spool._unpack, packed), rows, strict=True))
        elif kind == "error":
            raise ReadFailed(value)
        elif kind == "done":  # the result, but the records: the spool here holds them
            value = self._done = ReadResult(records=self._spool, **value)  # type: ignore[arg-type]
        return kind, value

    def finish(self) -> ReadResult:
        if not self._pid:
            return super().finish()
        while self._done is None:
            self._next()
        self._reap(kill=False)
        return self._done

    def close(self) -> None:
        if not self._pid:
            super().close()
            return
        self._reap(kill=True)
        if self._done is not None:
            self._done.close()
        elif self._spool is not None:
            self._spool.close()

    def _wait(self) -> None:
        """Until the child has sent more. A child silent for the refresh deadline (stuck on a
        hung file system, or on a lock another thread held when it was forked) is killed and
        the read fails, so the swap's transaction and the source's lock are not held on."""
        if not self._poller.poll(self._deadline * 1000):
            self._reap(kill=True)
            raise ReadFailed(
                SourceError(
                    "refresh-deadline",
                    f"the source's read sent nothing for {self._deadline:g} s",
                )
            )

    def _reap(self, *, kill: bool) -> str:
        """Wait for the child (killing it first if asked, or when it would not end) and close
        the pipes; says how it ended."""
        if self._ended:
            return "ended"
        self._ended = True
        for descriptor in (self._data, self._control):
            with contextlib.suppress(OSError):
                os.close(descriptor)
        if kill:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)
        _, status = os.waitpid(self._pid, 0)
        if os.WIFSIGNALED(status):
            return f"killed by signal {os.WTERMSIG(status)}"
        return f"exit status {os.WEXITSTATUS(status)}"


# -- the child


def _child(read: ForkedRead, data: int, control: int) -> None:  # pragma: no cover
    """Run the read, send what it gives, and end the process (never return into the parent's
    code: its caller's frames hold the swap's transaction)."""
    code = 0
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        _Child(read, data, control).run()
    except BaseException:
        code = 1
    finally:
        os._exit(code)


class _Child:  # pragma: no cover - runs in the forked process
    def __init__(self, read: ForkedRead, data: int, control: int) -> None:
        self._read = read
        self._data = data
        self._control = control
        self._packed: list[tuple[Any, ...]] = []  # as the parent's spool keeps them
        self._rows: list[Any] = []
        self._prepare: Any = None

    def run(self) -> None:
        read = self._read
        try:
            result = read._read(on_manifest=self._manifest, on_record=self._record)
            self._flush()
            result.drop_entries()  # as the swap would at once (it keeps their count)
            state = {
                name: getattr(result, name)
                for name in ReadResult.__dataclass_fields__
                if name not in ("records", "digest")
            }
            state["known_fingerprint"] = result.fingerprint()  # the digest stays here
            result.close()
            self._send("done", state)
        except BaseException as exc:
            self._send("error", _portable(exc))
            raise

    def _manifest(self, manifest: om.Manifest) -> None:
        # the swap takes the manifest's name; the entries stay here (10,000 of them pickled
        # and rebuilt were a tenth of the swap's Python)
        self._send("manifest", replace(manifest, entries=()))
        # the swap opens its snapshot next, then says how to make the rows to store
        self._prepare = provisional_rows(*_frame_read(self._control))

    def _record(self, item: Any) -> None:
        try:
            row = self._prepare(item)
        except Exception:  # the swap makes it again, and says what failed
            row = None
        self._packed.append(pack_record(item))
        self._rows.append(row)
        if len(self._rows) >= refresh_stream.HANDOVER:
            self._flush()

    def _flush(self) -> None:
        if self._rows:
            packed = pickle.dumps(self._packed, protocol=pickle.HIGHEST_PROTOCOL)
            self._send("records", (packed, self._rows))
            self._packed, self._rows = [], []

    def _send(self, kind: str, value: Any) -> None:
        _frame_write(self._data, (kind, value))


# -- the pipes, either way: a frame is its pickle's length, then the pickle


def _frame_write(descriptor: int, value: Any) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_LENGTH.pack(len(data)) + data)
    while view:
        view = view[os.write(descriptor, view) :]


def _frame_read(descriptor: int, wait: Callable[[], None] = lambda: None) -> Any:
    """The next frame's value (`wait` is called before each read); EOFError when the other
    end closed first. Both ends are this process and its own fork: no one else's pickle."""
    (size,) = _LENGTH.unpack(_exactly(descriptor, _LENGTH.size, wait))
    return pickle.loads(_exactly(descriptor, size, wait))  # noqa: S301


def _exactly(descriptor: int, size: int, wait: Callable[[], None]) -> bytes:
    pieces: list[bytes] = []
    while size:
        wait()
        piece = os.read(descriptor, size)
        if not piece:
            raise EOFError("the other end of the pipe closed")
        pieces.append(piece)
        size -= len(piece)
    return b"".join(pieces)


def _portable(exc: BaseException) -> BaseException:
    """The exception itself when it crosses the pipe (ours do: SourceError, Rejection), else
    one that tells its class and text."""
    try:
        pickle.loads(pickle.dumps(exc))  # noqa: S301 - checking our own bytes
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc
