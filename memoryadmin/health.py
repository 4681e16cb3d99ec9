"""Health of the pieces a running memoryadmin needs: database, broker, a live worker."""

from __future__ import annotations

from typing import Any

from django.db import connection


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
    return ok, {"status": "ok" if ok else "degraded", "checks": checks}
