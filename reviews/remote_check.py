""" "Test" before saving a repository: `git ls-remote` of the branch through the address guard,
with the credential given, in a scratch folder (no working copy, no row, no lock)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from reviews.gitenv import (
    Credential,
    RemotePolicy,
    credential_env,
    network_config,
    network_failure_text,
    run_with_deadline,
    scrub,
)
from webhooks import netguard


class RemoteCheckFailed(Exception):
    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def remote_check(
    *, remote_url: str, branch: str, credential: Credential, policy: RemotePolicy
) -> str:
    """The branch's head commit on the remote, or RemoteCheckFailed (text scrubbed of secrets)."""
    with credential_env(credential) as session, tempfile.TemporaryDirectory() as scratch:
        try:
            arguments, extra_env = network_config(remote_url, policy, session)
        except netguard.UrlRefused as exc:
            raise RemoteCheckFailed(exc.message, code="remote-refused") from None
        env = {**os.environ, "LANGUAGE": "C", "LC_ALL": "C", **session.env, **extra_env}
        argv = ["git", *arguments, "ls-remote", "--heads", "--", remote_url, branch]
        try:
            done = run_with_deadline(argv, cwd=Path(scratch), env=env, timeout=policy.timeout)
        except OSError as exc:
            raise RemoteCheckFailed(scrub(str(exc), session.secrets), code="git-failed") from None
    if done is None:
        raise RemoteCheckFailed(
            f"The remote did not answer within {policy.timeout:g} s.", code="timeout"
        )
    status, stdout, stderr = done
    if status != 0:
        detail = scrub(stderr.decode("utf-8", "replace").strip(), session.secrets)
        text = detail if remote_url.startswith("file:") else network_failure_text(detail)
        raise RemoteCheckFailed(text or f"git exited with {status}", code="git-failed")
    for line in stdout.decode("utf-8", "replace").splitlines():
        sha, _, ref = line.partition("\t")
        if ref == f"refs/heads/{branch}":
            return sha
    raise RemoteCheckFailed(
        f"The remote answered, but it has no branch named '{branch}'.", code="branch-missing"
    )
