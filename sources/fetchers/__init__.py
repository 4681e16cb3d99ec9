"""Fetch a source's manifest and records from a local directory or an HTTPS base URL: the
types every transport shares (`Fetcher`, `Credential`, `FetchPolicy`, the errors). The
transports are `local.py` and `https.py`, `factory.make_fetcher` picks one, and `read.py` reads
a whole source into validated records (`read_source`).

No Django import at module level: the limits arrive as a `FetchPolicy` (see
`policy_from_settings`). Errors are split in two: `SourceError` means the source as a whole
failed (the refresh is stale or denied), `openmemories.Rejection` means one record was refused.
Credentials are sent as headers only, never put in URLs, messages or logs.
HTTPS requests connect to the address that passed the SSRF check (`webhooks.netguard`), never
to the name again, and verify the certificate for the name.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

MANIFEST_NAME = "memories.json"
# One text for every local path outside the allowed roots, whether it exists or not: the answer
# must not tell a team anything about the server's folders.
OUTSIDE_ROOTS = "This path is not inside a folder that this server allows for local sources."


@dataclass(frozen=True)
class FetchPolicy:
    timeout: float = 10.0
    max_response_bytes: int = 1_048_576
    max_manifest_bytes: int = 4_194_304
    max_entries: int = 20_000
    allow_http_loopback: bool = False
    allow_private_addresses: bool = False
    # Wall-clock limits for HTTPS: one request (with its redirects and body), and a whole read.
    request_deadline: float = 30.0
    refresh_deadline: float = 300.0
    # A local source must resolve inside one of these folders; None: anywhere (the operator
    # configured no roots, so only a superuser could add the source).
    local_roots: tuple[str, ...] | None = None
    # A local record file whose stat is the one its last read kept is not read again
    # (sources.fetchers.raw.FileStat); False: every file is read at every refresh.
    trust_stat: bool = True


def policy_from_settings() -> FetchPolicy:
    from django.conf import settings

    return FetchPolicy(
        timeout=float(settings.SOURCE_HTTP_TIMEOUT),
        request_deadline=float(settings.SOURCE_REQUEST_DEADLINE),
        refresh_deadline=float(settings.SOURCE_REFRESH_DEADLINE),
        local_roots=tuple(settings.SOURCE_LOCAL_ROOTS) or None,
        max_response_bytes=settings.SOURCE_MAX_RESPONSE_BYTES,
        max_manifest_bytes=settings.SOURCE_MAX_MANIFEST_BYTES,
        max_entries=settings.SOURCE_MAX_ENTRIES,
        allow_http_loopback=settings.SOURCE_ALLOW_HTTP_LOOPBACK,
        allow_private_addresses=settings.SOURCE_ALLOW_PRIVATE_ADDRESSES,
        trust_stat=settings.SOURCE_TRUST_STAT,
    )


@dataclass(eq=False)
class SourceError(Exception):
    """The source as a whole could not be read. `health` is what the refresh makes it."""

    code: str
    message: str
    health: str = "stale"  # or "denied" for 401/403

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class LocationError(ValueError):
    """A configured location that is not an absolute directory path or an HTTPS base URL."""


@dataclass(frozen=True)
class Credential:
    kind: str = "none"  # none | bearer | basic
    token: str = ""
    username: str = ""
    password: str = ""

    def header(self) -> str | None:
        if self.kind == "bearer" and self.token:
            return f"Bearer {self.token}"
        if self.kind == "basic" and (self.username or self.password):
            pair = f"{self.username}:{self.password}".encode()
            return "Basic " + base64.b64encode(pair).decode("ascii")
        return None

    def __repr__(self) -> str:  # never show a secret in a traceback or log line
        return f"Credential(kind={self.kind!r})"


@dataclass(frozen=True)
class Validator:
    """What a server told us about a URL, so the next request can be conditional."""

    etag: str = ""
    last_modified: str = ""
    content_hash: str = ""


@dataclass(frozen=True)
class Fetched:
    body: bytes | None  # None when the server answered 304 Not Modified
    validator: Validator = field(default_factory=Validator)


class Fetcher(Protocol):
    kind: str
    identity: str

    def manifest_key(self) -> str: ...
    def record_key(self, path: str) -> str: ...
    def get_manifest(self, validator: Validator | None) -> Fetched: ...
    def get_record(self, path: str, validator: Validator | None) -> Fetched: ...
    def close(self) -> None: ...


# ----------------------------------------------------------------------------- policy


def local_resolve(path: str, roots: Sequence[str]) -> str | None:
    """`path` resolved (symlinks followed, like realpath) when that lies inside one of `roots`
    (themselves resolved), else None. Does not tell whether the path exists."""
    resolved = os.path.realpath(path)
    for root in roots:
        base = os.path.realpath(root)
        if resolved == base or resolved.startswith(base.rstrip("/") + "/"):
            return resolved
    return None
