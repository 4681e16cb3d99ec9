"""Every write to sources: add, approve, disable, change the credential, delete, request a
refresh, and the refresh itself."""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import OperationalError, transaction
from django.utils import timezone

from formats import openmemories as om
from memoryadmin import crypto
from memoryadmin.audit import Actor, audit_record
from memoryadmin.bulk import bulk_insert, json_loads, stream_rows
from memoryadmin.errors import DomainError
from memoryadmin.models import Team
from sources import fetchers
from sources.models import (
    CredentialKind,
    Health,
    HttpValidator,
    Problem,
    Record,
    RefreshRun,
    Rejection,
    RunStatus,
    Snapshot,
    Source,
    SourceKind,
    SourceState,
)
from sources.signals import source_served_changed
from webhooks import events as webhook_events
from webhooks.services import event_emit

logger = logging.getLogger(__name__)
INSERT_BATCH = 500


# ----------------------------------------------------------------------------- credentials


def credential_encrypt(credential: fetchers.Credential) -> str:
    if credential.kind == CredentialKind.NONE or credential.header() is None:
        return ""
    payload = {"token": credential.token, "username": credential.username}
    payload["password"] = credential.password
    return crypto.encrypt(json.dumps(payload))


MAX_SECRET_CHARS = 4096
MAX_USERNAME_CHARS = 200


def _has_control(text: str) -> bool:
    return any(ord(char) < 0x20 or ord(char) == 0x7F for char in text)


class CredentialInvalid(DomainError):
    """A credential the source cannot use (field-keyed messages)."""

    code = "credential-invalid"


def credential_clean(credential: fetchers.Credential) -> fetchers.Credential:
    """Refuse a credential that cannot be sent as one HTTP header (field-keyed errors)."""
    errors: dict[str, str] = {}
    kind = credential.kind
    if kind not in CredentialKind.values:
        errors["credential_kind"] = "Choose none, bearer or basic."
    elif kind == CredentialKind.BEARER:
        if not credential.token:
            errors["token"] = "Enter the bearer token."  # noqa: S105 (a message, not a secret)
        elif len(credential.token) > MAX_SECRET_CHARS or _has_control(credential.token):
            errors["token"] = f"At most {MAX_SECRET_CHARS} characters, no control characters."
    elif kind == CredentialKind.BASIC:
        if not credential.username:
            errors["username"] = "Enter the user name."
        elif (
            len(credential.username) > MAX_USERNAME_CHARS
            or ":" in credential.username
            or _has_control(credential.username)
        ):
            errors["username"] = (
                f"At most {MAX_USERNAME_CHARS} characters, no colon or control characters."
            )
        if len(credential.password) > MAX_SECRET_CHARS or _has_control(credential.password):
            errors["password"] = f"At most {MAX_SECRET_CHARS} characters, no control characters."
    if errors:
        raise CredentialInvalid(errors)
    if kind == CredentialKind.BEARER:
        return fetchers.Credential(kind=kind, token=credential.token)
    if kind == CredentialKind.BASIC:
        return fetchers.Credential(
            kind=kind, username=credential.username, password=credential.password
        )
    return fetchers.Credential()


def source_credential(source: Source) -> fetchers.Credential:
    if not source.credential_encrypted:
        return fetchers.Credential()
    data = json.loads(crypto.decrypt(source.credential_encrypted))
    return fetchers.Credential(
        kind=source.credential_kind,
        token=data.get("token", ""),
        username=data.get("username", ""),
        password=data.get("password", ""),
    )


def scrub(text: str, credential: fetchers.Credential) -> str:
    """Belt and braces: no error text we store may contain a secret."""
    for secret in (credential.token, credential.password, credential.header() or ""):
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def _announce(source: Source, actor: Actor | None = None) -> None:
    """What the source serves changed: the brain mirrors it in this transaction."""
    source_served_changed.send(sender=Source, source=source, actor=actor)


# ----------------------------------------------------------------------------- local folders


LOCAL_NEEDS_SUPERUSER = (
    "Local directory sources are not enabled for teams on this server: an operator lists the "
    "allowed folders in MEMORYADMIN_SOURCE_LOCAL_ROOTS (until then only a superuser adds one)."
)
LOCAL_SHARED = (
    "Another team already reads this folder (or a folder inside or around it). An operator "
    "can allow shared folders with MEMORYADMIN_SOURCE_LOCAL_SHARED."
)


def local_overlap(*, team: Team, folder: str) -> bool:
    """Whether a local source of another team reads `folder`, a folder inside it or around it
    (identities are resolved paths)."""
    if settings.SOURCE_LOCAL_SHARED:
        return False
    parts = folder.rstrip("/").split("/")
    around = ["/".join(parts[:index]) or "/" for index in range(1, len(parts) + 1)]
    others = Source.objects.filter(kind=SourceKind.LOCAL).exclude(team=team)
    return others.filter(identity__in=around).exists() or (
        others.filter(identity__startswith=folder.rstrip("/") + "/").exists()
    )


def _local_identity(*, actor: Actor, team: Team, identity: str) -> str:
    """The resolved folder a local source may read, or a ValidationError on `location`.

    Inside an allowed root (MEMORYADMIN_SOURCE_LOCAL_ROOTS) for everyone; with no roots set,
    only a superuser (or the system: management commands) adds one, anywhere. Never the folder
    of another team's source unless shared folders are allowed. A path outside the roots gets
    one message whether it exists or not."""
    roots = settings.SOURCE_LOCAL_ROOTS
    if roots:
        resolved = fetchers.local_resolve(identity, roots)
        if resolved is None:
            raise ValidationError({"location": fetchers.OUTSIDE_ROOTS})
    else:
        user = actor.user
        if not (actor.is_system or (user is not None and user.is_superuser)):
            raise ValidationError({"location": LOCAL_NEEDS_SUPERUSER})
        resolved = os.path.realpath(identity)
    if local_overlap(team=team, folder=resolved):
        raise ValidationError({"location": LOCAL_SHARED})
    return resolved


# ----------------------------------------------------------------------------- lifecycle


@transaction.atomic
def source_add(
    *,
    actor: Actor,
    team: Team,
    location: str,
    credential: fetchers.Credential | None = None,
    refresh_interval: timedelta = timedelta(hours=1),
) -> Source:
    """Register a source as pending and queue a preview read (nothing is served yet)."""
    try:
        kind, identity = fetchers.normalize_location(location)
    except fetchers.LocationError as exc:
        raise ValidationError({"location": str(exc)}) from exc
    if kind == SourceKind.LOCAL:
        identity = _local_identity(actor=actor, team=team, identity=identity)
    if Source.objects.filter(team=team, identity=identity).exists():
        raise ValidationError({"location": "This team already has that source."})
    credential = credential or fetchers.Credential()
    if kind == SourceKind.LOCAL and credential.kind != CredentialKind.NONE:
        raise CredentialInvalid({"credential_kind": "A local directory takes no credential."})
    credential = credential_clean(credential)
    if refresh_interval < timedelta(minutes=1):
        raise ValidationError({"refresh_interval": "Refresh at most once a minute."})
    encrypted = credential_encrypt(credential)
    source = Source.objects.create(
        team=team,
        kind=kind,
        identity=identity,
        added_by=actor.user,
        refresh_interval=refresh_interval,
        credential_kind=credential.kind if encrypted else CredentialKind.NONE,
        credential_encrypted=encrypted,
        credential_changed_at=timezone.now() if encrypted else None,
    )
    audit_record(
        actor=actor,
        action="source.add",
        team=team,
        target=source,
        summary=f"Added source {identity} (pending approval)",
        data={"kind": kind, "identity": identity, "credential": source.credential_kind},
    )
    source_refresh_request(actor=actor, source=source, trigger="add")
    return source


def _lock_fresh(source: Source) -> None:
    """Lock the source's row and load it as it is now into `source`: a refresh may have stored
    a snapshot since `source` was read, and a mirror must see it (the next refresh, unchanged,
    skips the mirror, so records it missed would stay out of the brain)."""
    Source.objects.select_for_update(of=("self",)).filter(pk=source.pk).first()
    source.refresh_from_db()


@transaction.atomic
def source_approve(*, actor: Actor, source: Source) -> Source:
    _lock_fresh(source)
    if source.state == SourceState.APPROVED:
        return source
    source.state = SourceState.APPROVED
    source.approved_by = actor.user
    source.approved_at = timezone.now()
    source.save(update_fields=["state", "approved_by", "approved_at"])
    audit_record(
        actor=actor,
        action="source.approve",
        team=source.team,
        target=source,
        summary=f"Approved source {source.label}",
        data={"identity": source.identity},
    )
    _announce(source, actor)
    source_refresh_request(actor=actor, source=source, trigger="approve")
    return source


@transaction.atomic
def source_disable(*, actor: Actor, source: Source) -> Source:
    _lock_fresh(source)
    if source.state == SourceState.DISABLED:
        return source
    previous = source.state
    source.state = SourceState.DISABLED
    source.save(update_fields=["state"])
    audit_record(
        actor=actor,
        action="source.disable",
        team=source.team,
        target=source,
        summary=f"Disabled source {source.label}",
        data={"identity": source.identity, "previous_state": previous},
    )
    _announce(source, actor)
    return source


@transaction.atomic
def source_credential_set(
    *, actor: Actor, source: Source, credential: fetchers.Credential | None
) -> Source:
    """Replace the source's credential, or clear it (None or kind `none`).

    The next refresh uses it; nothing is queued here (the caller offers "refresh now"). The
    audit event names the kinds, never the secret. Clearing when none is set changes nothing.
    """
    source = Source.objects.select_for_update(of=("self",)).select_related("team").get(pk=source.pk)
    credential = credential_clean(credential or fetchers.Credential())
    if source.kind == SourceKind.LOCAL and credential.kind != CredentialKind.NONE:
        raise CredentialInvalid({"credential_kind": "A local directory takes no credential."})
    encrypted = credential_encrypt(credential)
    if not encrypted and not source.credential_encrypted:
        return source
    previous = source.credential_kind if source.credential_encrypted else CredentialKind.NONE
    source.credential_kind = credential.kind if encrypted else CredentialKind.NONE
    source.credential_encrypted = encrypted
    source.credential_changed_at = timezone.now()
    source.save(update_fields=["credential_kind", "credential_encrypted", "credential_changed_at"])
    if encrypted:
        verb = "Replaced" if previous != CredentialKind.NONE else "Set"
        kind_label = source.get_credential_kind_display()
        summary = f"{verb} the credential of {source.label} ({kind_label})"
    else:
        summary = f"Cleared the credential of {source.label}"
    audit_record(
        actor=actor,
        action="source.credential.set" if encrypted else "source.credential.clear",
        team=source.team,
        target=source,
        summary=summary,
        data={"identity": source.identity, "from": previous, "to": source.credential_kind},
    )
    return source


@transaction.atomic
def source_delete(*, actor: Actor, source: Source) -> dict[str, int]:
    """Remove the source with its snapshots, records, validators and refresh runs, and withdraw
    its records from the brain in the same transaction. Returns what was removed, by kind.

    The brain is reconciled as for a disabled source: chunks that only this source backed stop
    being served (they are deleted only by the brain's daily prune, after the retention period
    for withdrawn chunks: bundles.services.prune). A refresh still
    running for it finds the source gone and ends quietly (tasks.refresh_source)."""
    source = Source.objects.select_for_update(of=("self",)).select_related("team").get(pk=source.pk)
    team, pk = source.team, source.pk
    data = {
        "identity": source.identity,
        "name": source.display_name,
        "kind": source.kind,
        "state": source.state,
        "health": source.health,
        "credential": source.credential_kind if source.credential_encrypted else "none",
    }
    counts = {
        "snapshots": Snapshot.objects.filter(source_id=pk).count(),
        "records": Record.objects.filter(source_id=pk).count(),
        "runs": RefreshRun.objects.filter(source_id=pk).count(),
    }
    source.state = SourceState.DISABLED  # what the mirror withdraws; the row goes next
    _announce(source, actor)
    source.delete()
    audit_record(
        actor=actor,
        action="source.delete",
        team=team,
        target_type="sources.source",
        target_id=pk,
        summary=f"Deleted source {data['name'] or data['identity']} ({data['identity']})",
        data={**data, "removed": counts},
    )
    return counts


@transaction.atomic
def source_refresh_request(*, actor: Actor, source: Source, trigger: str = "manual") -> RefreshRun:
    """Record a queued run and hand it to a worker once this transaction commits."""
    if source.state == SourceState.DISABLED:
        raise ValidationError("A disabled source is not refreshed; approve it again first.")
    run = RefreshRun.objects.create(source=source, trigger=trigger, requested_by=actor.label)
    audit_record(
        actor=actor,
        action="source.refresh.request",
        team=source.team,
        target=source,
        summary=f"Requested a refresh of {source.label}",
        data={"run": run.pk, "trigger": trigger},
    )
    source_id, run_id = source.pk, run.pk

    def enqueue() -> None:
        from kombu.exceptions import OperationalError

        from sources.tasks import refresh_source

        try:
            refresh_source.delay(source_id, run_id)
        except OperationalError as exc:  # broker down: say so on the run instead of a 500
            RefreshRun.objects.filter(pk=run_id).update(
                status=RunStatus.FAILED,
                error_code="queue-unavailable",
                error=f"The task queue is unreachable, nothing was refreshed: {exc}"[:1000],
                finished_at=timezone.now(),
            )

    transaction.on_commit(enqueue)
    return run


# ----------------------------------------------------------------------------- refresh


PREVIOUS_FIELDS = (
    "pk",
    "path",
    "record_id",
    "title",
    "kind",
    "scope",
    "created",
    "updated",
    "body",
    "tags",
    "provenance",
    "expires",
    "supersedes",
    "extensions",
    "content_hash",
    "active",
    "inactive_reason",
)


@dataclass(frozen=True)
class _Previous:
    """A stored record as the refresh needs it: read as values, no model instances."""

    pk: int
    path: str
    record_id: str
    title: str
    kind: str
    scope: str
    created: datetime
    updated: datetime
    body: str
    tags: list[str]
    provenance: Any
    expires: datetime | None
    supersedes: list[str]
    extensions: dict[str, Any]
    content_hash: str
    active: bool
    inactive_reason: str


def _previous_state(
    source: Source,
) -> tuple[Snapshot | None, dict[str, _Previous], dict[str, fetchers.Validator]]:
    snapshot = source.current_snapshot
    rows: dict[str, _Previous] = {}
    if snapshot is not None:
        values = Record.objects.filter(snapshot=snapshot).order_by().values_list(*PREVIOUS_FIELDS)
        # tuples straight from psycopg: Django's converters were half of an unchanged refresh
        rows = {
            row[1]: _Previous(*row)
            for row in stream_rows(values, itersize=2000, json_loads=json_loads)
        }
    validators = {
        v.url: fetchers.Validator(v.etag, v.last_modified, v.content_hash)
        for v in HttpValidator.objects.filter(source=source)
    }
    return snapshot, rows, validators


def _as_record(row: _Previous) -> om.Record:
    return om.Record(
        id=row.record_id,
        title=row.title,
        kind=row.kind,
        scope=row.scope,
        created=row.created,
        updated=row.updated,
        body=row.body,
        tags=tuple(row.tags),
        provenance=row.provenance,
        expires=row.expires,
        supersedes=tuple(row.supersedes),
        extensions=row.extensions,
        content_hash=row.content_hash,
    )


def read(source: Source, *, now: datetime | None = None) -> fetchers.ReadResult:
    """Read a source without storing anything (used by the preview CLI and tests)."""
    fetcher = fetchers.make_fetcher(
        source.kind,
        source.identity,
        policy=fetchers.policy_from_settings(),
        credential=source_credential(source),
    )
    try:
        return fetchers.read_source(fetcher, now=now or timezone.now())
    finally:
        fetcher.close()


def source_refresh(
    *, source_id: int, run_id: int | None = None, trigger: str = "manual"
) -> RefreshRun:
    """Read the source and swap in the new snapshot atomically, or mark it stale / denied.

    The network work happens outside any transaction; the swap and its audit events happen in
    one. Callers serialise runs per source (tasks.refresh_source holds a named lock).
    """
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
        snapshot, rows, validators = _previous_state(source)
        credential = source_credential(source)
        fetcher = fetchers.make_fetcher(
            source.kind,
            source.identity,
            policy=fetchers.policy_from_settings(),
            credential=credential,
        )
        if isinstance(fetcher, fetchers.LocalFetcher):
            _local_check(source, fetcher)
        result = fetchers.read_source(
            fetcher,
            now=started,
            previous_records={path: _as_record(row) for path, row in rows.items()},
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


def _error_text(exc: BaseException) -> str:
    """An exception as text any database column can hold (no NUL, no lone surrogate)."""
    text = f"{type(exc).__name__}: {exc}"[:500]
    return text.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")


def _local_check(source: Source, fetcher: fetchers.LocalFetcher) -> None:
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
    if source.health == Health.STALE:
        event = webhook_events.SOURCE_STALE
    elif source.health == Health.DENIED:
        event = webhook_events.SOURCE_DENIED
    elif source.health == Health.FRESH and previous in (Health.STALE, Health.DENIED):
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
    _announce(source)
    logger.warning("source %s refresh %s: %s", source.pk, status, code)
    return run


@transaction.atomic
def _refresh_succeeded(
    source_id: int,
    run_id: int,
    result: fetchers.ReadResult,
    rows: dict[str, _Previous],
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
        snapshot = _snapshot_create(source, result, fingerprint, now)
        source.current_snapshot = snapshot
        source.save(update_fields=["current_snapshot"])
        if current is not None:
            current.delete()
    else:
        snapshot = current
        flipped = _snapshot_touch(snapshot, rows, selection, now)
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
        _announce(source)
    return run


def _snapshot_create(
    source: Source, result: fetchers.ReadResult, fingerprint: str, now: datetime
) -> Snapshot:
    selection = result.selection
    snapshot = Snapshot.objects.create(
        source=source,
        retrieved_at=now,
        manifest_name=result.manifest.name[:200],
        manifest_entries=len(result.manifest.entries) + len(result.manifest.rejected),
        manifest_body=result.manifest_body,
        fingerprint=fingerprint,
        record_count=len(result.records),
        active_count=len(selection.active),
        rejected_count=len(result.rejections),
        problem_count=len(selection.problems),
    )
    bulk_insert(
        Record,
        (
            Record(
                snapshot=snapshot,
                source=source,
                record_id=item.record.id,
                path=item.entry.path,
                kind=item.record.kind,
                scope=item.record.scope,
                title=item.record.title,
                body=item.record.body,
                tags=list(item.record.tags),
                provenance=item.record.provenance,
                created=item.record.created,
                updated=item.record.updated,
                expires=item.record.expires,
                supersedes=list(item.record.supersedes),
                extensions=item.record.extensions,
                content_hash=item.record.content_hash,
                retrieved_at=now,
                active=item.record.id in selection.active,
                inactive_reason=selection.inactive.get(item.record.id, ""),
            )
            for item in result.records
        ),
        batch_size=INSERT_BATCH,
    )
    Rejection.objects.bulk_create(
        (
            Rejection(
                snapshot=snapshot,
                # Names come from the manifest: PostgreSQL text cannot hold NUL.
                path=(r.path or "").replace("\x00", "\ufffd")[:1000],
                record_id=(r.id or "").replace("\x00", "\ufffd")[:500],
                code=r.code,
                message=r.message.replace("\x00", "\ufffd"),
                line=r.line,
            )
            for r in result.rejections
        ),
        batch_size=INSERT_BATCH,
    )
    Problem.objects.bulk_create(
        Problem(snapshot=snapshot, code=p.code, ids=list(p.ids), message=p.message)
        for p in selection.problems
    )
    return snapshot


def _snapshot_touch(
    snapshot: Snapshot, rows: dict[str, _Previous], selection: om.Selection, now: datetime
) -> bool:
    """Same bytes as before: stamp the snapshot's retrieval time (records read theirs from
    it) and re-apply expiry to the records it flips. True when some record flipped."""
    flipped = False
    for row in rows.values():
        active = row.record_id in selection.active
        reason = selection.inactive.get(row.record_id, "")
        if row.active != active or row.inactive_reason != reason:
            Record.objects.filter(pk=row.pk).update(active=active, inactive_reason=reason)
            flipped = True
    snapshot.retrieved_at = now
    snapshot.active_count = len(selection.active)
    snapshot.save(update_fields=["retrieved_at", "active_count"])
    return flipped
