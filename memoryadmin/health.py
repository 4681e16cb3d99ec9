"""Health of the pieces a running memoryadmin needs: database, broker, a live worker."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import connection

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


def check_database() -> dict[str, Any]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        return {"ok": True, "vendor": connection.vendor}
    except Exception as exc:
        return {"ok": False, "error": type(exc).__name__}


def check_broker() -> dict[str, Any]:
    from memoryadmin.celery import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=1)
            transport = conn.transport_cls
        return {"ok": True, "transport": str(transport)}
    except Exception as exc:
        return {"ok": False, "error": type(exc).__name__}


def check_worker(timeout: float = 1.0) -> dict[str, Any]:
    from memoryadmin.celery import app

    try:
        replies = app.control.ping(timeout=timeout)
    except Exception as exc:
        return {"ok": False, "error": type(exc).__name__}
    workers = sorted(name for reply in replies for name in reply)
    return {"ok": bool(workers), "workers": workers}


def health() -> tuple[bool, dict[str, Any]]:
    db = check_database()
    broker = check_broker()
    worker = check_worker() if broker["ok"] else {"ok": False, "error": "broker down"}
    checks = {"database": db, "broker": broker, "worker": worker}
    ok = all(check["ok"] for check in checks.values())
    return ok, {"status": "ok" if ok else "degraded", "checks": checks, **info_sections()}
