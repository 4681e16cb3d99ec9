"""Repositories after they are added: edit, test a remote, disable or enable, delete."""

from __future__ import annotations

import shutil
from typing import Any

from django.db import transaction
from django.utils import timezone

from memoryadmin import crypto
from memoryadmin.audit import Actor, audit_record
from memoryadmin.errors import DomainError
from memoryadmin.queue import enqueue_on_commit
from reviews.gitenv import Credential
from reviews.models import CredentialKind, Decision, Memory, Repository, SyncState
from reviews.remote_check import RemoteCheckFailed, remote_check
from reviews.services.repositories import (
    _credential_clean,
    _name_clean,
    _target_clean,
    remote_policy,
)
from reviews.signals import repository_indexed
from reviews.task_names import REPOSITORY_SYNC


class RemoteTestFailed(DomainError):
    """`Test` reached no branch: the remote, the credential or the branch is wrong."""

    code = "remote-test-failed"


EDITABLE = (
    "name",
    "remote_url",
    "branch",
    "credential_kind",
    "credential_username",
    "push_enabled",
)


def _settings(repository: Repository) -> dict[str, Any]:
    """What the audit log keeps of a repository's settings: never the secret."""
    data = {name: getattr(repository, name) for name in EDITABLE}
    data["credential_set"] = repository.has_credential
    data["enabled"] = repository.enabled
    return data


def repository_test(
    *,
    remote_url: str,
    branch: str,
    credential_kind: str = CredentialKind.NONE,
    credential_username: str = "",
    credential_secret: str = "",
    ssh_known_hosts: str = "",
    repository: Repository | None = None,
) -> str:
    """Check a remote before saving it: the guard, then `git ls-remote` of the branch. Returns
    the branch's head commit. With `repository` and no secret given, its stored one is used.
    Writes nothing (no row, no working copy, no audit event)."""
    _target_clean(remote_url=remote_url, branch=branch)
    stored = repository is not None and repository.has_credential
    same_kind = stored and repository.credential_kind == credential_kind  # type: ignore[union-attr]
    _credential_clean(
        kind=credential_kind,
        secret=credential_secret,
        known_hosts=ssh_known_hosts or (repository.ssh_known_hosts if same_kind else ""),  # type: ignore[union-attr]
        stored=bool(same_kind),
    )
    if not credential_secret and same_kind:
        credential_secret = crypto.decrypt(repository.credential_encrypted)  # type: ignore[union-attr]
        ssh_known_hosts = ssh_known_hosts or repository.ssh_known_hosts  # type: ignore[union-attr]
    credential = Credential(
        kind=credential_kind,
        username=credential_username.strip(),
        secret=credential_secret,
        known_hosts=ssh_known_hosts.strip() + "\n" if ssh_known_hosts.strip() else "",
    )
    try:
        return remote_check(
            remote_url=remote_url, branch=branch, credential=credential, policy=remote_policy()
        )
    except RemoteCheckFailed as exc:
        raise RemoteTestFailed({"remote_url": exc.message}) from None


@transaction.atomic
def repository_update(
    *,
    actor: Actor,
    repository: Repository,
    name: str,
    remote_url: str,
    branch: str,
    credential_kind: str,
    credential_username: str = "",
    credential_secret: str = "",
    ssh_known_hosts: str = "",
    push_enabled: bool = True,
) -> Repository:
    """Change a repository's settings. A blank secret keeps the stored one when the kind stays;
    kind `none` clears it. A new remote or branch queues a sync (the working copy is recloned)."""
    repository = Repository.objects.select_for_update().select_related("team").get(pk=repository.pk)
    before = _settings(repository)
    name = _name_clean(team=repository.team, name=name, exclude=repository.pk)
    _target_clean(remote_url=remote_url, branch=branch)
    same_kind = repository.has_credential and repository.credential_kind == credential_kind
    known_hosts = ssh_known_hosts.strip() or (repository.ssh_known_hosts if same_kind else "")
    _credential_clean(
        kind=credential_kind,
        secret=credential_secret,
        known_hosts=known_hosts,
        stored=same_kind,
    )
    moved = (remote_url, branch) != (repository.remote_url, repository.branch)
    repository.name, repository.remote_url, repository.branch = name, remote_url, branch
    repository.push_enabled = push_enabled
    repository.credential_kind = credential_kind
    if credential_kind == CredentialKind.NONE:
        repository.credential_username = ""
        repository.credential_encrypted = repository.ssh_known_hosts = ""
    else:
        repository.credential_username = credential_username.strip()
        if credential_secret:
            repository.credential_encrypted = crypto.encrypt(credential_secret)
        repository.ssh_known_hosts = known_hosts.strip() + "\n" if known_hosts.strip() else ""
    changed = [key for key, value in _settings(repository).items() if before[key] != value]
    if credential_secret and "credential_set" not in changed:
        changed.append("credential_secret")  # replaced by another: say so, never what
    if not changed:
        return repository
    if moved and repository.enabled:
        repository.sync_state = SyncState.QUEUED
        repository.sync_requested_at = timezone.now()
    repository.save()
    audit_record(
        actor=actor,
        action="repository.update",
        team=repository.team,
        target=repository,
        summary=f"Changed repository {repository.name} ({', '.join(changed)})",
        data={"before": before, "after": _settings(repository), "changed": changed},
    )
    if moved and repository.enabled:
        enqueue_on_commit(REPOSITORY_SYNC, repository.pk)
    return repository


@transaction.atomic
def repository_set_enabled(*, actor: Actor, repository: Repository, enabled: bool) -> Repository:
    """Disable (no sync, no push, no sync banner; what it served stays in the brain as of its
    last sync) or enable again (queues a sync)."""
    repository = Repository.objects.select_for_update().select_related("team").get(pk=repository.pk)
    if repository.enabled == enabled:
        return repository
    repository.enabled = enabled
    fields = ["enabled"]
    if enabled:
        repository.sync_state, repository.sync_requested_at = SyncState.QUEUED, timezone.now()
        fields += ["sync_state", "sync_requested_at"]
    repository.save(update_fields=fields)
    verb = "Enabled" if enabled else "Disabled"
    audit_record(
        actor=actor,
        action="repository.enable" if enabled else "repository.disable",
        team=repository.team,
        target=repository,
        summary=f"{verb} repository {repository.name}",
        data={"name": repository.name, "remote_url": repository.remote_url},
    )
    if enabled:
        enqueue_on_commit(REPOSITORY_SYNC, repository.pk)
    return repository


def repository_delete_preview(repository: Repository) -> dict[str, int]:
    """What deleting removes here (the brain's share is counted by the brain's selector)."""
    memories = Memory.objects.filter(repository=repository)
    return {
        "memories": memories.count(),
        "proposals": memories.filter(status="proposed").count(),
        "decisions": Decision.objects.filter(repository=repository).count(),
        "pending": Decision.objects.filter(repository=repository, state="pending").count(),
    }


@transaction.atomic
def repository_delete(*, actor: Actor, repository: Repository) -> dict[str, int]:
    """Remove the repository with its index (memories, open proposals), its decision history
    and its working copy; withdraw what it served from the brain in the same transaction (the
    mirror is told the repository holds nothing now). The remote is not touched."""
    repository = Repository.objects.select_for_update().select_related("team").get(pk=repository.pk)
    team, pk, data = repository.team, repository.pk, _settings(repository)
    counts = repository_delete_preview(repository)
    Memory.objects.filter(repository=repository).delete()
    repository_indexed.send(sender=Repository, repository=repository, actor=actor)
    working_dir = repository.working_dir
    repository.delete()
    audit_record(
        actor=actor,
        action="repository.delete",
        team=team,
        target_type="reviews.repository",
        target_id=pk,
        summary=f"Deleted repository {data['name']} ({data['remote_url']})",
        data={**data, "removed": counts},
    )
    transaction.on_commit(lambda: shutil.rmtree(working_dir, ignore_errors=True))
    return counts
