"""The Celery application; its configuration lives in settings.py under the CELERY_ namespace.

Tasks go to one queue per kind of work, all named after `MEMORYADMIN_CELERY_QUEUE` (`<q>`):

| queue | tasks |
|---|---|
| `<q>` | everything else: the beat's fan-out tasks (refresh/sync/deliver due, sweeps), ping |
| `<q>.sources` | `sources.tasks.refresh_source` |
| `<q>.git` | `reviews.tasks.sync_repository`, `reviews.tasks.push_repository`, |
| | `bundles.tasks.import_proposal_push` |
| `<q>.webhooks` | `webhooks.tasks.deliver` |
| `<q>.imports` | `bundles.tasks.import_job_run` |

A worker started without `-Q` consumes them all (they are the declared `task_queues`), which
is what `make run` does. Production runs one worker per queue group (docker/compose.yaml,
docs/deployment.md) so a slow kind — a dripping git server, a slow webhook receiver, a large
import — only ever occupies its own workers. Task names do not change with the queue.
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery
from kombu import Exchange, Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")

# task name -> queue suffix; unnamed tasks stay on the default queue.
QUEUE_OF_TASK = {
    "sources.tasks.refresh_source": "sources",
    "reviews.tasks.sync_repository": "git",
    "reviews.tasks.push_repository": "git",
    "bundles.tasks.import_proposal_push": "git",
    "webhooks.tasks.deliver": "webhooks",
    "bundles.tasks.import_job_run": "imports",
}
QUEUE_SUFFIXES = ("sources", "git", "webhooks", "imports")


def queue_names(base: str) -> list[str]:
    """Every queue of a deployment whose default queue is `base`, default first."""
    return [base, *(f"{base}.{suffix}" for suffix in QUEUE_SUFFIXES)]


def task_queues(base: str) -> list[Queue]:
    """The declared queues (as Celery would create each: a direct exchange of its name)."""
    return [
        Queue(name, Exchange(name, type="direct"), routing_key=name) for name in queue_names(base)
    ]


def task_route(name: str, args: Any, kwargs: Any, options: Any, task: Any = None, **kw: Any) -> Any:
    """The router named in `CELERY_TASK_ROUTES`: the queue of `name`, read at send time."""
    suffix = QUEUE_OF_TASK.get(name)
    if suffix is None:
        return None
    return {"queue": f"{app.conf.task_default_queue}.{suffix}"}


app = Celery("memoryadmin", task_cls="memoryadmin.taskbase:MemoryadminTask")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def _heartbeat_signals() -> None:
    """A worker writes its heartbeat from a thread of its own (memoryadmin/heartbeat.py)."""
    from celery.signals import worker_ready, worker_shutdown

    from memoryadmin import heartbeat

    worker_ready.connect(heartbeat.on_worker_ready, weak=False)
    worker_shutdown.connect(heartbeat.on_worker_shutdown, weak=False)


_heartbeat_signals()


def _freeze_signals() -> None:
    """A worker freezes what start-up made (memoryadmin/process.py): a prefork child once
    forked, the main process once ready (the solo pool runs tasks there)."""
    from celery.signals import worker_process_init, worker_ready

    from memoryadmin.process import freeze_startup_objects

    worker_process_init.connect(freeze_startup_objects, weak=False)
    worker_ready.connect(freeze_startup_objects, weak=False)


_freeze_signals()


@app.task(name="memoryadmin.ping")
def ping(value: str) -> str:
    """Round trip used by tests and the health check: returns what it was given."""
    return value
