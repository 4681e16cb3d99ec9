"""Hostile inputs, generated at test time (nothing large is committed)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# ----------------------------------------------------------------------------- YAML front matter


def yaml_bomb(levels: int = 9) -> str:
    """Billion laughs: each anchor repeats the previous one ten times."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        refs = ",".join([f"*a{i - 1}"] * 10)
        lines.append(f"a{i}: &a{i} [{refs}]")
    return "\n".join(lines) + "\n"


def deep_yaml(depth: int = 5000) -> str:
    return "deep: " + "[" * depth + "]" * depth + "\n"


def deep_block_yaml(depth: int = 300) -> str:
    return "".join("  " * i + f"k{i}:\n" for i in range(depth)) + "  " * depth + "v: 1\n"


def front_matter(fields: str, body: str = "Body.\n") -> str:
    return f"---\n{fields}---\n\n{body}"


# Hostile YAML fields (appended to an otherwise valid front matter), with the code they earn.
YAML_CASES: dict[str, tuple[str, str]] = {
    "billion-laughs": (yaml_bomb(), "yaml-alias"),
    "deep-flow": (deep_yaml(), "yaml-too-deep"),
    "deep-block": (deep_block_yaml(), "yaml-too-deep"),
    "python-tag": ("x-evil: !!python/object/apply:os.system ['true']\n", "yaml-tag"),
    "merge-key": ("base: &b {x: 1}\nx-m:\n  <<: *b\n", "yaml-alias"),
    "duplicate-key": ("title: 'again'\n", "yaml-duplicate-key"),
    "nan-float": ("x-f: .nan\nx-g: .inf\n", ""),  # accepted as plain extension values
}

# ----------------------------------------------------------------------------- paths

BAD_PATHS = [
    "../outside.md",
    "records/../../outside.md",
    "%2e%2e/outside.md",
    "records%2f..%2foutside.md",
    "/etc/passwd.md",
    "//evil.example/x.md",
    "C:/windows/x.md",
    "records\\..\\x.md",
    "file:///etc/passwd.md",
    "records/./x.md",
    "records//x.md",
    "records/x.md?x=1",
    "records/x.md#frag",
    "records/\x00x.md",
    "records/x\n.md",
    "records/x.txt",
    "",
]
# Unicode look-alikes are ordinary names on disk: they must not reach outside the root either.
LOOKALIKE_PATHS = [
    "\u2025/outside.md",  # two dot leader
    "\uff0e\uff0e/outside.md",  # fullwidth full stops
    "records\u2215..\u2215outside.md",  # division slash
    "records\uff0f..\uff0foutside.md",  # fullwidth solidus
]

# ----------------------------------------------------------------------------- JSON


def deep_json(depth: int = 100_000) -> bytes:
    return b"[" * depth + b"]" * depth


def deep_json_object(depth: int = 100_000) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


# ----------------------------------------------------------------------------- big bodies


class ZeroStream:
    """A file-like body of `size` bytes made on the fly; counts what the reader took."""

    def __init__(self, size: int, prefix: bytes = b"", fill: bytes = b"a") -> None:
        self.size = size
        self.prefix = prefix
        self.fill = fill
        self.taken = 0

    def read(self, n: int = -1) -> bytes:
        left = self.size - self.taken
        if left <= 0:
            return b""
        n = left if n is None or n < 0 else min(n, left)
        n = min(n, 1 << 20)
        head = b""
        if self.taken < len(self.prefix):
            head = self.prefix[self.taken : self.taken + n]
        piece = head + self.fill * (n - len(head))
        self.taken += n
        return piece

    def readline(self, limit: int = -1) -> bytes:
        return self.read(limit if limit and limit > 0 else 65536)


class StreamingHttpServer:
    """Plain HTTP on 127.0.0.1 that answers GET paths with generated bodies of any size."""

    def __init__(self) -> None:
        self.bodies: dict[str, tuple[int, bytes]] = {}  # path -> (size, prefix)
        self.sent: dict[str, int] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_GET(self) -> None:
                size, prefix = server.bodies.get(self.path, (0, b""))
                if not size:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.end_headers()  # no Content-Length: the client must count
                stream = ZeroStream(size, prefix, fill=b" ")
                with contextlib.suppress(OSError):
                    while piece := stream.read(65536):
                        self.wfile.write(piece)
                        server.sent[self.path] = stream.taken

            def log_message(self, *args: object) -> None:
                return None

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/src/"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@contextlib.contextmanager
def streaming_http_server() -> Iterator[StreamingHttpServer]:
    server = StreamingHttpServer()
    try:
        yield server
    finally:
        server.close()


def closed_port() -> int:
    """A loopback port with nothing listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
