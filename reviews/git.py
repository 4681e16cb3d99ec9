"""The only code that runs git: a working copy that refuses to change anything without its lock.

Credentials never reach a URL, argv, the repository config, a log line or an error text:
HTTPS tokens travel as an `http.extraHeader` through GIT_CONFIG_* environment variables, SSH
keys as a 0600 temporary file named in GIT_SSH_COMMAND with strict host key checking.

Network commands (fetch, push) go through `_run_network`: right before each one the remote
passes the one outbound address guard (`webhooks.netguard`), git connects only to the addresses
that passed (https: `http.curloptResolve`; ssh: `HostName` with the name kept as the host key
alias), follows no redirect, may use only the remote's own transport, and is killed with
everything it started when `RemotePolicy.timeout` passes. What a failed connection said stays
in the worker log; the stored error says only what is safe to tell the team.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import git as gitpython

from formats import memoryrail
from memoryadmin.locks import named_lock
from reviews import gitclone, gitobjects
from reviews.gitclone import SPARSE_CONFIG, SPARSE_PATTERNS
from reviews.gitenv import (
    NETWORK_COMMANDS,
    Credential,
    RemotePolicy,
    Session,
    clean_output,
    command_of,
    credential_env,
    network_config,
    network_failure_text,
    read_only_env,
    run_with_deadline,
    scrub,
)
from reviews.giterrors import GitError, LockNotHeld, PushRejected, TransientGitError, git_error
from webhooks import netguard

logger = logging.getLogger(__name__)


MAX_REJECTED_PUSHES = 5
HISTORY_COMMANDS = frozenset({"log", "rev-list", "diff-tree", "merge-base"})
LITERAL = {"GIT_LITERAL_PATHSPECS": "1"}  # a path is a path: no glob, no `:(…)` magic
OUTGOING_REF = "refs/memoryadmin/outgoing"  # commit_objects' scratch ref (fast-import needs one)


class WorkingCopy:
    """A clone of one branch of one remote, mirrored at `path`."""

    def __init__(
        self,
        *,
        path: Path,
        remote_url: str,
        branch: str,
        credential: Credential,
        lock_name: str,
        policy: RemotePolicy | None = None,
    ) -> None:
        self.path = path
        self.remote_url = remote_url
        self.branch = branch
        self.credential = credential
        self.lock_name = lock_name
        self.policy = policy or RemotePolicy()
        self._session: Session | None = None
        # The remote head as this session last fetched or pushed it (refs/remotes/origin/…
        # holds the same): a reset checks it out and returns it without a rev-parse.
        self._remote_head = ""

    @contextmanager
    def locked(self, *, wait: float = 0.0) -> Iterator[WorkingCopy]:
        """Hold the repository lock (across processes) for everything done inside."""
        with named_lock(self.lock_name, wait=wait), credential_env(self.credential) as session:
            self._session, self._remote_head = session, ""
            try:
                yield self
            finally:
                self._session, self._remote_head = None, ""

    @property
    def lock_held(self) -> bool:
        return self._session is not None

    def _run(self, *args: str, **options: Any) -> str:
        """`_run_bytes`, its output decoded (as GitPython decodes it)."""
        return self._run_bytes(*args, **options).decode("utf-8", "surrogateescape")

    def _run_bytes(
        self,
        *args: str,
        mutating: bool,
        env: dict[str, str] | None = None,
        stdin: bytes | None = None,
    ) -> bytes:
        command = command_of(args)
        if mutating and self._session is None:
            raise LockNotHeld(f"git {command} needs the lock {self.lock_name}")
        if command in NETWORK_COMMANDS:
            raise GitError(f"git {command} must go through _run_network (the address guard)")
        full_env = dict(self._session.env if self._session else read_only_env())
        full_env.update(env or {})
        secrets = self._session.secrets if self._session else []
        try:
            with contextlib.ExitStack() as stack:
                istream = None
                if stdin is not None:  # GitPython hands stdin a file, not bytes
                    istream = stack.enter_context(tempfile.TemporaryFile())
                    istream.write(stdin)
                    istream.seek(0)
                return gitpython.Git(str(self.path)).execute(
                    ["git", *args],
                    env=full_env,
                    strip_newline_in_stdout=False,
                    istream=istream,
                    stdout_as_string=False,
                )
        except gitpython.GitCommandError as exc:
            detail = "\n".join(
                clean_output(part, label)
                for part, label in ((exc.stderr, "stderr"), (exc.stdout, "stdout"))
            ).strip()
            message = scrub(f"git {command} failed: {detail or exc.status}", secrets)
            raise git_error(message, detail=detail) from None
        except (OSError, gitpython.GitError) as exc:
            raise GitError(scrub(f"git {command} failed: {exc}", secrets)) from None

    def _run_network(self, *args: str, label: str = "") -> str:
        """clone, fetch or push: guarded, pinned, no redirects, and killed at the deadline;
        `label`: the command its errors name."""
        command = label or args[0]
        if self._session is None:
            raise LockNotHeld(f"git {command} needs the lock {self.lock_name}")
        try:
            arguments, extra_env = network_config(self.remote_url, self.policy, self._session)
        except netguard.UrlRefused as exc:
            raise GitError(f"git {command} refused: {exc.message}", kind="remote-refused") from None
        env = {**os.environ, "LANGUAGE": "C", "LC_ALL": "C", **self._session.env, **extra_env}
        secrets = self._session.secrets
        timeout = self.policy.timeout
        try:
            done = run_with_deadline(
                ["git", *arguments, *args], cwd=self.path, env=env, timeout=timeout
            )
        except OSError as exc:
            raise GitError(scrub(f"git {command} failed: {exc}", secrets)) from None
        if done is None:
            logger.warning("git %s of %s killed after %g s", command, self.lock_name, timeout)
            raise TransientGitError(
                f"git {command} failed: the remote did not finish within {timeout:g} s",
                kind="timeout",
            )
        status, stdout, stderr = done
        if status != 0:
            detail = "\n".join(
                part.decode("utf-8", "replace").strip() for part in (stderr, stdout)
            ).strip()
            detail = scrub(detail, secrets) or f"exit status {status}"
            if self.remote_url.startswith("file:"):
                text = detail  # a local remote: nothing to learn about the network
            else:
                logger.warning("git %s of %s failed: %s", command, self.lock_name, detail)
                text = network_failure_text(detail)
            raise git_error(f"git {command} failed: {text}", detail=detail)
        return stdout.decode("utf-8", "replace")

    # Mutating commands: each needs the lock.

    def ensure_clone(self) -> bool:
        """Create the working copy, or recreate it when it is not a clone of this remote's
        branch (a new branch: the one a clone fetches); True when it was just cloned."""
        if (self.path / ".git").is_dir():
            try:
                settings = self._run("config", "--get-regexp", gitclone.SETTINGS, mutating=False)
            except GitError:
                settings = ""
            ours, sparse = gitclone.clone_state(
                settings, remote_url=self.remote_url, branch=self.branch
            )
            if ours:
                if not (sparse and self.sparse_written()):
                    self._sparse_set()  # a clone made before: its memory files go at the reset
                return False
        if self._session is None:
            raise LockNotHeld("clone needs the lock")
        if self.path.exists():
            shutil.rmtree(self.path)
        self.path.mkdir(parents=True)
        with gitclone.clone_arguments(self.remote_url, self.branch) as arguments:
            self._run_network(*arguments, label="fetch")  # its errors read as the fetch's did
        self._remote_head = self.rev_parse("HEAD")  # checked out: the remote head
        return True

    def _sparse_file(self) -> Path:
        return self.path / ".git" / "info" / "sparse-checkout"

    def sparse_written(self) -> bool:
        """The copy's sparse-checkout file leaves the memories folder out (a review working
        copy: its memory files are in git's objects only)."""
        try:
            return self._sparse_file().read_text(encoding="utf-8") == SPARSE_PATTERNS
        except (OSError, ValueError):
            return False

    def _sparse_set(self) -> None:
        """Leave the memories folder out of every checkout from now on (the next forced
        checkout removes what is on disk of it)."""
        if self._session is None:
            raise LockNotHeld("the sparse checkout setting needs the lock")
        self._sparse_file().parent.mkdir(parents=True, exist_ok=True)
        self._sparse_file().write_text(SPARSE_PATTERNS, encoding="utf-8")
        for key, value in SPARSE_CONFIG.items():
            self._run("config", key, value, mutating=True)

    def fetch(self) -> str:
        """Fetch the branch; return the remote head commit (FETCH_HEAD's, which the fetch is
        told to write: no rev-parse)."""
        refspec = f"+refs/heads/{self.branch}:refs/remotes/origin/{self.branch}"
        self._run_network(
            "fetch", "--quiet", "--prune", "--no-tags", "--write-fetch-head", "origin", refspec
        )
        self._remote_head = gitobjects.fetched_head(self.path / ".git" / "FETCH_HEAD")
        if not self._remote_head:
            self._remote_head = self.rev_parse(f"refs/remotes/origin/{self.branch}")
        return self._remote_head

    def remote_head(self) -> str:
        """The remote head as this copy last fetched or pushed it ("" when it has none)."""
        if self._remote_head:
            return self._remote_head
        try:
            return self.rev_parse(f"refs/remotes/origin/{self.branch}")
        except GitError:
            return ""

    def reset_to_remote(self) -> str:
        """Branch, index and files become the remote head's: a forced checkout -B resets all
        three (a `reset --hard` after it only stat'ed every file), `clean` drops the rest; the
        memories folder is left out of the files (`SPARSE_PATTERNS`). The head this session
        fetched or pushed is checked out by its sha (no rev-parse after)."""
        target = self._remote_head or f"refs/remotes/origin/{self.branch}"
        self._run("checkout", "--quiet", "--force", "-B", self.branch, target, mutating=True)
        self._run("clean", "-ffdxq", mutating=True)
        return self._remote_head or self.rev_parse("HEAD")

    def sync(self) -> str:
        """The working copy at the remote head; returns it. A new clone is checked out and
        holds nothing else (no reset, no clean)."""
        if self.ensure_clone():
            return self._remote_head
        self.fetch()
        return self.reset_to_remote()

    def push(self, source: str = "HEAD", *, onto: str = "") -> None:
        """Push `source` to the branch, never forced; PushRejected when the remote moved. With
        `onto` (its parent) it lands only while the remote holds that very commit: a lease
        that can only ever replace the commit's own parent."""
        if not self.lock_held:
            raise LockNotHeld("push needs the lock")
        lease = (f"--force-with-lease=refs/heads/{self.branch}:{onto}",) if onto else ()
        refspec = f"{source}:refs/heads/{self.branch}"
        try:
            self._run_network("push", "--porcelain", *lease, "origin", refspec)
        except GitError as exc:
            if re.search(r"fetch first|non-fast-forward|stale info|\[rejected\]", exc.message):
                raise PushRejected(exc.message, kind="rejected") from None
            raise

    def commit_objects(
        self,
        *,
        parent: str,
        changes: gitobjects.Changes,
        message: str,
        author: tuple[str, str],
        committer: tuple[str, str],
    ) -> str:
        """A commit of `changes` (path -> (mode, bytes); None removes) on `parent`, made from
        objects by one `fast-import` (`--force`: of its own scratch ref); no file is touched."""
        if not self.lock_held:
            raise LockNotHeld("commit needs the lock")
        try:
            stream = gitobjects.commit_stream(
                OUTGOING_REF, parent, changes, message, author=author, committer=committer
            )
        except ValueError as exc:
            raise GitError(f"git fast-import refused: {exc}") from None
        return self._run("fast-import", "--quiet", "--force", mutating=True, stdin=stream).strip()

    def push_loop(
        self, attempt: Callable[[], tuple[str, str]], *, attempts: int = MAX_REJECTED_PUSHES
    ) -> str | None:
        """The one push loop: `attempt` makes the commit ("" for nothing to commit) and says
        its push's `onto`; when the remote moved meanwhile, start over (never forced). Returns
        the pushed commit, "", or None after `attempts` rejections (the copy is then reset)."""
        for _ in range(attempts):
            sha, onto = attempt()
            if not sha:
                return ""
            try:
                self.push(sha, onto=onto)
            except PushRejected:
                continue  # someone pushed meanwhile: fetch and re-apply on the new head
            self._remote_head = sha  # the push moved refs/remotes/origin/<branch> to it
            return sha
        self.reset_to_remote()
        return None

    # Read-only commands.

    def rev_parse(self, rev: str) -> str:
        return self._run(
            "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", mutating=False
        ).strip()

    def tree_entries(
        self, rev: str, *paths: str, sized: bool = False
    ) -> dict[str, gitobjects.TreeEntry]:
        """Every file under `paths` (literal; a folder is listed whole) in commit `rev`;
        `sized`: with each blob's size."""
        flags = ("-r", "-z", "-l") if sized else ("-r", "-z")
        output = self._run("ls-tree", *flags, rev, "--", *paths, mutating=False, env=LITERAL)
        return gitobjects.tree_entries(output)

    def contents(self, shas: Iterable[str]) -> dict[str, bytes]:
        """The bytes of these blobs, read by one `cat-file --batch`."""
        wanted = "".join(f"{sha}\n" for sha in dict.fromkeys(shas)).encode("ascii")
        if not wanted:
            return {}
        return gitobjects.batch_contents(
            self._run_bytes("cat-file", "--batch", mutating=False, stdin=wanted)
        )

    def project(
        self, rev: str = "HEAD", *, config: memoryrail.Config | memoryrail.ConfigError | None = None
    ) -> tuple[memoryrail.Project, dict[str, gitobjects.TreeEntry], dict[str, bytes]]:
        """The project of commit `rev` read from its objects (`memoryrail.read_entries`: one
        `ls-tree -l`, one `cat-file --batch` of the blobs within the size limit), the memories
        folder's entries and the bytes read of each regular memory file; `config`: its config
        (None: the checked-out file's, which the sparse checkout keeps)."""
        entries = self.tree_entries(rev, memoryrail.MEMORIES_DIR, sized=True)
        blobs: dict[str, bytes] = {}

        def read(paths: list[str]) -> dict[str, bytes]:
            contents = self.contents(entries[path].sha for path in paths)
            for path in paths:
                data = contents.get(entries[path].sha)
                if data is not None:
                    blobs[path] = data
            return blobs

        project = memoryrail.read_entries(
            self.path,
            {path: entry.mode for path, entry in entries.items()},
            read,
            config=config,
            sizes={path: entry.size for path, entry in entries.items()},
        )
        return project, entries, blobs

    def history(
        self, command: str, *args: str, paths: tuple[str, ...] = (), stdin: bytes | None = None
    ) -> str:
        """A read of the commit graph (`reviews.githistory`): only these read-only commands,
        and `paths` (untrusted: memories' links) as literal pathspecs after `--`, never an
        option or pathspec magic."""
        if command not in HISTORY_COMMANDS:
            raise GitError(f"git {command} is not a history read")
        tail = ("--", *paths) if paths else ()
        return self._run(command, *args, *tail, mutating=False, env=LITERAL, stdin=stdin)

    def log_grep(self, pattern: str, *, limit: int, rev: str = "HEAD") -> list[tuple[str, str]]:
        """(commit, author email) of recent commits of `rev` whose message has a line matching
        pattern."""
        output = self._run(
            "log", "-n", str(limit), "--format=%H %ae", f"--grep={pattern}", rev, mutating=False
        )
        return [tuple(line.split(" ", 1)) for line in output.splitlines() if " " in line]  # type: ignore[misc]

    def last_commit_time(self, path: str) -> datetime | None:
        """The committer time of the first commit `git log -- path` shows: one walk per path
        (`reviews.githistory.link_times` answers many at once)."""
        output = self.history("log", "-1", "--format=%cI", "HEAD", paths=(path,)).strip()
        return datetime.fromisoformat(output) if output else None
