"""Health of the pieces a running memoryadmin needs, as two lists of checks.

`/healthz` (`LIVENESS`) must answer in a few milliseconds whatever the workers are doing: the
database answers `SELECT 1`, the broker accepts a connection (one attempt, no retry), and a
worker's heartbeat (memoryadmin/heartbeat.py) is recent. Nothing here waits for a worker.
`/readyz` (`READINESS`) adds what a deploy wants to know before sending traffic: every migration
applied and the cache writable.

A check is a `Check(name, function)` whose function returns a dict with `ok` (and details that
never include a connection string). Add one by appending to the list it belongs to.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, connections

CheckResult = dict[str, Any]

# Sections an app adds to /healthz for information (they never make it fail), by name:
# registered in an AppConfig.ready, so this floor imports nothing above it.
INFO_SECTIONS: dict[str, Callable[[], dict[str, Any]]] = {}


def register_info_section(name: str, section: Callable[[], dict[str, Any]]) -> None:
    INFO_SECTIONS[name] = section


def info_sections() -> dict[str, Any]:
    info: dict[str, Any] = {}
    for name, section in INFO_SECTIONS.items():
        try:
            info[name] = section()
        except Exception as exc:  # information only: a failing section says so, nothing more
            info[name] = {"error": type(exc).__name__}
    return info


@dataclass(frozen=True)
class Check:
    name: str
    run: Callable[[], CheckResult]
    # Informational checks (which backend is in use…) are shown but never fail the answer.
    required: bool = True


def check_database() -> CheckResult:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        return {"ok": True, "vendor": connection.vendor}
    except Exception as exc:
        return {"ok": False, "error": type(exc).__name__}


def check_broker() -> CheckResult:
    from memoryadmin.celery import app

    try:
        with app.connection_for_write() as conn:
            # One attempt: kombu's retries would sleep seconds before saying "down".
            conn.ensure_connection(max_retries=0, timeout=1)
            transport = conn.transport_cls
        return {"ok": True, "transport": str(transport)}
    except Exception as exc:
        return {"ok": False, "error": type(exc).__name__}


def check_worker() -> CheckResult:
    """Alive: a worker's heartbeat is younger than WORKER_HEARTBEAT_STALE_AFTER seconds."""
    from memoryadmin.heartbeat import beats_read

    try:
        beats = beats_read()
    except Exception as exc:  # the cache (Redis) is down
        return {"ok": False, "error": type(exc).__name__}
    now = time.time()
    stale_after = settings.WORKER_HEARTBEAT_STALE_AFTER
    alive = [beat.name for beat in beats if beat.age(now) <= stale_after]
    body: CheckResult = {"ok": bool(alive), "workers": alive}
    stale = {beat.name: round(beat.age(now)) for beat in beats if beat.age(now) > stale_after}
    if stale:
        body["stale"] = stale  # name -> seconds since its last heartbeat
    return body


def check_migrations() -> CheckResult:
    from django.db.migrations.executor import MigrationExecutor

    try:
        executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except Exception as exc:
        return {"ok": False, "error": type(exc).__name__}
    pending = sorted(f"{m.app_label}.{m.name}" for m, _backwards in plan)
    return {"ok": not pending, "pending": pending}


def check_cache() -> CheckResult:
    from django.core.cache import cache

    key = "memoryadmin.readyz.probe"
    try:
        cache.set(key, "1", timeout=30)
        ok = cache.get(key) == "1"
    except Exception as exc:
        return {"ok": False, "error": type(exc).__name__}
    return {"ok": ok}


LIVENESS: list[Check] = [
    Check("database", check_database),
    Check("broker", check_broker),
    Check("worker", check_worker),
]
READINESS: list[Check] = [
    *LIVENESS,
    Check("migrations", check_migrations),
    Check("cache", check_cache),
]


def run_checks(checks: list[Check]) -> tuple[bool, dict[str, Any]]:
    results: dict[str, CheckResult] = {}
    for check in checks:
        if check.name == "worker" and not results.get("broker", {"ok": True})["ok"]:
            results[check.name] = {"ok": False, "error": "broker down"}
            continue
        results[check.name] = check.run()
    ok = all(results[check.name]["ok"] for check in checks if check.required)
    return ok, {"status": "ok" if ok else "degraded", "checks": results}


def health() -> tuple[bool, dict[str, Any]]:
    """What /healthz answers: quick, never waits for a worker; apps' information sections beside."""
    ok, body = run_checks(LIVENESS)
    return ok, {**body, **info_sections()}


def readiness() -> tuple[bool, dict[str, Any]]:
    """What /readyz answers: health plus migrations and the cache."""
    ok, body = run_checks(READINESS)
    return ok, {**body, **info_sections()}
