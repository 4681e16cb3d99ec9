"""Fetch a source's manifest and records from a local directory or an HTTPS base URL, and read
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
import ipaddress
import os
import ssl
import stat
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

import httpx

from formats import openmemories as om
from webhooks import netguard
from webhooks.deadline import DeadlineClock, DeadlinePassed, deadline_client

MANIFEST_NAME = "memories.json"
MAX_REDIRECTS = 5
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})
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


# ----------------------------------------------------------------------------- locations


def normalize_location(location: str) -> tuple[str, str]:
    """(kind, identity) for what an administrator typed: a directory path or an HTTPS URL."""
    location = location.strip()
    if not location:
        raise LocationError("Enter a directory path or an HTTPS URL.")
    if "://" in location:
        parts = urlsplit(location)
        scheme = parts.scheme.lower()
        if scheme not in ("https", "http"):
            raise LocationError("Only https:// URLs (or an absolute directory path) are accepted.")
        if parts.username is not None or parts.password is not None:
            raise LocationError(
                "Do not put credentials in the URL; use the credential fields instead."
            )
        if parts.query or parts.fragment:
            raise LocationError("The base URL must not have a query or fragment.")
        if not parts.hostname:
            raise LocationError("The URL has no host.")
        path = parts.path or "/"
        if not path.endswith("/"):
            path += "/"
        host = parts.netloc.lower()
        return "https", f"{scheme}://{host}{path}"
    if not os.path.isabs(location):
        raise LocationError("A local source must be an absolute directory path.")
    return "local", os.path.normpath(location)


def local_resolve(path: str, roots: Sequence[str]) -> str | None:
    """`path` resolved (symlinks followed, like realpath) when that lies inside one of `roots`
    (themselves resolved), else None. Does not tell whether the path exists."""
    resolved = os.path.realpath(path)
    for root in roots:
        base = os.path.realpath(root)
        if resolved == base or resolved.startswith(base.rstrip("/") + "/"):
            return resolved
    return None


def make_fetcher(
    kind: str, identity: str, *, policy: FetchPolicy, credential: Credential | None = None
) -> Fetcher:
    if kind == "local":
        return LocalFetcher(identity, policy=policy)
    return HttpsFetcher(identity, policy=policy, credential=credential or Credential())


# ----------------------------------------------------------------------------- local


class LocalFetcher:
    kind = "local"

    def __init__(self, identity: str, *, policy: FetchPolicy) -> None:
        self.identity = identity
        self.policy = policy
        self._root: Path | None = None
        # relative folder -> its resolved path inside the root, as a string (pathlib's joins
        # cost more than the lstat they lead to, 10,000 times per unchanged refresh)
        self._folders: dict[str, str] = {}

    def root(self) -> Path:
        if self._root is None:
            path = Path(self.identity)
            if not path.is_absolute():
                raise SourceError("bad-location", "a local source must be an absolute path")
            roots = self.policy.local_roots
            # Checked before anything about the path is said, at every read: a symlink on the
            # way may have been changed to point elsewhere since the source was added.
            if roots is not None and local_resolve(self.identity, roots) is None:
                raise SourceError("outside-roots", OUTSIDE_ROOTS)
            try:
                resolved = path.resolve(strict=True)
            except (FileNotFoundError, RuntimeError, OSError) as exc:
                raise SourceError(
                    "not-found", f"the directory {self.identity} does not exist"
                ) from exc
            if not resolved.is_dir():
                raise SourceError("not-found", f"{self.identity} is not a directory")
            self._root = resolved
        return self._root

    def manifest_key(self) -> str:
        return MANIFEST_NAME

    def record_key(self, path: str) -> str:
        return path

    def _inside(self, relative: str) -> str:
        """Resolve each segment in turn so a symlinked directory or file cannot leave the root.

        Folders checked once are remembered for this read (10,000 records share a few), and a
        plain file in a checked folder needs one lstat, not a resolve of the whole path."""
        folder, _, name = relative.rpartition("/")
        if name not in ("", ".", ".."):
            parent = self._folders.get(folder) if folder else str(self.root())
            if parent is not None:
                target = f"{parent}/{name}"
                try:
                    mode = os.lstat(target).st_mode
                except (OSError, ValueError):
                    mode = 0
                if stat.S_ISREG(mode):
                    return target
        return str(self._resolve(relative))

    def _resolve(self, relative: str) -> Path:
        root = self.root()
        current = root
        segments = relative.split("/")
        folders: list[tuple[str, str]] = []
        for index, segment in enumerate(segments):
            if index:
                folders.append(("/".join(segments[:index]), str(current)))
            current = current / segment
            try:
                resolved = current.resolve(strict=True)
            except FileNotFoundError as exc:
                raise om.Rejection(
                    "not-found", f"{relative} does not exist", path=relative
                ) from exc
            except (RuntimeError, OSError) as exc:  # symlink loops and the like
                raise om.Rejection(
                    "not-found", f"{relative} cannot be opened", path=relative
                ) from exc
            if not resolved.is_relative_to(root):
                raise om.Rejection(
                    "outside-source",
                    f"{relative} resolves outside the source directory (through a symlink)",
                    path=relative,
                )
            current = resolved
        if not current.is_file():
            raise om.Rejection("not-found", f"{relative} is not a regular file", path=relative)
        self._folders.update(folders)  # each resolved, inside the root, and a folder
        return current

    def _read(self, target: str, limit: int, relative: str) -> bytes:
        # The last segment was checked to be a regular file: open it only if it still is one
        # (not a symlink swapped in since, not a FIFO that would block the worker).
        try:
            descriptor = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as exc:
            raise om.Rejection("not-found", f"{relative} cannot be opened", path=relative) from exc
        with os.fdopen(descriptor, "rb") as handle:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                raise om.Rejection("not-found", f"{relative} is not a regular file", path=relative)
            data = handle.read(limit + 1)
        if len(data) > limit:
            raise om.Rejection("too-large", f"{relative} is over {limit} bytes", path=relative)
        return data

    def get_manifest(self, validator: Validator | None) -> Fetched:
        try:
            target = self._inside(MANIFEST_NAME)
            data = self._read(target, self.policy.max_manifest_bytes, MANIFEST_NAME)
        except om.Rejection as exc:
            raise SourceError(exc.code, f"the manifest: {exc.message}") from exc
        return Fetched(data, Validator(content_hash=om.content_hash(data)))

    def get_record(self, path: str, validator: Validator | None) -> Fetched:
        data = self._read(self._inside(path), self.policy.max_response_bytes, path)
        return Fetched(data, Validator(content_hash=om.content_hash(data)))

    def close(self) -> None:
        return None


# ----------------------------------------------------------------------------- https


def ssl_context() -> ssl.SSLContext:
    """The system trust store; SSL_CERT_FILE (a private CA bundle) is honoured explicitly."""
    context = ssl.create_default_context()
    cafile = os.environ.get("SSL_CERT_FILE")
    if cafile:
        context.load_verify_locations(cafile=cafile)
    return context


def _is_loopback_host(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class _ResourceFailure(Exception):
    """One URL failed in a way that concerns only that resource (404, too large, ...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class HttpsFetcher:
    kind = "https"

    def __init__(
        self, identity: str, *, policy: FetchPolicy, credential: Credential | None = None
    ) -> None:
        self.identity = identity
        self.policy = policy
        self.base = httpx.URL(identity)
        self._authorization = (credential or Credential()).header()
        self._resolved: dict[tuple[str, int], list[str]] = {}
        # httpx's timeout bounds each socket operation; the clock bounds each request as a whole
        # (SOURCE_REQUEST_DEADLINE) and this read of the source (SOURCE_REFRESH_DEADLINE).
        self._clock = DeadlineClock()
        self._read_ends = time.monotonic() + policy.refresh_deadline
        self._client = deadline_client(
            self._clock,
            verify=ssl_context(),
            timeout=httpx.Timeout(policy.timeout),
            follow_redirects=False,
            # no proxies or .netrc credentials picked up from the environment (trust_env=False)
            headers={"User-Agent": "memoryadmin-openmemories/0.1", "Accept-Encoding": "identity"},
        )

    def manifest_key(self) -> str:
        return str(self.base.join(MANIFEST_NAME))

    def record_key(self, path: str) -> str:
        return str(self.base.join(path))

    def close(self) -> None:
        self._client.close()

    def _same_origin(self, url: httpx.URL) -> bool:
        return (url.scheme, url.host, url.port) == (
            self.base.scheme,
            self.base.host,
            self.base.port,
        )

    def _addresses(self, url: httpx.URL) -> list[str]:
        """The checked addresses to connect to for `url`'s host: resolved once per fetcher (one
        read of the source), so every request and redirect hop goes where the check passed."""
        loopback_http = False
        if url.scheme == "http":
            if not (self.policy.allow_http_loopback and _is_loopback_host(url.host)):
                raise SourceError("insecure-url", "plain http is refused; use https")
            loopback_http = True
        elif url.scheme != "https":
            raise SourceError("insecure-url", f"the scheme {url.scheme!r} is not allowed")
        host = url.raw_host.decode("ascii")
        port = url.port or (443 if url.scheme == "https" else 80)
        key = (host, port)
        if key not in self._resolved:
            try:
                self._resolved[key] = netguard.addresses_resolve(
                    host,
                    port,
                    allow_private=self.policy.allow_private_addresses or loopback_http,
                )
            except netguard.UrlRefused as exc:
                code = "private-address" if exc.code == "address-not-public" else "unreachable"
                raise SourceError(code, exc.message) from exc
        return self._resolved[key]

    @contextmanager
    def _open(self, url: httpx.URL, headers: dict[str, str]) -> Iterator[httpx.Response]:
        """A streamed GET of `url` sent to one of its checked addresses, in resolver order (the
        next one only when connecting fails), with Host and TLS SNI set to the name so the
        certificate is still verified for the name."""
        addresses = self._addresses(url)
        headers = {**headers, "Host": url.netloc.decode("ascii")}
        extensions = {"sni_hostname": url.raw_host.decode("ascii")} if url.scheme == "https" else {}
        for index, address in enumerate(addresses):
            request = self._client.build_request(
                "GET", url.copy_with(host=address), headers=headers, extensions=extensions
            )
            try:
                response = self._client.send(request, stream=True)
            except (httpx.ConnectError, httpx.ConnectTimeout):
                if index + 1 < len(addresses):
                    continue
                raise
            if index:  # the address that answered goes first for the rest of this read
                addresses.insert(0, addresses.pop(index))
            try:
                yield response
            finally:
                response.close()
            return

    def _get(self, url: httpx.URL, validator: Validator | None, limit: int) -> Fetched:
        """One GET with its redirects and body, within the request deadline and what is left of
        the read's budget; passing either fails the whole read (the source goes stale)."""
        request_ends = time.monotonic() + self.policy.request_deadline
        whole_read = self._read_ends <= request_ends
        try:
            if self._read_ends <= time.monotonic():
                raise DeadlinePassed("no time left")
            with self._clock.until(min(request_ends, self._read_ends)):
                return self._get_within(url, validator, limit)
        except DeadlinePassed as exc:
            if whole_read:
                raise SourceError(
                    "refresh-deadline",
                    f"reading the source took longer than {self.policy.refresh_deadline:g} s "
                    f"(MEMORYADMIN_SOURCE_REFRESH_DEADLINE); stopped at {url}",
                ) from exc
            raise SourceError(
                "deadline",
                f"{url} did not answer in full within {self.policy.request_deadline:g} s "
                "(MEMORYADMIN_SOURCE_REQUEST_DEADLINE)",
            ) from exc

    def _get_within(self, url: httpx.URL, validator: Validator | None, limit: int) -> Fetched:
        headers: dict[str, str] = {}
        if self._authorization:
            headers["Authorization"] = self._authorization
        if validator is not None:
            if validator.etag:
                headers["If-None-Match"] = validator.etag
            if validator.last_modified:
                headers["If-Modified-Since"] = validator.last_modified
        for _hop in range(MAX_REDIRECTS + 1):
            try:
                with self._open(url, headers) as response:
                    status = response.status_code
                    if status in REDIRECT_STATUSES:
                        location = response.headers.get("location", "")
                        target = url.join(location)
                        if target.scheme == "http" and url.scheme == "https":
                            raise _ResourceFailure(
                                "redirect-refused", f"{url} redirects to plain http; refused"
                            )
                        if not self._same_origin(target):
                            raise _ResourceFailure(
                                "redirect-refused",
                                f"{url} redirects to another origin ({target.host}); refused",
                            )
                        url = target
                        continue
                    if status == 304 and validator is not None:
                        return Fetched(None, validator)
                    if status in (401, 403):
                        raise SourceError(
                            "denied",
                            f"the server answered {status} for {url}; access denied",
                            health="denied",
                        )
                    if status >= 500:
                        raise SourceError("http-error", f"the server answered {status} for {url}")
                    if status == 404 or status == 410:
                        raise _ResourceFailure("not-found", f"{url} answered {status}")
                    if status != 200:
                        raise _ResourceFailure("http-error", f"{url} answered {status}")
                    body = self._read_limited(response, limit, url)
                    return Fetched(
                        body,
                        Validator(
                            etag=response.headers.get("etag", ""),
                            last_modified=response.headers.get("last-modified", ""),
                            content_hash=om.content_hash(body),
                        ),
                    )
            except httpx.TimeoutException as exc:
                raise SourceError("timeout", f"{url} timed out") from exc
            except httpx.TransportError as exc:
                raise SourceError(
                    "unreachable", f"cannot reach {url.host}: {type(exc).__name__}: {exc}"
                ) from exc
        raise _ResourceFailure("redirect-refused", f"{url}: more than {MAX_REDIRECTS} redirects")

    @staticmethod
    def _read_limited(response: httpx.Response, limit: int, url: httpx.URL) -> bytes:
        declared = response.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > limit:
            raise _ResourceFailure("too-large", f"{url} is {declared} bytes, over {limit}")
        chunks: list[bytes] = []
        total = 0
        for chunk in response.iter_bytes():
            total += len(chunk)
            if total > limit:  # stop reading as soon as the limit is passed
                raise _ResourceFailure("too-large", f"{url} is over {limit} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    def get_manifest(self, validator: Validator | None) -> Fetched:
        try:
            return self._get(
                self.base.join(MANIFEST_NAME), validator, self.policy.max_manifest_bytes
            )
        except _ResourceFailure as exc:
            raise SourceError(exc.code, f"the manifest: {exc.message}") from exc

    def get_record(self, path: str, validator: Validator | None) -> Fetched:
        url = self.base.join(path)
        if not str(url).startswith(str(self.base)):
            raise om.Rejection("outside-source", f"{path} resolves outside the base URL", path=path)
        try:
            return self._get(url, validator, self.policy.max_response_bytes)
        except _ResourceFailure as exc:
            raise om.Rejection(exc.code, exc.message, path=path) from exc


# ----------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class ReadRecord:
    entry: om.Entry
    record: om.Record
    reused: bool  # unchanged since the last snapshot, so it was not parsed again


@dataclass
class ReadResult:
    """Everything one read of a source produced; nothing has been stored yet."""

    identity: str
    manifest: om.Manifest
    manifest_body: bytes
    records: list[ReadRecord]
    rejections: list[om.Rejection]
    selection: om.Selection
    validators: dict[str, Validator]
    parsed: int = 0
    reused: int = 0

    def fingerprint(self) -> str:
        """Equal fingerprints mean an identical snapshot (same manifest and record bytes)."""
        parts = [om.content_hash(self.manifest_body)]
        parts += [f"{r.entry.id}\0{r.entry.path}\0{r.record.content_hash}" for r in self.records]
        parts += [f"{r.code}\0{r.path}\0{r.id}\0{r.message}" for r in self.rejections]
        return om.content_hash("\n".join(parts).encode("utf-8"))


def read_source(
    fetcher: Fetcher,
    *,
    now: datetime,
    previous_records: Mapping[str, om.Record] | None = None,
    previous_manifest: bytes | None = None,
    validators: Mapping[str, Validator] | None = None,
) -> ReadResult:
    """Read and validate a whole source. `previous_records` (path -> record of the last
    snapshot) lets unchanged files skip parsing; `validators` make HTTPS requests conditional.
    Raises SourceError when the source as a whole fails."""
    previous_records = previous_records or {}
    validators = dict(validators or {})
    new_validators: dict[str, Validator] = {}
    manifest_key = fetcher.manifest_key()
    known = validators.get(manifest_key) if previous_manifest is not None else None
    fetched = fetcher.get_manifest(known)
    manifest_body = fetched.body if fetched.body is not None else (previous_manifest or b"")
    new_validators[manifest_key] = fetched.validator
    try:
        manifest = om.parse_manifest(
            manifest_body,
            max_bytes=fetcher.policy.max_manifest_bytes,  # type: ignore[attr-defined]
            max_entries=fetcher.policy.max_entries,  # type: ignore[attr-defined]
        )
    except om.ManifestError as exc:
        raise SourceError(exc.code, f"invalid manifest: {exc.message}") from exc
    records: list[ReadRecord] = []
    rejections: list[om.Rejection] = list(manifest.rejected)
    parsed = reused = 0
    for entry in manifest.entries:
        key = fetcher.record_key(entry.path)
        before = previous_records.get(entry.path)
        old = validators.get(key)
        conditional = (
            old if before is not None and old and old.content_hash == before.content_hash else None
        )
        try:
            got = fetcher.get_record(entry.path, conditional)
            if got.body is None and before is not None:
                new_validators[key] = got.validator
                if before.id == entry.id:
                    records.append(ReadRecord(entry, before, reused=True))
                    reused += 1
                    continue
                got = fetcher.get_record(entry.path, None)
            new_validators[key] = got.validator
            body = got.body or b""
            digest = om.content_hash(body)
            if before is not None and before.content_hash == digest and before.id == entry.id:
                records.append(ReadRecord(entry, before, reused=True))
                reused += 1
                continue
            parsed += 1
            record = om.parse_record(
                body,
                expected_id=entry.id,
                path=entry.path,
                max_bytes=fetcher.policy.max_response_bytes,  # type: ignore[attr-defined]
            )
            records.append(ReadRecord(entry, record, reused=False))
        except om.Rejection as exc:
            rejections.append(
                om.Rejection(exc.code, exc.message, exc.line, entry.path, exc.id or entry.id)
            )
    selection = om.select((item.record for item in records), now=now)
    return ReadResult(
        identity=fetcher.identity,
        manifest=manifest,
        manifest_body=manifest_body,
        records=records,
        rejections=rejections,
        selection=selection,
        validators=new_validators,
        parsed=parsed,
        reused=reused,
    )
