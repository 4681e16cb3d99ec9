"""Shared fixtures: users and teams, API clients, and a real Celery worker process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection
from rest_framework.test import APIClient

from memoryadmin.audit import Actor
from memoryadmin.models import Role, Team
from memoryadmin.services import membership_set, team_create
from memoryadmin.tokens import token_create

ROOT = Path(__file__).resolve().parent.parent

# A run started by git itself (`git bisect run` in a worktree, a hook) exports GIT_DIR and its
# kin; the git commands of the fixtures would then act on this checkout's repository instead of
# their temporary ones (seen: a "Seed memories" commit on the bisected checkout). The app builds
# its own git environment (reviews/gitenv.py); the tests' helpers inherit os.environ.
for _name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_PREFIX"):
    os.environ.pop(_name, None)
# The node name of the session's shared worker while it runs (see celery_worker_process).
SESSION_WORKER: dict[str, str] = {}


@pytest.fixture
def collector_on() -> Iterator[None]:
    """The cyclic garbage collector on for the test, as it was after it
    (memoryadmin.process.collector_paused turns it off in a section and back on after)."""
    import gc

    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


@pytest.fixture
def ratelimit_clock(monkeypatch):  # type: ignore[no-untyped-def]
    """The rate limiter's clock held at one second for the test: its windows are a fixed
    minute (django-ratelimit), and a test's requests spanning a minute's edge on a slow
    machine would start counting afresh half-way (30 failures, then a 401 where a 429 is due)."""
    import time

    from django_ratelimit import core

    now = time.time()
    monkeypatch.setattr(core, "time", type("Clock", (), {"time": staticmethod(lambda: now)}))


@pytest.fixture
def team(db) -> Team:  # type: ignore[no-untyped-def]
    return team_create(actor=Actor.system(), slug="alpha", name="Alpha")


@pytest.fixture
def other_team(db) -> Team:  # type: ignore[no-untyped-def]
    return team_create(actor=Actor.system(), slug="beta", name="Beta")


@pytest.fixture
def make_user(db, django_user_model):  # type: ignore[no-untyped-def]
    def make(username: str, *, team: Team | None = None, role: str | None = None, **extra):  # type: ignore[no-untyped-def]
        user = django_user_model.objects.create_user(
            username=username,
            password="pw-" + username,
            email=f"{username}@example.org",
            first_name=username.title(),
            **extra,
        )
        if team is not None and role is not None:
            membership_set(actor=Actor.system(), team=team, user=user, role=role)
        return user

    return make


@pytest.fixture
def admin_user(make_user, team):  # type: ignore[no-untyped-def]
    return make_user("alice", team=team, role=Role.ADMIN)


@pytest.fixture
def reviewer_user(make_user, team):  # type: ignore[no-untyped-def]
    return make_user("rita", team=team, role=Role.REVIEWER)


@pytest.fixture
def viewer_user(make_user, team):  # type: ignore[no-untyped-def]
    return make_user("victor", team=team, role=Role.VIEWER)


@pytest.fixture
def make_token(db):  # type: ignore[no-untyped-def]
    def make(team: Team, scopes: list[str], **kwargs) -> str:  # type: ignore[no-untyped-def]
        _, secret = token_create(
            actor=Actor.system(), team=team, name=kwargs.pop("name", "t"), scopes=scopes, **kwargs
        )
        return secret

    return make


@pytest.fixture
def api_client() -> APIClient:
    return APIClient()


@pytest.fixture
def token_client(make_token):  # type: ignore[no-untyped-def]
    """token_client(team, ["scope", ...]) -> an APIClient that sends that token."""

    def make(team: Team, scopes: list[str]) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(team, scopes)}")
        return client

    return make


def _worker_env() -> dict[str, str]:
    env = os.environ.copy()
    env["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    env["MEMORYADMIN_CELERY_EAGER"] = "false"
    env["MEMORYADMIN_WORKER_DB_NAME"] = str(connection.settings_dict["NAME"])
    env["PYTHONUNBUFFERED"] = "1"
    # The reviews tests' remotes are file:// and loopback http (the in-process tests set it too).
    env.setdefault("MEMORYADMIN_REPOSITORY_ALLOW_LOCAL_REMOTES", "true")
    return env


@pytest.fixture(scope="session")
def celery_worker_process(
    django_db_setup, django_db_blocker, tmp_path_factory
) -> Iterator[subprocess.Popen]:  # type: ignore[no-untyped-def]
    """A real `celery worker` process on the test database and the configured broker."""
    from memoryadmin.celery import app, queue_names

    log_path = tmp_path_factory.mktemp("worker") / "worker.log"
    log = log_path.open("w")
    queues = ",".join(queue_names(app.conf.task_default_queue))  # sources, git, webhooks, ...
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "memoryadmin",
            "worker",
            "--pool=solo",
            "--loglevel=INFO",
            "-Q",
            queues,
            "--without-gossip",
            "--without-mingle",
            "-n",
            f"test-{os.getpid()}@%h",
        ],
        cwd=ROOT,
        env=_worker_env(),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = False
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError("worker exited early:\n" + log_path.read_text())
            replies = app.control.ping(timeout=1.0)
            names = [name for reply in replies for name in reply if f"test-{os.getpid()}@" in name]
            if names:
                SESSION_WORKER["name"] = names[0]
                break
            if time.monotonic() > deadline:
                raise RuntimeError("worker did not answer ping:\n" + log_path.read_text())
        process.log_path = log_path  # type: ignore[attr-defined]
        yield process
    finally:
        app.conf.task_always_eager = previous
        SESSION_WORKER.pop("name", None)
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


@pytest.fixture
def celery_worker(celery_worker_process, transactional_db):  # type: ignore[no-untyped-def]
    """Tasks sent during the test go to the real worker process (data must be committed)."""
    from memoryadmin.celery import app

    app.conf.task_always_eager = False
    yield celery_worker_process
    # Let the worker finish what the test set going (a push re-indexes after the state the test
    # waited for): flushing the tables under a running task deadlocks on PostgreSQL.
    _wait_until_idle(SESSION_WORKER.get("name"))
    app.conf.task_always_eager = True


def _wait_until_idle(name: str | None, timeout: float = 60.0) -> None:
    from memoryadmin.celery import app

    if not name:
        return
    deadline = time.monotonic() + timeout
    quiet_checks = 0
    while time.monotonic() < deadline and quiet_checks < 2:
        inspect = app.control.inspect(destination=[name], timeout=1.0)
        busy = (inspect.active() or {}).get(name, []) + (inspect.reserved() or {}).get(name, [])
        quiet_checks = 0 if busy else quiet_checks + 1
        time.sleep(0.2)


def wait_for(predicate, *, timeout: float = 30.0, interval: float = 0.1):  # type: ignore[no-untyped-def]
    """Poll until predicate() is truthy; return its value or fail the test."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"condition not met within {timeout}s")
