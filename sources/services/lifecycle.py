"""Every write to a source but the refresh: add, approve, disable, change the credential,
delete, and request a refresh (queued for a worker once the transaction commits)."""

from __future__ import annotations

import os
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from memoryadmin.audit import Actor, audit_record
from memoryadmin.models import Team
from memoryadmin.queue import enqueue_now
from sources.credentials import CredentialInvalid, credential_clean, credential_encrypt
from sources.fetchers import OUTSIDE_ROOTS, Credential, LocationError, local_resolve
from sources.fetchers.read import normalize_location
from sources.models import (
    CredentialKind,
    Record,
    RefreshRun,
    RunStatus,
    Snapshot,
    Source,
    SourceKind,
    SourceState,
)
from sources.signals import announce
from sources.task_names import SOURCE_REFRESH
from webhooks import netguard

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
    inside = folder.rstrip("/") + "/"
    others = Source.objects.filter(kind=SourceKind.LOCAL).exclude(team=team)
    return others.filter(Q(identity__in=around) | Q(identity__startswith=inside)).exists()


def _local_identity(*, actor: Actor, team: Team, identity: str) -> str:
    """The resolved folder a local source may read, or a ValidationError on `location`.

    Inside an allowed root (MEMORYADMIN_SOURCE_LOCAL_ROOTS) for everyone; with no roots set,
    only a superuser (or the system: management commands) adds one, anywhere. Never the folder
    of another team's source unless shared folders are allowed. A path outside the roots gets
    one message whether it exists or not."""
    roots = settings.SOURCE_LOCAL_ROOTS
    if roots:
        resolved = local_resolve(identity, roots)
        if resolved is None:
            raise ValidationError({"location": OUTSIDE_ROOTS})
    else:
        user = actor.user
        if not (actor.is_system or (user is not None and user.is_superuser)):
            raise ValidationError({"location": LOCAL_NEEDS_SUPERUSER})
        resolved = os.path.realpath(identity)
    if local_overlap(team=team, folder=resolved):
        raise ValidationError({"location": LOCAL_SHARED})
    return resolved


PLAIN_HTTP = (
    "Plain http:// is refused like ftp://: use https://. (An operator may allow http:// to a "
    "loopback host for development with MEMORYADMIN_SOURCE_ALLOW_HTTP_LOOPBACK.)"
)


def plain_http_refuse(identity: str) -> None:
    """http:// only to a loopback host, and only when the development setting allows it."""
    if not identity.startswith("http://"):
        return
    try:
        netguard.url_parse(identity, allow_http_loopback=settings.SOURCE_ALLOW_HTTP_LOOPBACK)
    except netguard.UrlRefused as exc:
        raise ValidationError({"location": PLAIN_HTTP}, code="insecure-url") from exc


# ----------------------------------------------------------------------------- lifecycle


@transaction.atomic
def source_add(
    *,
    actor: Actor,
    team: Team,
    location: str,
    credential: Credential | None = None,
    refresh_interval: timedelta = timedelta(hours=1),
) -> Source:
    """Register a source as pending and queue a preview read (nothing is served yet)."""
    try:
        kind, identity = normalize_location(location)
    except LocationError as exc:
        raise ValidationError({"location": str(exc)}) from exc
    if kind == SourceKind.LOCAL:
        identity = _local_identity(actor=actor, team=team, identity=identity)
    else:
        plain_http_refuse(identity)
    if Source.objects.filter(team=team, identity=identity).exists():
        raise ValidationError({"location": "This team already has that source."})
    credential = credential or Credential()
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
    announce(source, actor)
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
    announce(source, actor)
    return source


@transaction.atomic
def source_credential_set(*, actor: Actor, source: Source, credential: Credential | None) -> Source:
    """Replace the source's credential, or clear it (None or kind `none`).

    The next refresh uses it; nothing is queued here (the caller offers "refresh now"). The
    audit event names the kinds, never the secret. Clearing when none is set changes nothing.
    """
    source = Source.objects.select_for_update(of=("self",)).select_related("team").get(pk=source.pk)
    credential = credential_clean(credential or Credential())
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
    running for it finds the source gone and ends quietly (tasks.source_refresh)."""
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
    announce(source, actor)
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

    # One on_commit callback rather than delay_on_commit: a broker outage is marked on the run.
    def enqueue() -> None:
        from kombu.exceptions import OperationalError

        try:
            enqueue_now(SOURCE_REFRESH, source_id, run_id)
        except OperationalError as exc:  # broker down: say so on the run instead of a 500
            RefreshRun.objects.filter(pk=run_id).update(
                status=RunStatus.FAILED,
                error_code="queue-unavailable",
                error=f"The task queue is unreachable, nothing was refreshed: {exc}"[:1000],
                finished_at=timezone.now(),
            )

    transaction.on_commit(enqueue)
    return run
