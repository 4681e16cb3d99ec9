"""Uploads to /v1/brain/import/file: who may upload is settled before any byte reaches disk,
every failure deletes its scratch file, and the sweeper removes what a dead process left."""

from __future__ import annotations

import io
import os
import time
from datetime import timedelta
from pathlib import Path

import orjson
import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from bundles.imports import import_jobs_sweep
from bundles.models import Chunk, ImportJob
from bundles.uploads import scratch_dir
from memoryadmin.models import AuditEvent, Scope
from tests.bundles.helpers import chunk, make_bundle

FILE = "/v1/brain/import/file"
CSRF_SECRET = "k" * 32


@pytest.fixture(autouse=True)
def scratch(settings, tmp_path) -> Path:
    settings.DATA_DIR = tmp_path
    return scratch_dir()


def _upload(content: bytes | None = None, name: str = "bundle.json") -> io.BytesIO:
    upload = io.BytesIO(content or orjson.dumps(make_bundle(chunks=[chunk(1, "uploaded")])))
    upload.name = name
    return upload


def _left(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


def _session(user, *, header: str | None) -> APIClient:  # type: ignore[no-untyped-def]
    """A signed-in browser: the CSRF cookie a page set, and `header` as its X-CSRFToken."""
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(user)
    client.cookies["csrftoken"] = CSRF_SECRET
    if header is not None:
        client.credentials(HTTP_X_CSRFTOKEN=header)
    return client


@pytest.mark.parametrize(
    ("header", "in_body"),
    [(None, False), ("w" * 32, False), (None, True)],
    ids=["no-token", "wrong-token", "token-only-in-the-body"],
)
def test_it_writes_nothing_to_disk_for_a_session_upload_without_its_csrf_header(
    admin_user, team, scratch, header, in_body
):
    """The token is checked before the body is read, so it must come in the header."""
    client = _session(admin_user, header=header)
    form = {"file": _upload(), **({"csrfmiddlewaretoken": CSRF_SECRET} if in_body else {})}
    response = client.post(f"{FILE}?team={team.slug}", form, format="multipart")
    assert response.status_code == 403, response.content
    assert "CSRF" in response.json()["error"]["message"]
    assert _left(scratch) == []
    assert not Chunk.objects.filter(team=team).exists()


def test_it_writes_nothing_to_disk_for_a_signed_in_user_without_a_team(make_user, team, scratch):
    loner = make_user("lonely")
    client = _session(loner, header=CSRF_SECRET)
    response = client.post(FILE, {"file": _upload()}, format="multipart")
    assert response.status_code == 400, response.content
    assert _left(scratch) == []


def test_it_imports_a_session_upload_whose_csrf_token_is_in_the_header(admin_user, team, scratch):
    client = _session(admin_user, header=CSRF_SECRET)
    response = client.post(f"{FILE}?team={team.slug}", {"file": _upload()}, format="multipart")
    assert response.status_code == 200, response.content
    assert Chunk.objects.filter(team=team, content="uploaded").exists()
    assert _left(scratch) == []


@pytest.mark.parametrize(
    "credentials",
    [None, "Bearer not-a-token", "Bearer"],
    ids=["none", "unknown-token", "malformed"],
)
def test_it_writes_nothing_to_disk_without_a_valid_token(team, scratch, credentials):
    client = APIClient()
    if credentials:
        client.credentials(HTTP_AUTHORIZATION=credentials)
    response = client.post(FILE, {"file": _upload()}, format="multipart")
    assert response.status_code in (401, 403), response.content
    assert _left(scratch) == []


def test_it_writes_nothing_to_disk_for_a_token_without_the_import_scope(
    team, token_client, scratch
):
    client = token_client(team, [Scope.BUNDLES_EXPORT])
    response = client.post(FILE, {"file": _upload()}, format="multipart")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "insufficient-scope"
    assert _left(scratch) == []


@pytest.mark.parametrize(
    "body",
    ["not json", '{"format": "memoryai-bundle", "version": 9, "manifest": {}}'],
    ids=["malformed-json", "version-unsupported"],
)
def test_it_deletes_the_scratch_file_of_a_refused_bundle_and_audits_it(
    team, token_client, scratch, body
):
    client = token_client(team, [Scope.BUNDLES_IMPORT])
    response = client.post(FILE, {"file": _upload(body.encode())}, format="multipart")
    assert 400 <= response.status_code < 500
    assert _left(scratch) == []
    failed = AuditEvent.objects.get(team=team, action="bundle.import_failed")
    assert failed.data["code"] == response.json()["error"]["code"]


def test_it_refuses_two_file_parts_and_deletes_both(team, token_client, scratch):
    client = token_client(team, [Scope.BUNDLES_IMPORT])
    response = client.post(
        FILE, {"file": [_upload(name="a.json"), _upload(name="b.json")]}, format="multipart"
    )
    assert response.status_code == 400, response.content
    assert "exactly one part" in response.json()["error"]["message"]
    assert _left(scratch) == []
    assert not Chunk.objects.filter(team=team).exists()
    assert AuditEvent.objects.filter(team=team, action="bundle.import_failed").exists()


def test_it_deletes_the_scratch_file_of_a_truncated_multipart_body(team, token_client, scratch):
    client = token_client(team, [Scope.BUNDLES_IMPORT])
    body = (
        b'--xx\r\nContent-Disposition: form-data; name="file"; filename="b.json"\r\n'
        b"Content-Type: application/json\r\n\r\n" + b"{" * 100_000
    )
    response = client.generic("POST", FILE, body, content_type="multipart/form-data; boundary=xx")
    assert response.status_code < 500
    assert _left(scratch) == []


def test_it_sweeps_orphan_scratch_files_older_than_the_lease(team, scratch, settings):
    settings.BUNDLE_IMPORT_LEASE_SECONDS = 600
    old = time.time() - 3600
    orphan, fresh, queued = (
        scratch / "bundle-orphan.json",
        scratch / "bundle-fresh.json",
        (scratch / "bundle-queued.json"),
    )
    for path in (orphan, fresh, queued):
        path.write_bytes(b"{}")
    os.utime(orphan, (old, old))
    os.utime(queued, (old, old))
    ImportJob.objects.create(
        team=team, scratch_path=str(queued), size_bytes=2, heartbeat_at=timezone.now()
    )
    import_jobs_sweep(now=timezone.now() + timedelta(seconds=1))
    assert _left(scratch) == ["bundle-fresh.json", "bundle-queued.json"]
