"""What a failed git command raises: the errors of `reviews.git.WorkingCopy` (imported from
there), each message scrubbed of credentials and safe to store and show."""

from __future__ import annotations

from reviews.gitenv import classify


class LockNotHeld(RuntimeError):
    """A mutating git command was attempted without the repository's lock."""


class GitError(Exception):
    """A failed git command; `message` is scrubbed of credentials and safe to store and show."""

    def __init__(self, message: str, *, kind: str = "git") -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind

    @property
    def transient(self) -> bool:
        """Worth retrying (the tasks' `autoretry_for` names `TransientGitError` itself)."""
        return isinstance(self, TransientGitError)


class TransientGitError(GitError):
    """A failure worth retrying: the network, a server error, a deadline that passed."""


class PushRejected(GitError):
    """The remote moved since our fetch: fetch, re-apply and push again (never force)."""


def git_error(message: str, *, detail: str) -> GitError:
    """The error for a failed command whose output was `detail` (`classify` decides)."""
    return TransientGitError(message) if classify(detail) else GitError(message)
