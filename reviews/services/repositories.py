"""Repositories: add one, sync it (fetch, reset, index every memory)."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from memoryadmin import crypto
from memoryadmin.audit import Actor, audit_record
from memoryadmin.errors import Conflict
from memoryadmin.locks import LockBusy
from memoryadmin.models import Team
from memoryadmin.process import collector_paused
from memoryadmin.queue import enqueue_on_commit
from reviews.git import GitError, WorkingCopy
from reviews.gitenv import Credential, RemotePolicy, validate_remote_url
from reviews.models import (
    CredentialKind,
    Decision,
    PushState,
    Repository,
    SyncState,
)
from reviews.services.index import index_read, index_store
from reviews.task_names import REPOSITORY_PUSH_PENDING, REPOSITORY_SYNC


class RepositoryDisabled(Conflict):
    code = "repository-disabled"


_BRANCH = re.compile(r"^(?!-)(?!.*\.\.)(?!.*//)[A-Za-z0-9._/\-]+(?<!\.lock)(?<![/.])$")


def remote_policy() -> RemotePolicy:
    """The settings' rule for where remotes may be, as the git layer applies it."""
    return RemotePolicy(
        allow_local=settings.REPOSITORY_ALLOW_LOCAL_REMOTES,
        allow_private=settings.SOURCE_ALLOW_PRIVATE_ADDRESSES,
        timeout=float(settings.GIT_TIMEOUT),
    )


def _name_clean(*, team: Team, name: str, exclude: int | None = None) -> str:
    name = name.strip()
    if not name:
        raise ValidationError({"name": "Give the repository a name."})
    if Repository.objects.filter(team=team, name=name).exclude(pk=exclude).exists():
        raise ValidationError({"name": f"A repository named '{name}' already exists."})
    return name


def _target_clean(*, remote_url: str, branch: str, allow_local: bool | None = None) -> None:
    """The remote passes the one address guard (webhooks.netguard) and the branch is a name."""
    local = settings.REPOSITORY_ALLOW_LOCAL_REMOTES if allow_local is None else allow_local
    validate_remote_url(
        remote_url, allow_local=local, allow_private=settings.SOURCE_ALLOW_PRIVATE_ADDRESSES
    )
    if not _BRANCH.match(branch):
        raise ValidationError({"branch": "Enter a valid branch name."})


def _credential_clean(*, kind: str, secret: str, known_hosts: str, stored: bool) -> None:
    """`stored`: a secret of this kind is kept already (an edit may leave it blank)."""
    if kind not in CredentialKind.values:
        raise ValidationError({"credential_kind": "Unknown credential kind."})
    if kind != CredentialKind.NONE and not secret and not stored:
        raise ValidationError({"credential_secret": "Enter the token or the private key."})
    if kind == CredentialKind.SSH_KEY and not known_hosts.strip():
        raise ValidationError(
            {"ssh_known_hosts": "SSH needs the server's known_hosts lines (strict host checking)."}
        )


@transaction.atomic
def repository_create(
    *,
    actor: Actor,
    team: Team,
    name: str,
    remote_url: str,
    branch: str = "main",
    credential_kind: str = CredentialKind.NONE,
    credential_username: str = "",
    credential_secret: str = "",
    ssh_known_hosts: str = "",
    push_enabled: bool = True,
    allow_local: bool | None = None,
) -> Repository:
    name = _name_clean(team=team, name=name)
    _target_clean(remote_url=remote_url, branch=branch, allow_local=allow_local)
    _credential_clean(
        kind=credential_kind, secret=credential_secret, known_hosts=ssh_known_hosts, stored=False
    )
    repository = Repository.objects.create(
        team=team,
        name=name,
        remote_url=remote_url,
        branch=branch,
        credential_kind=credential_kind,
        credential_username=credential_username.strip(),
        credential_encrypted=crypto.encrypt(credential_secret) if credential_secret else "",
        ssh_known_hosts=ssh_known_hosts.strip() + "\n" if ssh_known_hosts.strip() else "",
        push_enabled=push_enabled,
        sync_state=SyncState.QUEUED,
        sync_requested_at=timezone.now(),
    )
    audit_record(
        actor=actor,
        action="repository.create",
        team=team,
        target=repository,
        summary=f"Added repository {name}",
        data={
            "name": name,
            "remote_url": remote_url,
            "branch": branch,
            "credential_kind": credential_kind,
        },
    )
    enqueue_on_commit(REPOSITORY_SYNC, repository.pk)
    return repository


@transaction.atomic
def repository_sync_request(*, actor: Actor, repository: Repository) -> None:
    if not repository.enabled:
        raise RepositoryDisabled("This repository is disabled; enable it before syncing it.")
    audit_record(
        actor=actor,
        action="repository.sync-request",
        team=repository.team,
        target=repository,
        summary=f"Asked to sync repository {repository.name}",
    )
    Repository.objects.filter(pk=repository.pk).exclude(sync_state=SyncState.RUNNING).update(
        sync_state=SyncState.QUEUED, sync_requested_at=timezone.now()
    )
    enqueue_on_commit(REPOSITORY_SYNC, repository.pk)


def working_copy(repository: Repository) -> WorkingCopy:
    secret = ""
    if repository.credential_encrypted:
        try:
            secret = crypto.decrypt(repository.credential_encrypted)
        except ValueError as exc:
            raise GitError("the stored credential cannot be decrypted; enter it again") from exc
    return WorkingCopy(
        path=repository.working_dir,
        remote_url=repository.remote_url,
        branch=repository.branch,
        credential=Credential(
            kind=repository.credential_kind,
            username=repository.credential_username,
            secret=secret,
            known_hosts=repository.ssh_known_hosts,
        ),
        lock_name=repository.lock_name,
        policy=remote_policy(),
    )


@collector_paused()
def repository_sync(*, repository_id: int, wait: float = 60.0) -> Repository:
    """Fetch, reset to the remote branch, index; then queue the push of decisions still
    pending. Raises LockBusy (the task retries); git errors are stored."""
    repository = Repository.objects.get(pk=repository_id)
    if not repository.enabled:
        _set_sync_state(repository_id, SyncState.IDLE)  # disabled after it was queued
        return repository
    repository = _sync(repository, wait=wait)
    if Decision.objects.filter(repository_id=repository_id, state=PushState.PENDING).exists():
        enqueue_on_commit(REPOSITORY_PUSH_PENDING, repository_id)
    return repository


def _sync(repository: Repository, *, wait: float) -> Repository:
    repository_id = repository.pk
    try:
        copy = working_copy(repository)
        with copy.locked(wait=wait):
            _set_sync_state(repository_id, SyncState.RUNNING)
            head = copy.sync()
            snapshot = index_read(copy, head, repository=repository)
    except LockBusy:
        _set_sync_state(repository_id, SyncState.QUEUED)  # the task retries
        raise
    except GitError as exc:
        repository_sync_failed(repository=repository, message=exc.message)
        repository.refresh_from_db()
        return repository
    return index_store(repository=repository, snapshot=snapshot)


def _set_sync_state(repository_id: int, state: str) -> None:
    """Progress shown live on the repository page and in the API (not audited: no decision)."""
    changes: dict[str, Any] = {"sync_state": state}
    if state == SyncState.RUNNING:
        changes["sync_started_at"] = timezone.now()
    Repository.objects.filter(pk=repository_id).update(**changes)


@transaction.atomic
def repository_sync_failed(*, repository: Repository, message: str) -> None:
    repository = Repository.objects.select_for_update().get(pk=repository.pk)
    first = repository.last_sync_ok is not False or repository.last_error != message
    repository.last_sync_at = timezone.now()
    repository.last_sync_ok = False
    repository.last_error = message
    repository.sync_state = SyncState.IDLE
    repository.save(update_fields=["last_sync_at", "last_sync_ok", "last_error", "sync_state"])
    if first:  # audit the change into failure, not every retry of the same failure
        audit_record(
            actor=Actor.system(),
            action="repository.sync-failed",
            team=repository.team,
            target=repository,
            summary=f"Sync of {repository.name} failed",
            data={"error": message},
        )
