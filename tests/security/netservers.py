"""Servers on 127.0.0.1 that git may (or must not) reach: a TCP listener that counts every
connection, and a real `git http-backend` that can also redirect, or drip its answer."""

from __future__ import annotations

import base64
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer
from pathlib import Path

from tests.reviews.test_http_remote import TOKEN, _handler

BASIC = "Basic " + base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()


class Listener:
    """Accepts on 127.0.0.1 and counts connections; `reply` is what each connection gets
    (b"" for nothing: the connection is closed at once)."""

    def __init__(self, reply: bytes = b"") -> None:
        self.reply = reply
        self.connections = 0
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.2)
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            with conn, contextlib.suppress(OSError):
                if self.reply:
                    conn.sendall(self.reply)
                    conn.settimeout(1.0)
                    with contextlib.suppress(OSError):
                        conn.recv(4096)

    def close(self) -> None:
        self._stop.set()
        self._sock.close()
        self._thread.join(timeout=5)


@contextmanager
def listening(reply: bytes = b"") -> Iterator[Listener]:
    listener = Listener(reply)
    try:
        yield listener
    finally:
        listener.close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class GitHttp:
    """`git http-backend` for the repositories under `root`, behind the test token. `mode`:
    "serve" (normal), "redirect" (301 to `redirect_to` + the path) or "drip" (a status line,
    then one header byte every half second, for `drip_seconds`)."""

    def __init__(self, root: Path) -> None:
        self.mode = "serve"
        self.drip_seconds = 30.0
        self.redirect_to = ""
        self.requests: list[str] = []
        self.client_gave_up = threading.Event()
        self.dripping = threading.Event()
        owner = self
        base = _handler(root, BASIC)

        class Handler(base):  # type: ignore[misc,valid-type]
            def _dispatch(self) -> None:
                owner.requests.append(f"{self.command} {self.path}")
                if owner.mode == "redirect":
                    self.send_response(301)
                    self.send_header("Location", owner.redirect_to + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif owner.mode == "drip":
                    owner._drip(self.wfile)
                else:
                    self._serve()

            do_GET = _dispatch
            do_POST = _dispatch

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_port
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def url(self, name: str = "remote.git") -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def _drip(self, wfile) -> None:  # type: ignore[no-untyped-def]
        self.dripping.set()
        deadline = time.monotonic() + self.drip_seconds
        try:
            wfile.write(b"HTTP/1.1 200 OK\r\n")
            wfile.flush()
            while time.monotonic() < deadline:
                wfile.write(b"X")
                wfile.flush()
                time.sleep(0.5)
        except OSError:
            self.client_gave_up.set()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
