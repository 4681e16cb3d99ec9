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

import base64
import contextlib
import logging
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import git as gitpython

from memoryadmin.locks import named_lock
from webhooks import netguard

logger = logging.getLogger(__name__)


class LockNotHeld(RuntimeError):
    """A mutating git command was attempted without the repository's lock."""


class GitError(Exception):
    """A failed git command; `message` is scrubbed of credentials and safe to store and show."""

    def __init__(self, message: str, *, transient: bool = False, kind: str = "git") -> None:
        super().__init__(message)
        self.message = message
        self.transient = transient
        self.kind = kind


class PushRejected(GitError):
    """The remote moved since our fetch: fetch, re-apply and push again (never force)."""


@dataclass(frozen=True)
class RemotePolicy:
    """Where the remote may be, checked again right before every fetch and push (the settings
    may have changed, and the name may resolve elsewhere now), and how long git may take."""

    allow_local: bool = False  # file:// and http:// to a loopback name
    allow_private: bool = False  # private, loopback and link-local addresses over https/ssh
    timeout: float = 120.0  # wall clock, per fetch or push


@dataclass(frozen=True)
class Credential:
    kind: str = "none"  # none | https-token | ssh-key
    username: str = ""
    secret: str = ""
    known_hosts: str = ""


_TRANSIENT = re.compile(
    r"(?i)could not resolve host|connection (?:refused|reset|timed out)|timed out|"
    r"temporary failure|network is unreachable|the remote end hung up unexpectedly|"
    r"returned error: 5\d\d|HTTP 5\d\d|early EOF|unable to connect|no route to host|"
    r"failed to connect|couldn't connect|could not connect"  # curl: a server that is down
)
_URL_USERINFO = re.compile(r"(?i)([a-z][a-z0-9+.\-]*://)[^/@\s]+@")
_NETWORK_COMMANDS = frozenset({"fetch", "push", "pull", "clone", "ls-remote", "remote-update"})
# What a failed fetch or push may tell the team, first match wins. Anything else (refused,
# timed out, reset, TLS, a banner that is not git's) becomes one generic text, so the stored
# error is no oracle for what answered where; the full text goes to the worker log only.
_SAFE_FAILURES = [
    (
        re.compile(r"(?i)authentication failed|returned error: 401|permission denied \(publickey"),
        "authentication failed; check the credential",
    ),
    (
        re.compile(r"(?i)returned error: 403"),
        "access denied (HTTP 403); check the credential's permissions",
    ),
    (
        re.compile(r"(?i)repository '[^']*' not found|returned error: 404"),
        "the repository was not found at the remote",
    ),
    (re.compile(r"(?i)couldn't find remote ref"), "the branch does not exist at the remote"),
    (
        re.compile(r"(?i)host key verification failed"),
        "the SSH host key does not match the known_hosts lines",
    ),
    (
        re.compile(r"(?i)returned error: 30\d"),
        "the remote answered with a redirect, which is not followed; enter the final URL",
    ),
    (re.compile(r"(?i)returned error: 5\d\d"), "the remote answered with a server error"),
]
_PUSH_REFUSED = re.compile(r"\[(?:remote )?rejected\]")
CONNECT_FAILED = "could not connect to the remote, or it did not answer as a git server"


def scrub(text: str, secrets: list[str]) -> str:
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, "***")
    return _URL_USERINFO.sub(r"\1***@", text)


def classify(stderr: str) -> bool:
    """True when a failure is worth retrying (network, server errors); the one place we decide."""
    return _TRANSIENT.search(stderr) is not None


def network_failure_text(detail: str) -> str:
    """The part of a failed fetch's or push's output that is safe to store and show."""
    if _PUSH_REFUSED.search(detail):  # the remote spoke git and refused: its reason helps
        return detail
    for pattern, text in _SAFE_FAILURES:
        if pattern.search(detail):
            return text
    return CONNECT_FAILED


@dataclass
class _Session:
    env: dict[str, str] = field(default_factory=dict)
    secrets: list[str] = field(default_factory=list)


@contextmanager
def _credential_env(credential: Credential) -> Iterator[_Session]:
    session = _Session(
        env={
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_ASKPASS": "/bin/false",
            "SSH_ASKPASS": "/bin/false",
            "GIT_CONFIG_COUNT": "3",
            "GIT_CONFIG_KEY_0": "credential.helper",
            "GIT_CONFIG_VALUE_0": "",
            "GIT_CONFIG_KEY_1": "protocol.ext.allow",
            "GIT_CONFIG_VALUE_1": "never",
            "GIT_CONFIG_KEY_2": "core.quotePath",
            "GIT_CONFIG_VALUE_2": "false",
        }
    )
    if credential.kind == "https-token" and credential.secret:
        userpass = f"{credential.username or 'x-access-token'}:{credential.secret}"
        encoded = base64.b64encode(userpass.encode("utf-8")).decode("ascii")
        session.env.update(
            GIT_CONFIG_COUNT="4",
            GIT_CONFIG_KEY_3="http.extraHeader",
            GIT_CONFIG_VALUE_3=f"Authorization: Basic {encoded}",
        )
        session.secrets += [credential.secret, encoded, userpass]
        yield session
        return
    if credential.kind == "ssh-key" and credential.secret:
        folder = tempfile.mkdtemp(prefix="memoryadmin-ssh-")
        try:
            key_path = Path(folder) / "key"
            hosts_path = Path(folder) / "known_hosts"
            for path, content in ((key_path, credential.secret), (hosts_path, "")):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w") as handle:
                    handle.write(content if path == key_path else credential.known_hosts)
                    if path == key_path and not content.endswith("\n"):
                        handle.write("\n")
            session.env["GIT_SSH_COMMAND"] = " ".join(
                [
                    "ssh",
                    "-i",
                    shlex.quote(str(key_path)),
                    "-o IdentitiesOnly=yes",
                    "-o BatchMode=yes",
                    "-o StrictHostKeyChecking=yes",
                    "-o",
                    shlex.quote(f"UserKnownHostsFile={hosts_path}"),
                    "-F /dev/null",
                ]
            )
            session.secrets.append(credential.secret)
            yield session
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return
    yield session


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
        self._session: _Session | None = None
        self._unstaged: list[str] = []  # written or removed since the last commit

    @contextmanager
    def locked(self, *, wait: float = 0.0) -> Iterator[WorkingCopy]:
        """Hold the repository lock (across processes) for everything done inside."""
        with named_lock(self.lock_name, wait=wait), _credential_env(self.credential) as session:
            self._session = session
            try:
                yield self
            finally:
                self._session = None

    @property
    def lock_held(self) -> bool:
        return self._session is not None

    def _run(
        self,
        *args: str,
        mutating: bool,
        env: dict[str, str] | None = None,
        stdin: bytes | None = None,
    ) -> str:
        if mutating and self._session is None:
            raise LockNotHeld(f"git {args[0]} needs the lock {self.lock_name}")
        if args[0] in _NETWORK_COMMANDS:
            raise GitError(f"git {args[0]} must go through _run_network (the address guard)")
        full_env = dict(self._session.env if self._session else _read_only_env())
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
                    ["git", *args], env=full_env, strip_newline_in_stdout=False, istream=istream
                )
        except gitpython.GitCommandError as exc:
            detail = "\n".join(
                _clean(part, label)
                for part, label in ((exc.stderr, "stderr"), (exc.stdout, "stdout"))
            ).strip()
            message = scrub(f"git {args[0]} failed: {detail or exc.status}", secrets)
            raise GitError(message, transient=classify(detail)) from None
        except (OSError, gitpython.GitError) as exc:
            raise GitError(scrub(f"git {args[0]} failed: {exc}", secrets)) from None

    def _network_config(self, command: str) -> tuple[list[str], dict[str, str]]:
        """`-c` arguments and environment for one fetch or push, after the address guard."""
        try:
            remote = netguard.git_remote_parse(self.remote_url, allow_local=self.policy.allow_local)
            addresses = netguard.git_remote_addresses(
                remote, allow_private=self.policy.allow_private or self.policy.allow_local
            )
        except netguard.UrlRefused as exc:
            raise GitError(f"git {command} refused: {exc.message}", kind="remote-refused") from None
        config = {
            "http.followRedirects": "false",
            "protocol.allow": "never",
            f"protocol.{remote.scheme}.allow": "always",
            "transfer.bundleURI": "false",
            "fetch.recurseSubmodules": "false",
            "push.recurseSubmodules": "no",
        }
        env: dict[str, str] = {}
        named = addresses and remote.host not in addresses and ":" not in remote.host
        if named and remote.scheme in ("https", "http"):
            pinned = ",".join(f"[{a}]" if ":" in a else a for a in addresses)
            config["http.curloptResolve"] = f"{remote.host}:{remote.port}:{pinned}"
        if remote.scheme == "ssh":
            assert self._session is not None
            command_line = self._session.env.get("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
            if named:
                # ssh takes one address: IPv4 first (an IPv4-only worker is common, and the
                # resolver may list a dual-stack host's IPv6 address first).
                address = sorted(addresses, key=lambda a: ":" in a)[0]
                alias = remote.host if remote.port == 22 else f"[{remote.host}]:{remote.port}"
                command_line += " " + " ".join(
                    [
                        "-o",
                        shlex.quote(f"HostName={address}"),
                        "-o",
                        shlex.quote(f"HostKeyAlias={alias}"),
                        "-o CheckHostIP=no",
                    ]
                )
            env["GIT_SSH_COMMAND"] = command_line
        arguments = [part for key, value in config.items() for part in ("-c", f"{key}={value}")]
        return arguments, env

    def _run_network(self, *args: str) -> str:
        """fetch or push: guarded, pinned, no redirects, and killed at the deadline."""
        command = args[0]
        if self._session is None:
            raise LockNotHeld(f"git {command} needs the lock {self.lock_name}")
        arguments, extra_env = self._network_config(command)
        env = {**os.environ, "LANGUAGE": "C", "LC_ALL": "C", **self._session.env, **extra_env}
        secrets = self._session.secrets
        timeout = self.policy.timeout
        try:
            process = subprocess.Popen(
                ["git", *arguments, *args],
                cwd=self.path,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # its own process group: the deadline kills it all
            )
        except OSError as exc:
            raise GitError(scrub(f"git {command} failed: {exc}", secrets)) from None
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.communicate(timeout=10)
            logger.warning("git %s of %s killed after %g s", command, self.lock_name, timeout)
            raise GitError(
                f"git {command} failed: the remote did not finish within {timeout:g} s",
                transient=True,
                kind="timeout",
            ) from None
        if process.returncode != 0:
            detail = "\n".join(
                part.decode("utf-8", "replace").strip() for part in (stderr, stdout)
            ).strip()
            detail = scrub(detail, secrets) or f"exit status {process.returncode}"
            if self.remote_url.startswith("file:"):
                text = detail  # a local remote: nothing to learn about the network
            else:
                logger.warning("git %s of %s failed: %s", command, self.lock_name, detail)
                text = network_failure_text(detail)
            raise GitError(f"git {command} failed: {text}", transient=classify(detail))
        return stdout.decode("utf-8", "replace")

    # Mutating commands: each needs the lock.

    def ensure_clone(self) -> None:
        """Create the working copy, or recreate it when it is not a clone of this remote."""
        if (self.path / ".git").is_dir():
            try:
                current = self._run("config", "--get", "remote.origin.url", mutating=False)
            except GitError:
                current = ""
            if current.strip() == self.remote_url:
                return
        if self._session is None:
            raise LockNotHeld("clone needs the lock")
        if self.path.exists():
            shutil.rmtree(self.path)
        self.path.mkdir(parents=True)
        self._run("init", "--quiet", mutating=True)
        self._run("remote", "add", "origin", self.remote_url, mutating=True)

    def fetch(self) -> str:
        """Fetch the branch; return the remote head commit."""
        refspec = f"+refs/heads/{self.branch}:refs/remotes/origin/{self.branch}"
        self._run_network("fetch", "--quiet", "--prune", "--no-tags", "origin", refspec)
        return self.rev_parse(f"refs/remotes/origin/{self.branch}")

    def reset_to_remote(self) -> str:
        remote = f"refs/remotes/origin/{self.branch}"
        self._run("checkout", "--quiet", "--force", "-B", self.branch, remote, mutating=True)
        self._run("reset", "--quiet", "--hard", remote, mutating=True)
        self._run("clean", "-ffdxq", mutating=True)
        self._unstaged.clear()
        return self.rev_parse("HEAD")

    def sync(self) -> str:
        self.ensure_clone()
        self.fetch()
        return self.reset_to_remote()

    def write_file(self, path: str, content: str) -> None:
        if not self.lock_held:
            raise LockNotHeld("writing the working copy needs the lock")
        target = self._inside(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode("utf-8"))
        self._unstaged.append(path)

    def remove_file(self, path: str) -> None:
        if not self.lock_held:
            raise LockNotHeld("writing the working copy needs the lock")
        target = self._inside(path)
        if not target.is_file():
            raise GitError(f"git rm failed: {path} is not a file of the working copy")
        target.unlink()
        self._unstaged.append(path)

    def _stage(self) -> None:
        """Stage every path written or removed in one `git update-index` reading the paths
        from stdin: one `git add` per file spent 20 s on 1,000 approvals, and `git add` with
        500 pathspecs per call still 1 s (each pathspec is matched against every file)."""
        paths = list(dict.fromkeys(self._unstaged))
        if paths:
            listing = b"".join(path.encode("utf-8") + b"\0" for path in paths)
            self._run(
                "update-index", "--add", "--remove", "-z", "--stdin", mutating=True, stdin=listing
            )
        self._unstaged.clear()

    def commit(self, *, message: str, author: tuple[str, str], committer: tuple[str, str]) -> str:
        env = {
            "GIT_AUTHOR_NAME": author[0],
            "GIT_AUTHOR_EMAIL": author[1],
            "GIT_COMMITTER_NAME": committer[0],
            "GIT_COMMITTER_EMAIL": committer[1],
        }
        self._commit(message, env)
        return self.rev_parse("HEAD")

    def _commit(self, message: str, env: dict[str, str]) -> None:
        if not self.lock_held:
            raise LockNotHeld("commit needs the lock")
        self._stage()
        message_file = self.path / ".git" / "MEMORYADMIN_MSG"
        message_file.write_text(message, encoding="utf-8")
        try:
            self._run(
                "-c",
                "commit.gpgsign=false",
                "commit",
                "--quiet",
                "--no-verify",
                "--cleanup=verbatim",
                "-F",
                str(message_file),
                mutating=True,
                env=env,
            )
        finally:
            message_file.unlink(missing_ok=True)

    def push(self) -> None:
        """Push HEAD to the branch, never forced; PushRejected when the remote moved."""
        if not self.lock_held:
            raise LockNotHeld("push needs the lock")
        try:
            self._run_network("push", "--porcelain", "origin", f"HEAD:refs/heads/{self.branch}")
        except GitError as exc:
            if re.search(r"fetch first|non-fast-forward|stale info|\[rejected\]", exc.message):
                raise PushRejected(exc.message, kind="rejected") from None
            raise

    # Read-only commands.

    def rev_parse(self, rev: str) -> str:
        return self._run(
            "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", mutating=False
        ).strip()

    def blob_shas(self, folder: str) -> dict[str, str]:
        output = self._run("ls-tree", "-r", "-z", "HEAD", "--", folder, mutating=False)
        result = {}
        for entry in output.split("\x00"):
            if not entry:
                continue
            info, _, path = entry.partition("\t")
            result[path] = info.split()[2]
        return result

    def blob_sha(self, path: str) -> str | None:
        return self.blob_shas(path).get(path)

    def added_by(self, folder: str) -> dict[str, tuple[str, str, str, str]]:
        """path -> (commit, author name, email, date) of the newest commit that added it."""
        output = self._run(
            "log",
            "--diff-filter=A",
            "--name-only",
            "--format=%x1e%H%x1f%an%x1f%ae%x1f%aI",
            "HEAD",
            "--",
            folder,
            mutating=False,
        )
        result: dict[str, tuple[str, str, str, str]] = {}
        for record in output.split("\x1e"):
            if not record.strip():
                continue
            header, _, names = record.partition("\n")
            sha, name, email, date = header.split("\x1f")
            for path in names.splitlines():
                if path and path not in result:
                    result[path] = (sha, name, email, date)
        return result

    def log_grep(self, pattern: str, *, limit: int) -> list[tuple[str, str]]:
        """(commit, author email) of recent commits whose message has a line matching pattern."""
        output = self._run(
            "log", "-n", str(limit), "--format=%H %ae", f"--grep={pattern}", "HEAD", mutating=False
        )
        return [tuple(line.split(" ", 1)) for line in output.splitlines() if " " in line]  # type: ignore[misc]

    def last_commit_time(self, path: str) -> datetime | None:
        output = self._run("log", "-1", "--format=%cI", "HEAD", "--", path, mutating=False).strip()
        return datetime.fromisoformat(output) if output else None

    def _inside(self, path: str) -> Path:
        target = (self.path / path).resolve()
        target.relative_to(self.path.resolve())  # ValueError for a path escaping the copy
        return target


def _clean(output: object, label: str) -> str:
    text = output if isinstance(output, str) else ""
    return text.strip().removeprefix(f"{label}: ").strip("'").strip()


def _read_only_env() -> dict[str, str]:
    return {
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "core.quotePath",
        "GIT_CONFIG_VALUE_0": "false",
    }
