"""What this process serves: "web" once memoryadmin/wsgi.py loaded the application, else ""
(a Celery worker, a management command, a test). Lower floors mark it, upper floors read it
(bundles/embeddings/model.py tunes torch for query encoding in web processes)."""

from __future__ import annotations

_role = ""


def process_mark(role: str) -> None:
    global _role
    _role = role


def process_role() -> str:
    return _role
