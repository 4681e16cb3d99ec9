"""A local source's full read streamed into its swap: the read runs on a thread of its own
inside the swap's transaction and the brain mirrors each record as it is read, so PostgreSQL
stores and indexes one batch (the chunks' keyword vectors, their indexes) while Python parses
the next, on the machine's other core.

Nothing is visible before the commit (MVCC), and a read or store that fails rolls the whole
swap back, so "a read stores nothing visible before the swap", "a failed refresh keeps the
last good snapshot" and all-or-nothing hold as in the unstreamed refresh. The mirror takes the
records provisionally as active in the order read; when the read ends and that was not the
brain's answer (a record superseded, ids not ascending, or the same bytes as the current
snapshot), the swap rolls back to before the mirror and stores the read the unstreamed way
(`refresh_store.refresh_succeeded`), so the result is always the same.

Only local sources stream: an HTTPS read stays outside any transaction (no network in one).
"""

from __future__ import annotations

import contextlib
import functools
import queue
import threading
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from formats import openmemories as om
from sources.fetchers import Fetcher
from sources.fetchers.read import ReadRecord, ReadResult, read_source
from sources.models import Health, RefreshRun, Snapshot
from sources.services.refresh_store import _locked, _succeeded, refresh_succeeded
from sources.signals import ServedRow, announce
from sources.snapshots import StoredRecord, record_rows, records_store, snapshot_create

# Records handed from the read's thread at a time, and how many such hand-overs may wait: what
# the stream holds in memory beyond the mirror's own batch (bounded, not the source's size).
HANDOVER = 64
WAITING = 16
# Records stored per statement while the read goes on (the mirror holds a batch of its own)
STORE_BATCH = 500


class ReadFailed(Exception):
    """The streamed read failed (not the store): the refresh reports it as a failed read."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


class _Stopped(BaseException):
    """Raised in the read's thread when the swap gave up on it."""


class StreamedRead:
    """`read_source` on a thread of its own, its manifest and records handed over as read.
    The fetcher is closed when the read ends; `close` stops a read the swap gave up on.
    Once the swap calls `rows_for`, the read's thread makes each record's row to store with
    it, while the swap waits on the database (the swap makes the rows of the others)."""

    def __init__(
        self,
        fetcher: Fetcher,
        *,
        now: datetime,
        previous_records: Mapping[str, om.Record],
        previous_manifest: bytes | None,
    ) -> None:
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=WAITING)
        self._stop = threading.Event()
        self._pending: list[tuple[ReadRecord, Any]] = []
        self._prepare: Callable[[ReadRecord], Any] | None = None
        self._done: ReadResult | None = None
        self._fetcher = fetcher  # the read's thread closes it; `close` when it never ran
        self._previous = previous_records
        self._read = functools.partial(
            read_source,
            fetcher,
            now=now,
            previous_records=previous_records,
            previous_manifest=previous_manifest,
            on_manifest=lambda manifest: self._put("manifest", manifest),
            on_record=self._record,
        )
        self._thread = threading.Thread(target=self._run, name="source-read", daemon=True)

    def start(self) -> None:
        self._thread.start()

    # -- the read's thread

    def _run(self) -> None:
        try:
            result = self._read()
            if self._pending:
                self._put("records", self._pending)
            try:
                self._put("done", result)
            except _Stopped:
                result.close()
        except _Stopped:
            pass
        except BaseException as exc:  # handed to the swap, which raises it as ReadFailed
            with contextlib.suppress(_Stopped):
                self._put("error", exc)
        finally:
            self._fetcher.close()

    def _record(self, item: ReadRecord) -> None:
        self._pending.append((item, self._row(item)))
        if len(self._pending) >= HANDOVER:
            self._put("records", self._pending)
            self._pending = []

    def rows_for(self, snapshot_id: int, source_id: int, now: datetime, at: datetime) -> None:
        """From now on the read makes each record's row to store (`provisional_rows`)."""
        self._prepare = provisional_rows(snapshot_id, source_id, now, at)

    def _row(self, item: ReadRecord) -> Any:
        if self._prepare is None:
            return None
        try:
            return self._prepare(item)
        except Exception:  # the swap makes it again, and says what failed
            return None

    def _put(self, kind: str, value: Any) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put((kind, value), timeout=0.05)
                return
            except queue.Full:
                continue
        raise _Stopped

    # -- the swap's thread

    def _next(self) -> tuple[str, Any]:
        kind, value = self._queue.get()
        if kind == "error":
            raise ReadFailed(value)
        if kind == "done":
            self._done = value
        return kind, value

    def manifest(self) -> om.Manifest:
        """The manifest, once parsed (raises ReadFailed when the read failed first)."""
        kind, value = self._next()
        if kind != "manifest":  # read_source tells the manifest before anything else
            raise RuntimeError(f"the streamed read sent {kind} before its manifest")
        return value

    def records(self) -> Iterator[tuple[ReadRecord, Any]]:
        """The kept records as they are read, each with its row when the read made it (`rows_for`)
        (iterate once)."""
        while self._done is None:
            kind, value = self._next()
            if kind == "records":
                yield from value

    def finish(self) -> ReadResult:
        """Wait for the read's end (records nobody took are in its spool anyway)."""
        while self._done is None:
            self._next()
        self._thread.join()
        return self._done

    def close(self) -> None:
        """Stop the read if it still runs, wait for its thread, and drop the read's spool."""
        self._stop.set()
        while self._thread.is_alive():
            try:
                kind, value = self._queue.get(timeout=0.05)
            except queue.Empty:
                continue
            if kind == "done":
                value.close()
        if self._thread.ident is not None:
            self._thread.join()
        else:
            self._fetcher.close()
        if self._done is not None:
            self._done.close()


def provisional_rows(
    snapshot_id: int, source_id: int, now: datetime, at: datetime
) -> Callable[[ReadRecord], Any]:
    """The maker of a streamed record's row: its state is what the selection gives when no
    record is superseded (expiry alone, at the read's time `at`). One maker per thread."""
    return record_rows(
        snapshot_id,
        source_id,
        now,
        lambda r: (False, "expired") if r.is_expired(at) else (True, ""),
    )


class _Stored:
    """The records of a streamed read, stored in the opened snapshot as they are read
    (STORE_BATCH at a time, while the mirror gathers its next batch and the connection is
    idle) and handed to the brain's mirror; that hand-over stops at the first id not above the
    one before (`ordered` then False), as the mirror wants record id order.

    Each record's state is what the selection gives when no record is superseded (expiry
    alone, at the read's time): the swap keeps these rows only when that is so."""

    def __init__(self, stream: StreamedRead, snapshot: Snapshot, now: datetime, at: datetime):
        self.ordered = True

        self._row = provisional_rows(snapshot.pk, snapshot.source_id, now, at)
        stream.rows_for(snapshot.pk, snapshot.source_id, now, at)  # the read's own maker
        self._rows: list[Any] = []
        self._items = self._take(stream)

    def _take(self, stream: StreamedRead) -> Iterator[ReadRecord]:
        for item, row in stream.records():
            self._rows.append(self._row(item) if row is None else row)
            if len(self._rows) >= STORE_BATCH:
                self._store()
            yield item

    def _store(self) -> None:
        if self._rows:
            records_store(self._rows)
        self._rows = []

    def __iter__(self) -> Iterator[ServedRow]:
        last = None
        for item in self._items:
            r = item.record
            if last is not None and r.id <= last:
                self.ordered = False
                return
            last = r.id
            yield (r.id, r.kind, r.title, r.body, list(r.tags), r.expires)

    def finish(self) -> None:
        """Store the records the mirror did not take (all, when it took none)."""
        for _ in self._items:
            pass
        self._store()


@transaction.atomic
def refresh_streamed(
    source_id: int,
    run_id: int,
    stream: StreamedRead,
    rows: dict[str, StoredRecord],
    started: datetime,
    clock: float,
) -> tuple[RefreshRun, ReadResult]:
    """The swap of a streamed read: lock the source, open its new snapshot, mirror the records
    while they are read, then store them. Raises ReadFailed when the read fails (the whole
    swap rolls back). Returns the run and the read (`stream.close` drops its spool)."""
    source, run = _locked(source_id, run_id)
    previous, current = source.health, source.current_snapshot
    _constraints("IMMEDIATE")
    stream.start()
    manifest = stream.manifest()
    before_mirror = transaction.savepoint()
    now = timezone.now()
    opened = Snapshot.objects.create(source=source, manifest_name=manifest.name[:200])
    # what the mirror reads of the source, as the swap leaves it
    source.current_snapshot = opened
    source.display_name = manifest.name[:200]
    source.health = Health.FRESH
    served = _Stored(stream, opened, now, started)
    announce(source, records=served)
    served.finish()
    result = stream.finish()
    result.drop_entries()
    fingerprint = result.fingerprint()
    if (
        not served.ordered
        or not result.ordered
        # an expired record was left out by the mirror too; any other inactive one was not
        or any(why != "expired" for why in result.selection.inactive.values())
        or (current is not None and current.fingerprint == fingerprint)
    ):
        transaction.savepoint_rollback(before_mirror)
        _constraints("DEFERRED")
        return refresh_succeeded(source_id, run_id, result, rows, started, clock), result
    transaction.savepoint_commit(before_mirror)
    snapshot = snapshot_create(source, result, fingerprint, now, opened=opened, records_stored=True)
    source.save(update_fields=["current_snapshot"])
    if current is not None:
        current.delete()
    _constraints("DEFERRED")
    done = _succeeded(
        source,
        run,
        snapshot,
        name=result.manifest.name,
        changed=True,
        flipped=False,
        counts=(result.parsed, result.reused),
        served=None,
        now=now,
        started=started,
        clock=clock,
        previous=previous,
        mirrored=True,
    )
    return done, result


def _constraints(when: str) -> None:
    """PostgreSQL: while the read goes on, each statement checks its foreign keys as it ends
    (IMMEDIATE) instead of all of them at the commit, after the read (the same checks; every
    row a statement references is written before it). DEFERRED is Django's initial state of
    every deferrable constraint (its foreign keys), restored for the rest of the swap."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"SET CONSTRAINTS ALL {when}")
