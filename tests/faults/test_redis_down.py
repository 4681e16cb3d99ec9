"""Redis unreachable: a real web process whose REDIS_URL points at a closed port.

The UI stays up, signing in works, an action that needs a worker answers without a 500, and
/healthz says the broker is down.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import httpx
import pytest
from django.db import connection, transaction

from bundles.imports import import_jobs_sweep
from bundles.models import ImportJob, JobState
from memoryadmin.audit import Actor
from memoryadmin.models import Role, Scope
from reviews.models import Decision, Memory, PushState
from reviews.services.repositories import repository_create, repository_sync
from sources.services.lifecycle import source_add, source_approve
from tests.bundles.helpers import chunk, make_bundle
from tests.conftest import ROOT, _worker_env
from tests.corpus.hostile import closed_port
from tests.reviews.conftest import make_remote
from tests.sources.helpers import record_text, write_source

pytestmark = pytest.mark.worker


@pytest.fixture
def web_without_redis(transactional_db, tmp_path):  # type: ignore[no-untyped-def]
    port = closed_port()
    dead = closed_port()
    env = _worker_env()
    env["REDIS_URL"] = f"redis://127.0.0.1:{dead}/0"
    env["MEMORYADMIN_DATA_DIR"] = str(tmp_path / "data")
    env["MEMORYADMIN_BUNDLE_SYNC_IMPORT_MAX_BYTES"] = "2000"  # larger uploads become jobs
    log = (tmp_path / "web.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(base + "/accounts/login/", timeout=2)
            break
        except httpx.TransportError:
            if process.poll() is not None:
                raise RuntimeError((tmp_path / "web.log").read_text()) from None
            time.sleep(0.3)
    try:
        yield base, tmp_path / "web.log"
    finally:
        process.terminate()
        process.wait(timeout=20)
        log.close()


def _csrf(html: str) -> str:
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert match, "no CSRF token on the page"
    return match.group(1)


def test_it_stays_up_and_says_so_when_redis_is_down(
    web_without_redis, team, make_user, make_token, tmp_path, settings
):
    base, log = web_without_redis
    settings.DATA_DIR = tmp_path / "data"
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = True
    if connection.vendor == "sqlite":
        connection.close()  # let the web process write
    make_user("alice", team=team, role=Role.ADMIN)
    root = write_source(tmp_path / "src", {"a": record_text("a")})
    with transaction.atomic():
        source = source_add(actor=Actor.system(), team=team, location=str(root))
    source_approve(actor=Actor.system(), source=source)
    remote = make_remote(tmp_path / "git")
    with transaction.atomic():
        repository = repository_create(
            actor=Actor.system(), team=team, name="app", remote_url=remote.url, allow_local=True
        )
    repository_sync(repository_id=repository.pk)

    with httpx.Client(base_url=base, timeout=30, follow_redirects=False) as client:
        health = client.get("/healthz")
        assert health.status_code == 503
        assert "broker" in health.text.lower() or "redis" in health.text.lower()

        login = client.get("/accounts/login/")
        response = client.post(
            "/accounts/login/",
            data={
                "username": "alice",
                "password": "pw-alice",
                "csrfmiddlewaretoken": _csrf(login.text),
            },
            headers={"Referer": base + "/accounts/login/"},
        )
        assert response.status_code == 302, (response.status_code, log.read_text()[-3000:])

        page = client.get(f"/t/{team.slug}/sources/{source.pk}/")
        assert page.status_code == 200
        for url in (f"/t/{team.slug}/", f"/t/{team.slug}/reviews/", f"/t/{team.slug}/brain/"):
            assert client.get(url).status_code == 200, url

        refresh = client.post(
            f"/t/{team.slug}/sources/{source.pk}/refresh/",
            data={"csrfmiddlewaretoken": _csrf(page.text)},
            headers={"Referer": base + page.url.path},
        )
        assert refresh.status_code in (302, 303, 503), (
            refresh.status_code,
            log.read_text()[-3000:],
        )
        shown = client.get(f"/t/{team.slug}/sources/{source.pk}/").text
        assert "task queue is unavailable" in shown
        run = source.runs.order_by("-pk").first()
        assert run.status == "failed" and run.error_code == "queue-unavailable"

        # A review decision is recorded (pending) even though its push cannot be queued now;
        # the beat's repository sync pushes pending decisions once the broker is back.
        memory = Memory.objects.get(repository=repository, memory_id="20260203-cache-attempt")
        detail = client.get(f"/t/{team.slug}/reviews/p/{memory.pk}/")
        approve = client.post(
            f"/t/{team.slug}/reviews/p/{memory.pk}/approve/",
            data={"csrfmiddlewaretoken": _csrf(detail.text)},
            headers={"Referer": base + detail.url.path},
        )
        assert approve.status_code == 302, (approve.status_code, log.read_text()[-3000:])
        assert Decision.objects.get(repository=repository).state == PushState.PENDING

    # A large upload becomes a job whose task cannot be sent: it answers 202 with the job
    # `queued`, and the beat's sweeper sends it once its lease is over and the broker is back.
    token = make_token(team, [Scope.BUNDLES_IMPORT])
    body = json.dumps(make_bundle(chunks=[chunk(i, f"queued {i}") for i in range(40)]))
    upload = httpx.post(
        base + "/v1/brain/import",
        content=body,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        timeout=30,
    )
    assert upload.status_code == 202, (upload.status_code, log.read_text()[-3000:])
    job = ImportJob.objects.get(pk=upload.json()["job"]["id"])
    assert job.state == JobState.QUEUED
    assert import_jobs_sweep() == []  # inside its lease
    settings.BUNDLE_IMPORT_LEASE_SECONDS = 0
    assert import_jobs_sweep() == [job.pk]  # this process's broker works (tasks run eagerly)
    job.refresh_from_db()
    assert (job.state, job.records_done) == (JobState.SUCCEEDED, 40)
