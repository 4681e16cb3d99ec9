"""Authenticated fetch and push over HTTP to a real `git http-backend` on loopback."""

from __future__ import annotations

import base64
import os
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.db import transaction

from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent
from reviews.models import PushState
from reviews.services.decisions import proposal_approve
from reviews.services.repositories import repository_create, repository_sync
from tests.reviews.conftest import make_remote
from tests.reviews.test_workflow import ATTEMPT, proposal

TOKEN = "s3cr3t-token-value-1234"


def _handler(root: Path, expected: str) -> type[BaseHTTPRequestHandler]:
    class GitHandler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            return None  # keep test output quiet

        def _serve(self) -> None:
            if self.headers.get("Authorization") != expected:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="git"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            path, _, query = self.path.partition("?")
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            env = {
                "PATH": os.environ["PATH"],
                "GIT_PROJECT_ROOT": str(root),
                "GIT_HTTP_EXPORT_ALL": "1",
                "REMOTE_USER": "tester",
                "REQUEST_METHOD": self.command,
                "PATH_INFO": path,
                "QUERY_STRING": query,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
            }
            result = subprocess.run(
                ["git", "http-backend"], input=body, env=env, capture_output=True, check=False
            )
            head, _, payload = result.stdout.partition(b"\r\n\r\n")
            status = 200
            headers = []
            for line in head.decode("latin-1").split("\r\n"):
                name, _, value = line.partition(":")
                if name.lower() == "status":
                    status = int(value.strip().split()[0])
                elif name:
                    headers.append((name, value.strip()))
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = _serve
        do_POST = _serve

    return GitHandler


@pytest.fixture
def http_remote(tmp_path) -> Iterator[tuple[str, object]]:
    remote = make_remote(tmp_path / "git")
    basic = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(remote.bare.parent, f"Basic {basic}"))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/remote.git", remote
    finally:
        server.shutdown()
        server.server_close()


def _create(team, url: str, secret: str, branch: str = "main"):  # type: ignore[no-untyped-def]
    with transaction.atomic():
        return repository_create(
            actor=Actor.system(),
            team=team,
            name="http",
            remote_url=url,
            branch=branch,
            credential_kind="https-token",
            credential_secret=secret,
        )


def test_it_keeps_a_wrong_token_out_of_stored_errors(team, data_dir, http_remote):
    url, _ = http_remote
    repository = _create(team, url, "wrong-token-zzzz")
    repository = repository_sync(repository_id=repository.pk)
    assert repository.last_sync_ok is False
    assert "fetch failed" in repository.last_error
    for text in (repository.last_error, str(AuditEvent.objects.values_list("data", flat=True))):
        assert "wrong-token-zzzz" not in text
        assert base64.b64encode(b"x-access-token:wrong-token-zzzz").decode() not in text
    # A failed first clone leaves no config; no file that is there holds the credential.
    for path in repository.working_dir.rglob("*"):
        if path.is_file():
            text = path.read_bytes().lower()
            assert b"wrong-token" not in text and b"extraheader" not in text, path


def test_a_first_sync_of_a_missing_branch_says_so(team, data_dir, http_remote):
    """The first sync is a clone: its words for a missing branch tell the same as a fetch's."""
    url, _ = http_remote
    repository = repository_sync(repository_id=_create(team, url, TOKEN, branch="nope").pk)
    assert repository.last_error == "git fetch failed: the branch does not exist at the remote"


def test_it_fetches_and_pushes_with_the_token(
    team, reviewer_user, data_dir, http_remote, django_capture_on_commit_callbacks
):
    url, remote = http_remote
    repository = _create(team, url, TOKEN)
    repository = repository_sync(repository_id=repository.pk)
    assert repository.last_sync_ok is True, repository.last_error
    memory = proposal(repository, ATTEMPT)
    with django_capture_on_commit_callbacks(execute=True):
        decision = proposal_approve(actor=Actor(user=reviewer_user), memory=memory)
    decision.refresh_from_db()
    assert decision.state == PushState.PUSHED, decision.state_detail
    assert remote.log("%an|%s")[0].startswith(f"Rita|Approve {memory.ref}")
    assert TOKEN not in (repository.working_dir / ".git" / "config").read_text()
