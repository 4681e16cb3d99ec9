"""The refresh: read a source outside any transaction, then swap in the new snapshot (or mark
the source stale or denied) in one, under the source's lock; its health events."""

from __future__ import annotations

import logging
import time
from datetime import datetime

from django.conf import settings
from django.db import OperationalError, connection, transaction
from django.utils import timezone

from memoryadmin.audit import Actor, audit_record
from memoryadmin.binary import binary_rows
from memoryadmin.locks import named_lock
from memoryadmin.process import collector_paused
from sources import fetchers
from sources.credentials import scrub, source_credential
from sources.fetchers.factory import make_fetcher
from sources.fetchers.local import LocalFetcher
from sources.fetchers.raw import (
    Known,
    RawCheck,
    Replay,
    raw_check,
)
from sources.fetchers.read import ReadResult, read_source
from sources.models import RefreshRun, RunStatus, Snapshot, Source, SourceKind, SourceState
from sources.services.lifecycle import LOCAL_NEEDS_SUPERUSER, LOCAL_SHARED, local_overlap
from sources.services.read_process import local_read
from sources.services.refresh_store import (
    refresh_failed,
    refresh_succeeded,
    refresh_unchanged,
)
from sources.services.refresh_stream import ReadFailed, StreamedRead, refresh_streamed
from sources.snapshots import (
    StoredRecord,
    StoredRecords,
    previous_rows,
    stored_validators,
)

logger = logging.getLogger(__name__)


def source_read_preview(source: Source, *, now: datetime | None = None) -> ReadResult:
    """Read a source without storing anything (used by the preview CLI and tests)."""
    fetcher = make_fetcher(
        source.kind,
        source.identity,
        policy=fetchers.policy_from_settings(),
        credential=source_credential(source),
    )
    try:
        return read_source(fetcher, now=now or timezone.now())
    finally:
        fetcher.close()


@collector_paused()
def source_refresh(
    *, source_id: int, run_id: int | None = None, trigger: str = "manual"
) -> RefreshRun:
    """Read the source and swap in the new snapshot atomically, or mark it stale / denied.

    One run per source at a time: it holds the source's named lock (`LockBusy` when another run
    has it; the task retries later) and, under it, first marks runs that lost their worker. The
    network work happens outside any transaction; the swap and its audit events happen in one.
    """
    # The lock comes before the source's row is read, so this run sees what the last one stored.
    with named_lock(Source(pk=source_id).lock_name, ttl=Source.lock_ttl):
        runs_abandoned(source_id=source_id, keep=run_id)
        return _refresh(source_id=source_id, run_id=run_id, trigger=trigger)


@transaction.atomic
def runs_abandoned(*, source_id: int, keep: int | None) -> int:
    """Under the source's lock nobody else is refreshing it: a run still `running` lost its
    worker (SIGKILL, OOM). Say so instead of leaving it running forever; its swap never
    happened, so the snapshot before it is still the current one."""
    now = timezone.now()
    abandoned = list(
        RefreshRun.objects.select_for_update(of=("self",))
        .filter(source_id=source_id, status=RunStatus.RUNNING)
        .exclude(pk=keep)
        .select_related("source__team")
    )
    for run in abandoned:
        run.status, run.error_code, run.finished_at = RunStatus.FAILED, "worker-lost", now
        run.error = "the worker stopped during this refresh; the previous snapshot was kept"
        run.save(update_fields=["status", "error_code", "error", "finished_at"])
        audit_record(
            actor=Actor.system(),
            action="source.refresh.abandoned",
            team=run.source.team,
            target=run,
            summary=f"Refresh run #{run.pk} of {run.source} lost its worker",
            data={"run": run.pk},
        )
    return len(abandoned)


def _refresh(*, source_id: int, run_id: int | None, trigger: str) -> RefreshRun:
    source = (
        Source.objects.with_snapshot()  # its bytes loaded by the read, as far as it needs them
        .select_related("team", "added_by")
        .get(pk=source_id)
    )
    if run_id is None:
        run = RefreshRun.objects.create(source=source, trigger=trigger, requested_by="system")
    else:
        run = RefreshRun.objects.get(pk=run_id, source=source)
        if run.is_finished:  # a retried task whose work is done: nothing to do
            return run
    started = timezone.now()
    clock = time.monotonic()
    if source.state == SourceState.DISABLED:
        RefreshRun.objects.filter(pk=run.pk).update(
            status=RunStatus.SKIPPED,
            started_at=started,
            finished_at=started,
            duration_ms=0,
            error_code="disabled",
            error="the source is disabled",
        )
        run.refresh_from_db()
        return run
    RefreshRun.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, started_at=started)
    credential = fetchers.Credential()
    try:
        credential = source_credential(source)
        read, rows, stored = _read(source, credential, started)
    except Exception as exc:
        return _read_failed(source, run, exc, credential, started, clock)
    try:
        if isinstance(read, RawCheck):
            return refresh_unchanged(source.pk, run.pk, read, stored, started, clock)
        if isinstance(read, StreamedRead):
            try:
                done, _ = refresh_streamed(source.pk, run.pk, read, rows, started, clock)
            except ReadFailed as failed:
                return _read_failed(source, run, failed.error, credential, started, clock)
            return done
        read.drop_entries()
        return refresh_succeeded(source.pk, run.pk, read, rows, started, clock)
    except (OperationalError, Source.DoesNotExist, RefreshRun.DoesNotExist):
        raise  # retried by the task, or the source was deleted meanwhile (the run ends `gone`)
    except Exception as exc:
        # Nothing of the swap was stored (one transaction). A failed refresh must not look
        # successful: the run fails with the reason and the source goes stale, so its records
        # are served with `stale: true` instead of as if they were current.
        logger.exception("source %s refresh %s: storing the result failed", source.pk, run.pk)
        message = scrub(f"storing the refresh failed: {_error_text(exc)}", credential)
        return refresh_failed(source.pk, run.pk, "store-failed", message, "stale", started, clock)
    finally:
        read.close()  # the spooled records' (or kept bodies') temporary file; a streamed read


def _read_failed(
    source: Source,
    run: RefreshRun,
    exc: Exception,
    credential: fetchers.Credential,
    started: datetime,
    clock: float,
) -> RefreshRun:
    """The read failed (before the swap, or during a streamed one, which rolled back)."""
    if isinstance(exc, fetchers.SourceError):
        message = scrub(exc.message, credential)
        return refresh_failed(source.pk, run.pk, exc.code, message, exc.health, started, clock)
    if isinstance(exc, ValueError):  # a stored credential the current key cannot decrypt
        return refresh_failed(source.pk, run.pk, "credential", str(exc), "stale", started, clock)
    if isinstance(exc, OperationalError) or not isinstance(exc, Exception):
        raise exc  # the database is unavailable: the task retries this run
    # a bug must fail the run visibly, never leave it running
    logger.error("source %s refresh %s: reading failed", source.pk, run.pk, exc_info=exc)
    message = scrub(f"reading the source failed: {_error_text(exc)}", credential)
    return refresh_failed(source.pk, run.pk, "read-failed", message, "stale", started, clock)


def _read(
    source: Source, credential: fetchers.Credential, started: datetime
) -> tuple[
    ReadResult | RawCheck | StreamedRead, dict[str, StoredRecord], dict[str, fetchers.Validator]
]:
    """Read the source, outside any transaction. First the raw check (sources.fetchers.raw):
    when its digest is the current snapshot's, the same bytes were read under the same rules
    and it is returned as is, nothing parsed and no stored record loaded. Otherwise the full
    read, reusing the last snapshot's records by hash (an HTTPS check's answers are replayed,
    not fetched again); a local source's full read is returned unstarted, to be streamed into
    the swap (refresh_stream). Returns the read, the last snapshot's rows, the stored
    validators."""
    snapshot = source.current_snapshot
    stored = stored_validators(source) if source.kind == SourceKind.HTTPS else {}
    fetcher: fetchers.Fetcher | None = make_fetcher(
        source.kind, source.identity, policy=fetchers.policy_from_settings(), credential=credential
    )
    trusting = isinstance(fetcher, LocalFetcher) and fetcher.policy.trust_stat
    try:
        if isinstance(fetcher, LocalFetcher):
            _local_check(source, fetcher)
        known = _known(snapshot, trusting)
        manifest = (known.manifest or None) if known is not None else None
        if snapshot is not None and known is not None and snapshot.raw_digest:
            keep = source.kind == SourceKind.HTTPS  # a local file is cheaper read again
            check = raw_check(fetcher, known=known, validators=stored, keep=keep)
            if check.digest == snapshot.raw_digest:
                return check, {}, stored
            if keep:
                fetcher = Replay(fetcher, check)
            else:
                check.close()
        rows = previous_rows(snapshot)
        if isinstance(fetcher, LocalFetcher):
            previous = StoredRecords(rows)
            streamed = local_read(
                fetcher, now=started, previous_records=previous, previous_manifest=manifest
            )
            fetcher = None  # the stream's now: it closes the fetcher when its read ends
            return streamed, rows, stored
        result = read_source(
            fetcher,
            now=started,
            previous_records=StoredRecords(rows),
            previous_manifest=manifest,
            validators=stored,
        )
        return result, rows, stored
    finally:
        if fetcher is not None:
            fetcher.close()


def _known(snapshot: Snapshot | None, trusting: bool) -> Known | None:
    """What the raw check needs of the current snapshot. A local source whose files' stats
    were kept (`trusting`) leaves the manifest's bytes unread (10k entries: 0.6 MB): the
    stats name its hash, and a local manifest is read again in full anyway."""
    if snapshot is None:
        return None
    if trusting:
        entries, stats = _snapshot_bytes(snapshot.pk, "raw_entries", "raw_stats")
        if stats:
            return Known(b"", snapshot.manifest_name, entries, stats)
    entries, manifest = _snapshot_bytes(snapshot.pk, "raw_entries", "manifest_body")
    return Known(manifest, snapshot.manifest_name, entries)


def _snapshot_bytes(pk: int, *fields: str) -> tuple[bytes, ...]:
    """A snapshot's byte fields, in binary on PostgreSQL (`memoryadmin.binary`)."""
    query = Snapshot.objects.filter(pk=pk).values_list(*fields)
    if connection.vendor != "postgresql":
        return tuple(bytes(value) for value in query.get())
    rows = binary_rows(query)
    if not rows:
        raise Snapshot.DoesNotExist(f"snapshot {pk} is gone")
    return tuple(bytes(value) for value in rows[0])


def _error_text(exc: BaseException) -> str:
    """An exception as text any database column can hold (no NUL, no lone surrogate)."""
    text = f"{type(exc).__name__}: {exc}"[:500]
    return text.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")


def _local_check(source: Source, fetcher: LocalFetcher) -> None:
    """At every read: the folder (resolved now; a symlink may have changed) is still allowed
    for this team. The root check itself is the fetcher's (policy.local_roots); with no roots,
    only a source a superuser (or the system) added is read, as only they may add one."""
    if not settings.SOURCE_LOCAL_ROOTS:
        adder = source.added_by
        if adder is not None and not adder.is_superuser:
            raise fetchers.SourceError("local-not-allowed", LOCAL_NEEDS_SUPERUSER)
    folder = str(fetcher.root())
    if local_overlap(team=source.team, folder=folder):
        raise fetchers.SourceError("folder-shared", LOCAL_SHARED)
