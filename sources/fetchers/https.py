"""The HTTPS transport: conditional GETs to the checked addresses of the base URL's host, with
redirect, size and wall-clock limits."""

from __future__ import annotations

import ipaddress
import os
import ssl
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from formats import openmemories as om
from sources.fetchers import MANIFEST_NAME, Credential, Fetched, FetchPolicy, SourceError, Validator
from webhooks import netguard
from webhooks.deadline import DeadlineClock, DeadlinePassed, deadline_client

MAX_REDIRECTS = 5
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})


def ssl_context() -> ssl.SSLContext:
    """The system trust store; SSL_CERT_FILE (a private CA bundle) is honoured explicitly."""
    context = ssl.create_default_context()
    cafile = os.environ.get("SSL_CERT_FILE")
    if cafile:
        context.load_verify_locations(cafile=cafile)
    return context


TLS_HINT = (
    "the TLS certificate of {host} could not be verified ({reason}). If the server uses a "
    "private certificate authority, set SSL_CERT_FILE to its CA bundle on the web and worker "
    "processes."
)


def _tls_verify_reason(exc: BaseException) -> str | None:
    """The verification failure behind a failed connect, or None for any other failure."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return seen.verify_message or "certificate verify failed"
        seen = seen.__cause__ or seen.__context__
    if "CERTIFICATE_VERIFY_FAILED" in str(exc):
        return "certificate verify failed"
    return None


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
            except httpx.ConnectError as exc:
                reason = _tls_verify_reason(exc)
                if reason is None:
                    raise SourceError(
                        "unreachable", f"cannot reach {url.host}: {type(exc).__name__}: {exc}"
                    ) from exc
                raise SourceError(
                    "tls-verify-failed", TLS_HINT.format(host=url.host, reason=reason)
                ) from exc
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
