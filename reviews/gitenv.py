"""How git is run safely: credentials in the environment only, the remote pinned to the
addresses the outbound guard checked, a wall-clock deadline, and failure texts safe to show.

No git command runs here (that is `reviews.git.WorkingCopy`): this module builds what each
command runs with and reads what a failed one said.
"""

from __future__ import annotations

import base64
import contextlib
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
from pathlib import Path

from django.core.exceptions import ValidationError

from webhooks import netguard


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
NETWORK_COMMANDS = frozenset({"fetch", "push", "pull", "clone", "ls-remote", "remote-update"})
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
    (
        re.compile(r"(?i)couldn't find remote ref|remote branch .* not found in upstream"),
        "the branch does not exist at the remote",  # a fetch's words, then a first clone's
    ),
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
class Session:
    env: dict[str, str] = field(default_factory=dict)
    secrets: list[str] = field(default_factory=list)


@contextmanager
def credential_env(credential: Credential) -> Iterator[Session]:
    session = Session(
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


def network_config(
    remote_url: str, policy: RemotePolicy, session: Session
) -> tuple[list[str], dict[str, str]]:
    """`-c` arguments and environment for one fetch or push, after the address guard (which
    raises `netguard.UrlRefused`)."""
    remote = netguard.git_remote_parse(remote_url, allow_local=policy.allow_local)
    addresses = netguard.git_remote_addresses(
        remote, allow_private=policy.allow_private or policy.allow_local
    )
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
        command_line = session.env.get("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
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


def run_with_deadline(
    argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float
) -> tuple[int, bytes, bytes] | None:
    """Run one network command in its own process group; (status, stdout, stderr), or None
    when the deadline passed and everything it started was killed. Raises OSError."""
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: the deadline kills it all
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.communicate(timeout=10)
        return None
    return process.returncode, stdout, stderr


def clean_output(output: object, label: str) -> str:
    text = output if isinstance(output, str) else ""
    return text.strip().removeprefix(f"{label}: ").strip("'").strip()


def read_only_env() -> dict[str, str]:
    return {
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "core.quotePath",
        "GIT_CONFIG_VALUE_0": "false",
    }


def command_of(args: tuple[str, ...]) -> str:
    """The git command of an argument list that may start with `-c name=value` pairs."""
    at = 0
    while at + 1 < len(args) and args[at] == "-c":
        at += 2
    return args[at] if at < len(args) else ""


def validate_remote_url(url: str, *, allow_local: bool, allow_private: bool = False) -> None:
    """HTTPS or SSH remotes without embedded credentials, on a public address; file:// and
    loopback http only with local remotes allowed. One address guard for all outbound traffic
    (`webhooks.netguard`): the name is resolved now and every address must be public unless
    local remotes or private addresses are allowed; the worker checks again before each fetch
    and push (`WorkingCopy`)."""
    try:
        remote = netguard.git_remote_parse(url, allow_local=allow_local)
        if not (allow_local or allow_private):
            netguard.git_remote_addresses(remote, allow_private=False)
    except netguard.UrlRefused as exc:
        raise ValidationError({"remote_url": ValidationError(exc.message, code=exc.code)}) from None
