"""Queue a task by its registered name, so a service never imports its app's tasks module and
the tasks (which import their services) stand above the services without an import circle.

Each app keeps its task names in `<app>/task_names.py` (no imports), read by its `tasks.py`
(`@shared_task(name=...)`) and by its services. `app.tasks[name]`, not `send_task`: send_task
ignores `task_always_eager`, which the tests rely on.
"""

from __future__ import annotations

from typing import Any

from celery import current_app


def enqueue_on_commit(task_name: str, *args: Any, countdown: float | None = None) -> None:
    """Send after the caller's transaction commits (never after a rollback), robustly."""
    task = current_app.tasks[task_name]
    if countdown is None:
        task.delay_on_commit(*args)
    else:
        task.apply_async_on_commit(args, countdown=countdown)


def enqueue_now(task_name: str, *args: Any) -> None:
    """Send at once (inside an on_commit callback of the caller's own); broker errors raise."""
    current_app.tasks[task_name].delay(*args)
