"""The refresh: read a source outside any transaction, then swap in the new snapshot (or mark
the source stale or denied) in one, under the source's lock; its health events."""

from __future__ import annotations

import logging
import time
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import OperationalError, transaction
from django.utils import timezone

from memoryadmin.audit import Actor, audit_record
from memoryadmin.bulk import bulk_insert
from memoryadmin.locks import named_lock
from sources import fetchers
from sources.credentials import scrub, source_credential
from sources.fetchers.factory import make_fetcher
from sources.fetchers.local import LocalFetcher
from sources.fetchers.read import ReadResult, read_source
from sources.models import (
    Health,
    HttpValidator,
    RefreshRun,
    RunStatus,
    Source,
    SourceKind,
    SourceState,
)
from sources.services.lifecycle import LOCAL_NEEDS_SUPERUSER, LOCAL_SHARED, local_overlap
from sources.signals import announce
from sources.snapshots import (
    INSERT_BATCH,
    StoredRecord,
    StoredRecords,
    previous_state,
    snapshot_create,
    snapshot_touch,
)
from webhooks import events as webhook_events
from webhooks.emit import event_emit

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
    source = Source.objects.select_related("team", "current_snapshot", "added_by").get(pk=source_id)
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
    fetcher: fetchers.Fetcher | None = None
    try:
        snapshot, rows, validators = previous_state(source)
        credential = source_credential(source)
        fetcher = make_fetcher(
            source.kind,
            source.identity,
            policy=fetchers.policy_from_settings(),
            credential=credential,
        )
        if isinstance(fetcher, LocalFetcher):
            _local_check(source, fetcher)
        result = read_source(
            fetcher,
            now=started,
            previous_records=StoredRecords(rows),
            previous_manifest=bytes(snapshot.manifest_body) if snapshot is not None else None,
            validators=validators,
        )
    except fetchers.SourceError as exc:
        message = scrub(exc.message, credential)
        return _refresh_failed(source.pk, run.pk, exc.code, message, exc.health, started, clock)
    except ValueError as exc:  # a stored credential the current key cannot decrypt
        return _refresh_failed(source.pk, run.pk, "credential", str(exc), "stale", started, clock)
    except OperationalError:
        raise  # the database is unavailable: the task retries this run
    except Exception as exc:  # a bug must fail the run visibly, never leave it running
        logger.exception("source %s refresh %s: reading failed", source.pk, run.pk)
        message = scrub(f"reading the source failed: {_error_text(exc)}", credential)
        return _refresh_failed(source.pk, run.pk, "read-failed", message, "stale", started, clock)
    finally:
        if fetcher is not None:
            fetcher.close()
    result.drop_entries()
    try:
        return _refresh_succeeded(source.pk, run.pk, result, rows, started, clock)
    except (OperationalError, Source.DoesNotExist, RefreshRun.DoesNotExist):
        raise  # retried by the task, or the source was deleted meanwhile (the run ends `gone`)
    except Exception as exc:
        # Nothing of the swap was stored (one transaction). A failed refresh must not look
        # successful: the run fails with the reason and the source goes stale, so its records
        # are served with `stale: true` instead of as if they were current.
        logger.exception("source %s refresh %s: storing the result failed", source.pk, run.pk)
        message = scrub(f"storing the refresh failed: {_error_text(exc)}", credential)
        return _refresh_failed(source.pk, run.pk, "store-failed", message, "stale", started, clock)
    finally:
        result.close()  # the spooled records' temporary file


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


def _finish_run(
    run: RefreshRun, status: str, started: datetime, clock: float, **fields: Any
) -> None:
    run.status = status
    run.started_at = run.started_at or started
    run.finished_at = timezone.now()
    run.duration_ms = int((time.monotonic() - clock) * 1000)
    for name, value in fields.items():
        setattr(run, name, value)
    run.save()


def _health_change(source: Source, previous: str, reason: str) -> None:
    if source.health == previous:
        return
    audit_record(
        actor=Actor.system(),
        action="source.health",
        team=source.team,
        target=source,
        summary=f"{source.label} is now {source.health} (was {previous})",
        data={"from": previous, "to": source.health, "reason": reason},
    )
    _health_event(source, previous, reason)


def _health_event(source: Source, previous: str, reason: str) -> None:
    """Tell the team's webhooks: stale, denied, or recovered (fresh again after stale/denied)."""
    if source.health in (Health.STALE, Health.FAILED):
        event = webhook_events.SOURCE_STALE  # `to` says which
    elif source.health == Health.DENIED:
        event = webhook_events.SOURCE_DENIED
    elif source.health == Health.FRESH and previous in (Health.STALE, Health.DENIED, Health.FAILED):
        event = webhook_events.SOURCE_RECOVERED
    else:
        return  # never -> fresh is a first refresh, not a recovery
    event_emit(
        team=source.team,
        event=event,
        data={
            "source": source.pk,
            "label": source.label,
            "identity": source.identity,
            "kind": source.kind,
            "state": source.state,
            "from": previous,
            "to": source.health,
            "reason": reason,
            # Already scrubbed of the credential by source_refresh; identities never carry one.
            "error": source.last_error,
        },
    )


@transaction.atomic
def _refresh_failed(
    source_id: int,
    run_id: int,
    code: str,
    message: str,
    health: str,
    started: datetime,
    clock: float,
) -> RefreshRun:
    source = Source.objects.select_for_update(of=("self",)).select_related("team").get(pk=source_id)
    run = RefreshRun.objects.get(pk=run_id)
    previous = source.health
    now = timezone.now()
    if health == Health.DENIED:
        source.health = Health.DENIED
        source.denied_since = source.denied_since or now
    elif source.current_snapshot_id is None and source.last_success_at is None:
        source.health = Health.FAILED  # no good copy to fall back on: not "stale"
        source.stale_since = source.stale_since or now
    else:
        source.health = Health.STALE
        source.stale_since = source.stale_since or now
    source.last_attempt_at = started
    source.last_error_code = code
    source.last_error = message
    source.save()
    status = RunStatus.DENIED if health == Health.DENIED else RunStatus.FAILED
    _finish_run(run, status, started, clock, error_code=code, error=message)
    audit_record(
        actor=Actor.system(),
        action="source.refresh",
        team=source.team,
        target=source,
        summary=f"Refresh of {source.label} {status}: {message}",
        data={"run": run.pk, "outcome": status, "code": code},
    )
    _health_change(source, previous, code)
    announce(source)
    logger.warning("source %s refresh %s: %s", source.pk, status, code)
    return run


@transaction.atomic
def _refresh_succeeded(
    source_id: int,
    run_id: int,
    result: ReadResult,
    rows: dict[str, StoredRecord],
    started: datetime,
    clock: float,
) -> RefreshRun:
    source = (
        Source.objects.select_for_update(of=("self",))
        .select_related("team", "current_snapshot")
        .get(pk=source_id)
    )
    run = RefreshRun.objects.get(pk=run_id)
    now = timezone.now()
    selection = result.selection
    fingerprint = result.fingerprint()
    current = source.current_snapshot
    changed = current is None or current.fingerprint != fingerprint
    flipped = False
    if changed:
        snapshot = snapshot_create(source, result, fingerprint, now)
        source.current_snapshot = snapshot
        source.save(update_fields=["current_snapshot"])
        if current is not None:
            current.delete()
    else:
        snapshot = current
        flipped = snapshot_touch(snapshot, rows, selection, now)
    if source.kind == SourceKind.HTTPS:
        HttpValidator.objects.filter(source=source).delete()
        bulk_insert(
            HttpValidator,
            [
                HttpValidator(
                    source=source,
                    url=url,
                    etag=v.etag[:500],
                    last_modified=v.last_modified[:100],
                    content_hash=v.content_hash,
                )
                for url, v in result.validators.items()
                if v.etag or v.last_modified
            ],
            batch_size=INSERT_BATCH,
        )
    previous = source.health
    # The brain mirrors records, expiry, the source's name and its stale flag: when none of
    # them moved, its reconcile (a pass over every record and chunk) has nothing to do.
    mirror_current = (
        not changed
        and not flipped
        and previous == Health.FRESH
        and source.display_name == result.manifest.name[:200]
    )
    source.display_name = result.manifest.name[:200]
    source.health = Health.FRESH
    source.last_attempt_at = started
    source.last_success_at = now
    source.last_error_code = ""
    source.last_error = ""
    source.stale_since = None
    source.denied_since = None
    source.save()
    _finish_run(
        run,
        RunStatus.SUCCEEDED,
        started,
        clock,
        changed=changed,
        record_count=snapshot.record_count,
        active_count=snapshot.active_count,
        rejected_count=snapshot.rejected_count,
        problem_count=snapshot.problem_count,
        parsed_count=result.parsed,
        reused_count=result.reused,
    )
    audit_record(
        actor=Actor.system(),
        action="source.refresh",
        team=source.team,
        target=source,
        summary=(
            f"Refreshed {source.label}: {snapshot.active_count} active, "
            f"{snapshot.rejected_count} rejected" + ("" if changed else " (unchanged)")
        ),
        data={"run": run.pk, "outcome": RunStatus.SUCCEEDED, "changed": changed},
    )
    _health_change(source, previous, "refresh succeeded")
    if not mirror_current:
        # The brain's mirror takes the served records in record id order, a batch at a time
        # (holding them all, with the chunks made of them, grew the refresh's memory with
        # the source): from the spool when they were read in that order, else read back.
        announce(source, records=result.served() if result.ordered else None)
    return run
