"""Queue a task by its registered name after commit, for a service whose task module would
import the service back (the one way to queue without an import circle)."""

from __future__ import annotations

from typing import Any

from celery import current_app


def enqueue_on_commit(task_name: str, *args: Any, **kwargs: Any) -> None:
    """`app.tasks[name].delay_on_commit(...)`: honours task_always_eager, unlike send_task."""
    current_app.tasks[task_name].delay_on_commit(*args, **kwargs)
