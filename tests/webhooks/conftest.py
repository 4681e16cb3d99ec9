"""A real HTTP(S) receiver on 127.0.0.1, in a thread, that records what it is sent."""

from __future__ import annotations

import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import trustme

from memoryadmin.audit import Actor
from tests.reviews.conftest import data_dir, remote  # noqa: F401 - git remotes for app events
from tests.sources.conftest import https_server, test_ca  # noqa: F401 - a TLS source server
from webhooks.services.endpoints import endpoint_create


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Reply:
    status: int = 200
    delay: float = 0.0
    body: bytes = b"ok"
    headers: dict[str, str] = field(default_factory=dict)


class Receiver:
    """Replies from `plan` in order (then 200), records every request it gets."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.requests: list[Received] = []
        self.plan: list[Reply] = []
        self.release = threading.Event()
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver._lock:
                    receiver.requests.append(Received(self.path, dict(self.headers), body))
                    reply = receiver.plan.pop(0) if receiver.plan else Reply()
                if reply.delay:
                    receiver.release.wait(reply.delay)
                try:
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except OSError:
                    return  # the client gave up (timeout test)

            def log_message(self, format: str, *args: Any) -> None:
                return None  # keep test output quiet

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that hung up mid-request is part of the tests

        self.server = Server(("127.0.0.1", 0), Handler)
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.scheme = "https" if tls is not None else "http"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def url(self, path: str = "/hook", host: str = "127.0.0.1") -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def tls_receiver(tmp_path, monkeypatch) -> Iterator[Receiver]:  # type: ignore[no-untyped-def]
    """HTTPS on 127.0.0.1 with a certificate for `localhost` from a throwaway CA we trust."""
    ca = trustme.CA()
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost").configure_cert(server_ctx)
    ca_path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_path))
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_path))
    r = Receiver(tls=server_ctx)
    yield r
    r.close()


@pytest.fixture
def loopback_http(settings):  # type: ignore[no-untyped-def]
    """Tests deliver to a plain-HTTP receiver on 127.0.0.1."""
    settings.SOURCE_ALLOW_HTTP_LOOPBACK = True
    settings.SOURCE_ALLOW_PRIVATE_ADDRESSES = True
    return settings


@pytest.fixture
def make_endpoint(team, admin_user, loopback_http):  # type: ignore[no-untyped-def]
    """make_endpoint(url, events=[]) -> (endpoint, secret)."""

    def make(url: str, events: list[str] | None = None, **kwargs: Any):  # type: ignore[no-untyped-def]
        return endpoint_create(
            actor=Actor(user=admin_user),
            team=kwargs.pop("team", team),
            url=url,
            events=events or [],
            description=kwargs.pop("description", ""),
        )

    return make
