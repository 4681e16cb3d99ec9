"""The refresh's swap, in one transaction under the source's lock: a new snapshot or the same
one kept (`refresh_succeeded`), the same bytes found by the raw check (`refresh_unchanged`),
or the source marked stale or denied (`refresh_failed`); the run, audit and health events."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from memoryadmin.audit import Actor, audit_record
from sources.fetchers import Validator
from sources.fetchers.raw import RawCheck
from sources.fetchers.read import ReadResult
from sources.models import Health, RefreshRun, RunStatus, Snapshot, Source, SourceKind
from sources.signals import ServedRow, announce
from sources.snapshots import (
    StoredRecord,
    snapshot_create,
    snapshot_keep,
    snapshot_touch,
    validators_store,
)
from webhooks import events as webhook_events
from webhooks.emit import event_emit

logger = logging.getLogger("sources.services.refresh")


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
def refresh_failed(
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
    if not _brain_unmoved(previous, source.health):
        announce(source)
    logger.warning("source %s refresh %s: %s", source.pk, status, code)
    return run


# A source fresh or stale serves its current snapshot as it is: the brain reads `stale` from
# the source (bundles.provenance) and its reads drop expired records themselves.
_SERVING = frozenset((Health.FRESH, Health.STALE))


def _brain_unmoved(previous: str, health: str) -> bool:
    """Whether a health change leaves what the brain mirrors as it was."""
    return previous in _SERVING and health in _SERVING


def _locked(source_id: int, run_id: int) -> tuple[Source, RefreshRun]:
    """The source, locked for the swap (its snapshot's bytes left unread), and the run."""
    source = (
        Source.objects.select_for_update(of=("self",))
        .with_snapshot()
        .select_related("team")
        .get(pk=source_id)
    )
    return source, RefreshRun.objects.get(pk=run_id)


@transaction.atomic
def refresh_succeeded(
    source_id: int,
    run_id: int,
    result: ReadResult,
    rows: dict[str, StoredRecord],
    started: datetime,
    clock: float,
) -> RefreshRun:
    source, run = _locked(source_id, run_id)
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
        flipped = snapshot_touch(
            snapshot,
            rows,
            selection,
            now,
            (result.raw_digest, result.raw_entries, result.raw_stats),
        )
    if source.kind == SourceKind.HTTPS:
        validators_store(source, result.validators)
    # The brain's mirror takes the served records in record id order, a batch at a time
    # (holding them all, with the chunks made of them, grew the refresh's memory with the
    # source): from the spool when they were read in that order, else read back.
    return _succeeded(
        source,
        run,
        snapshot,
        name=result.manifest.name,
        changed=changed,
        flipped=flipped,
        counts=(result.parsed, result.reused),
        served=result.served() if result.ordered else None,
        now=now,
        started=started,
        clock=clock,
    )


@transaction.atomic
def refresh_unchanged(
    source_id: int,
    run_id: int,
    check: RawCheck,
    stored: dict[str, Validator],
    started: datetime,
    clock: float,
) -> RefreshRun:
    """The raw check found the bytes the current snapshot was read from, under the same rules:
    keep it, parse nothing, and do only what time can change (expiry; the health and the run,
    as any successful refresh does)."""
    source, run = _locked(source_id, run_id)
    snapshot = source.current_snapshot
    if snapshot is None or snapshot.raw_digest != check.digest:
        # under the source's lock only a refresh swaps snapshots: this is a bug, said loudly
        raise RuntimeError("the current snapshot changed during an unchanged refresh")
    now = timezone.now()
    # the selection's time is the read's, as a full read's is
    flipped = snapshot_keep(snapshot, selected_at=started, now=now, stats=check.stats)
    if source.kind == SourceKind.HTTPS and check.validators != stored:
        validators_store(source, check.validators)
    return _succeeded(
        source,
        run,
        snapshot,
        name=check.name,
        changed=False,
        flipped=flipped,
        counts=(0, snapshot.record_count),
        served=None,
        now=now,
        started=started,
        clock=clock,
    )


def _succeeded(
    source: Source,
    run: RefreshRun,
    snapshot: Snapshot,
    *,
    name: str,
    changed: bool,
    flipped: bool,
    counts: tuple[int, int],
    served: Iterator[ServedRow] | None,
    now: datetime,
    started: datetime,
    clock: float,
    previous: str | None = None,
    mirrored: bool = False,
) -> RefreshRun:
    """The source is fresh with `snapshot`: its name and health, the run, the audit event, and
    the brain's mirror when what it mirrors moved (unless `mirrored`: a streamed refresh
    mirrored the records as they were read). `counts`: records parsed and reused; `previous`:
    the health before, when the caller changed it already."""
    previous = previous or source.health
    # The brain mirrors records, expiry and the source's name: when none of them moved, its
    # reconcile (a pass over every record and chunk) has nothing to do.
    mirror_current = (
        not changed
        and not flipped
        and _brain_unmoved(previous, Health.FRESH)
        and source.display_name == name[:200]
    )
    source.display_name = name[:200]
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
        parsed_count=counts[0],
        reused_count=counts[1],
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
    if not mirror_current and not mirrored:
        announce(source, records=served)
    return run
