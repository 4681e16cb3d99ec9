"""The Celery application; its configuration lives in settings.py under the CELERY_ namespace."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")

app = Celery("memoryadmin", task_cls="memoryadmin.taskbase:MemoryadminTask")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.task(name="memoryadmin.ping")
def ping(value: str) -> str:
    """Round trip used by tests and the health check: returns what it was given."""
    return value
