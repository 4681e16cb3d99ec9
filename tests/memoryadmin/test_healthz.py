from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memoryadmin.celery import app

ROOT = Path(__file__).resolve().parents[2]
REFUSED_BROKER = "redis://127.0.0.1:1/0"  # nothing listens on port 1: a real refused connection


@pytest.fixture
def broker_down():  # type: ignore[no-untyped-def]
    previous = app.conf.broker_url
    app.conf.broker_url = REFUSED_BROKER
    try:
        yield
    finally:
        app.conf.broker_url = previous


@pytest.mark.timeout(30)  # a health check that hangs is a failure
def test_it_answers_503_naming_the_broker_when_it_is_unreachable(client, db, broker_down):
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    assert "no-cache" in response["Cache-Control"]
    body = response.json()
    assert body["status"] == "degraded"
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["broker"] == {"ok": False, "error": "OperationalError"}
    assert body["checks"]["worker"] == {"ok": False, "error": "broker down"}
    assert REFUSED_BROKER not in response.content.decode()  # no connection details leak


def test_it_answers_only_get(client, db):
    assert client.post("/healthz").status_code == 405


def test_it_needs_no_login(client, db, broker_down):
    response = client.get("/healthz")
    assert response.status_code == 503  # not a redirect to the login page


def test_it_answers_503_naming_the_worker_when_none_answers(tmp_path):
    """A fresh process on a broker of its own (kombu's filesystem transport) with no worker."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("REDIS_URL", "DATABASE_URL", "MEMORYADMIN_TEST_DB_NAME")
        and not key.startswith("CELERY_")
    }
    env.update(
        DJANGO_SETTINGS_MODULE="tests.settings",
        MEMORYADMIN_DATA_DIR=str(tmp_path),
        MEMORYADMIN_CELERY_EAGER="false",
    )
    code = (
        "import django, json\n"
        "django.setup()\n"
        "from django.test.utils import setup_test_environment\n"
        "setup_test_environment()\n"
        "from django.test import Client\n"
        "response = Client().get('/healthz')\n"
        "print(json.dumps({'status': response.status_code, 'body': response.json()}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert answer["status"] == 503
    checks = answer["body"]["checks"]
    assert checks["database"]["ok"] is True
    assert checks["broker"]["ok"] is True
    assert checks["worker"] == {"ok": False, "workers": []}
    assert (tmp_path / "broker" / "queue").is_dir()


def test_readyz_adds_migrations_and_the_cache(client, db):
    response = client.get("/readyz")
    body = response.json()
    assert set(body["checks"]) == {"database", "broker", "worker", "migrations", "cache"}
    assert body["checks"]["migrations"] == {"ok": True, "pending": []}
    assert body["checks"]["cache"] == {"ok": True}
    assert "no-cache" in response["Cache-Control"]


def test_readyz_names_a_pending_migration(client, db):
    from django.db.migrations.recorder import MigrationRecorder

    # Inside the test's transaction (rolled back after): the app's last migration unrecorded.
    last = MigrationRecorder.Migration.objects.filter(app="memoryadmin").order_by("-name").first()
    MigrationRecorder.Migration.objects.filter(pk=last.pk).delete()
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["migrations"] == {
        "ok": False,
        "pending": [f"memoryadmin.{last.name}"],
    }


def test_the_checks_are_a_list_a_new_one_is_appended_to(client, db, monkeypatch):
    from memoryadmin import health

    monkeypatch.setattr(
        health,
        "LIVENESS",
        [*health.LIVENESS, health.Check("vectors", lambda: {"ok": True, "backend": "x"}, False)],
    )
    _ok, body = health.health()
    assert body["checks"]["vectors"] == {"ok": True, "backend": "x"}


def test_a_worker_heartbeat_in_the_cache_is_what_makes_it_alive(client, db, settings):
    import time

    from memoryadmin.heartbeat import beat_remove, beat_write

    settings.WORKER_HEARTBEAT_STALE_AFTER = 30
    beat_write("fresh@test")
    beat_write("old@test", now=time.time() - 120)
    try:
        check = client.get("/healthz").json()["checks"]["worker"]
        assert "fresh@test" in check["workers"]
        assert "old@test" not in check["workers"]
        assert check["stale"]["old@test"] >= 120
    finally:
        beat_remove("fresh@test")
        beat_remove("old@test")
