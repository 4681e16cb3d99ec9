"""A real HTTPS server on loopback with a test CA (trustme), for the HTTPS fetcher tests."""

from __future__ import annotations

import contextlib
import hashlib
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import trustme

Route = tuple[int, dict[str, str], bytes]
ANSWERED = (0, {}, b"")  # a route handler that wrote its own answer returns this


@dataclass
class HttpsServer:
    port: int = 0
    routes: dict[str, Route | Callable[[BaseHTTPRequestHandler], Route]] = field(
        default_factory=dict
    )
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    @property
    def base(self) -> str:
        return f"https://127.0.0.1:{self.port}/src/"

    def serve(self, path: str, body: bytes | str, status: int = 200, **headers: str) -> None:
        data = body.encode() if isinstance(body, str) else body
        self.routes["/src/" + path] = (status, dict(headers), data)

    def count(self, path: str) -> int:
        return sum(1 for p, _ in self.requests if p == "/src/" + path)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def do_GET(self) -> None:
        app: HttpsServer = self.server.app  # type: ignore[attr-defined]
        app.requests.append((self.path, dict(self.headers)))
        route = app.routes.get(self.path)
        if callable(route):
            route = route(self)
        if route is ANSWERED:
            return
        if route is None:
            route = (404, {}, b"not here")
        status, headers, body = route
        etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
        if status == 200 and self.headers.get("If-None-Match") == etag:
            self.send_response(304)
            self.send_header("ETag", etag)
            self.end_headers()
            return
        self.send_response(status)
        if status == 200:
            self.send_header("ETag", etag)
        for name, value in headers.items():
            if name == "no_length":
                continue
            self.send_header(name.replace("_", "-"), value)
        if "no_length" not in headers:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return None


@pytest.fixture(scope="session")
def test_ca() -> trustme.CA:
    return trustme.CA()


@contextlib.contextmanager
def tls_server(ca: trustme.CA, names: tuple[str, ...], ca_path: Path) -> Iterator[HttpsServer]:
    """A threaded http.server behind TLS on 127.0.0.1 with a certificate for `names`."""
    cert = ca.issue_cert(*names)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(context)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    app = HttpsServer(port=httpd.server_address[1])
    httpd.app = app  # type: ignore[attr-defined]
    ca.cert_pem.write_to_path(str(ca_path))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield app
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@pytest.fixture
def https_server(test_ca, tmp_path: Path, monkeypatch) -> Iterator[HttpsServer]:  # type: ignore[no-untyped-def]
    """A TLS server for 127.0.0.1 and localhost, trusted through SSL_CERT_FILE."""
    ca_path = tmp_path / "test-ca.pem"
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_path))
    with tls_server(test_ca, ("127.0.0.1", "localhost"), ca_path) as app:
        yield app


@pytest.fixture
def named_https_server(test_ca, tmp_path: Path, monkeypatch) -> Iterator[HttpsServer]:  # type: ignore[no-untyped-def]
    """A TLS server on 127.0.0.1 whose certificate names only `memories.test` (not the IP)."""
    ca_path = tmp_path / "test-ca-named.pem"
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_path))
    with tls_server(test_ca, ("memories.test",), ca_path) as app:
        yield app


@dataclass
class FakeDns:
    """Answers for names no DNS server here knows: each lookup of a name takes the next
    answer (the last one repeats). Every other host goes to the real resolver."""

    answers: dict[str, list[list[str]]] = field(default_factory=dict)
    lookups: list[str] = field(default_factory=list)

    def add(self, name: str, *answers: list[str]) -> None:
        self.answers[name.lower()] = list(answers)

    def count(self, name: str) -> int:
        return self.lookups.count(name.lower())


@pytest.fixture
def fake_dns(monkeypatch) -> FakeDns:  # type: ignore[no-untyped-def]
    """Replaces `socket.getaddrinfo` (the resolver function only: the sockets are real), for
    both the SSRF check and any lookup the HTTP client would make when it connects."""
    dns = FakeDns()
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):  # type: ignore[no-untyped-def]
        name = host.decode() if isinstance(host, bytes) else str(host)
        queue = dns.answers.get(name.lower())
        if queue is None:
            return real(host, port, *args, **kwargs)
        dns.lookups.append(name.lower())
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        return [info for address in answer for info in real(address, port, *args, **kwargs)]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return dns


def slow(seconds: float, route: Route) -> Callable[[BaseHTTPRequestHandler], Route]:
    def handler(_: BaseHTTPRequestHandler) -> Route:
        time.sleep(seconds)
        return route

    return handler


def drip(
    interval: float, body: bytes, *, headers_too: bool = False
) -> Callable[[BaseHTTPRequestHandler], Route]:
    """A server that answers 200 one byte every `interval` seconds: the body only, or (with
    `headers_too`) the status line and headers as well. Every single read is quick, so only a
    wall-clock deadline stops the client."""

    def handler(request: BaseHTTPRequestHandler) -> Route:
        head = f"HTTP/1.0 200 OK\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            if not headers_too:
                request.wfile.write(head)
                request.wfile.flush()
            for index in range(len(head) if headers_too else 0):
                request.wfile.write(head[index : index + 1])
                request.wfile.flush()
                time.sleep(interval)
            for index in range(len(body)):
                request.wfile.write(body[index : index + 1])
                request.wfile.flush()
                time.sleep(interval)
        return ANSWERED

    return handler
