"""A wall-clock deadline for outbound HTTP (source fetches, webhook deliveries).

httpx's timeouts bound each socket operation, not a request: a server that sends one byte
every few seconds keeps every read inside its timeout and holds the request for as long as it
likes. Here every connect, TLS handshake, read and write of a client's connections gets the
time left until the current deadline as its timeout (CPython bounds a whole TLS handshake by
the socket timeout), and an operation that would start after the deadline fails at once with
`DeadlinePassed`. So a request set a deadline ends by that deadline, however the bytes arrive.

Usage: `client = deadline_client(clock, verify=...)`, then `with clock.until(seconds): ...`
around each request and its body read. One clock per client; clients are single-threaded.
"""

from __future__ import annotations

import math
import ssl
import time
import typing
from collections.abc import Iterator
from contextlib import contextmanager

import httpcore
import httpx


class DeadlinePassed(Exception):
    """The request's wall-clock deadline passed (raised through httpx unchanged)."""


class DeadlineClock:
    """The deadline that a client's sockets currently work to (monotonic time, or none)."""

    def __init__(self) -> None:
        self.ends: float | None = None

    @contextmanager
    def until(self, ends: float) -> Iterator[None]:
        """Work to the monotonic time `ends` inside the block (a later outer one is restored)."""
        previous = self.ends
        self.ends = ends if previous is None else min(ends, previous)
        try:
            yield
        finally:
            self.ends = previous

    def limit(self, timeout: float | None) -> tuple[float | None, bool]:
        """(the timeout to use, whether the deadline is what limits it)."""
        if self.ends is None:
            return timeout, False
        left = self.ends - time.monotonic()
        if left <= 0:
            raise DeadlinePassed("the deadline passed")
        if left < (math.inf if timeout is None else timeout):
            return left, True
        return timeout, False


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream, clock: DeadlineClock) -> None:
        self._inner = inner
        self._clock = clock

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        limited, by_deadline = self._clock.limit(timeout)
        try:
            return self._inner.read(max_bytes, limited)
        except httpcore.TimeoutException as exc:
            if by_deadline:
                raise DeadlinePassed("the deadline passed while reading") from exc
            raise

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        limited, by_deadline = self._clock.limit(timeout)
        try:
            self._inner.write(buffer, limited)
        except httpcore.TimeoutException as exc:
            if by_deadline:
                raise DeadlinePassed("the deadline passed while writing") from exc
            raise

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        limited, by_deadline = self._clock.limit(timeout)
        try:
            inner = self._inner.start_tls(ssl_context, server_hostname, limited)
        except httpcore.TimeoutException as exc:
            if by_deadline:
                raise DeadlinePassed("the deadline passed during the TLS handshake") from exc
            raise
        return _Stream(inner, self._clock)

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self, clock: DeadlineClock) -> None:
        self._inner = httpcore.SyncBackend()
        self._clock = clock

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[typing.Any] | None = None,
    ) -> httpcore.NetworkStream:
        limited, by_deadline = self._clock.limit(timeout)
        try:
            stream = self._inner.connect_tcp(host, port, limited, local_address, socket_options)
        except httpcore.TimeoutException as exc:
            if by_deadline:
                raise DeadlinePassed("the deadline passed while connecting") from exc
            raise
        return _Stream(stream, self._clock)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _Transport(httpx.HTTPTransport):
    def __init__(self, *, verify: ssl.SSLContext, clock: DeadlineClock) -> None:
        super().__init__(verify=verify, trust_env=False)
        # httpx has no option for the network backend: the same pool as its default, with ours.
        self._pool = httpcore.ConnectionPool(
            ssl_context=verify, network_backend=_Backend(clock), max_keepalive_connections=20
        )


def deadline_client(clock: DeadlineClock, *, verify: ssl.SSLContext, **options: typing.Any):  # type: ignore[no-untyped-def]
    """An httpx.Client (no proxies or .netrc from the environment) whose sockets obey `clock`."""
    return httpx.Client(
        transport=_Transport(verify=verify, clock=clock), trust_env=False, **options
    )
