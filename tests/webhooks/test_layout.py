"""The webhooks app by role: other apps reach it through `emit` (and the outbound guards), its
tasks stand above its services, and the queue still knows the tasks by their old names."""

from __future__ import annotations

import ast
from pathlib import Path

from django.db import OperationalError

from memoryadmin.celery import QUEUE_OF_TASK, app
from webhooks import tasks

ROOT = Path(__file__).resolve().parents[2]
OTHER_APPS = ("memoryadmin", "sources", "reviews", "bundles", "bench", "formats")
# What other apps may import: the event API, and the outbound-HTTP guards sources and git share.
PUBLIC = {"webhooks.emit", "webhooks.events", "webhooks.netguard", "webhooks.deadline"}


def _webhooks_imports(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("webhooks")}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "webhooks":
                found |= {f"webhooks.{alias.name}" for alias in node.names}
            elif node.module.startswith("webhooks."):
                found.add(node.module)
    return found


def test_it_lets_other_apps_import_only_the_event_api_and_the_outbound_guards():
    reached = {
        f"{path.relative_to(ROOT)} imports {name}"
        for app_dir in OTHER_APPS
        for path in (ROOT / app_dir).rglob("*.py")
        if "migrations" not in path.parts
        for name in _webhooks_imports(ast.parse(path.read_text()))
        if name not in PUBLIC
    }
    assert reached == set()


def test_it_keeps_the_tasks_module_free_of_its_app_at_import_time():
    tree = ast.parse(Path(tasks.__file__).read_text())
    top_level = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    # Only the task names (webhooks.task_names imports nothing); services queue by those names.
    assert _webhooks_imports(ast.Module(body=top_level, type_ignores=[])) <= {"webhooks.task_names"}


def test_it_keeps_the_registered_task_names_and_their_queue():
    assert (tasks.delivery_attempt.name, tasks.deliveries_queue_due.name) == (
        "webhooks.tasks.deliver",
        "webhooks.tasks.deliver_due",
    )
    assert {"webhooks.tasks.deliver", "webhooks.tasks.deliver_due"} <= set(app.tasks)
    assert QUEUE_OF_TASK["webhooks.tasks.deliver"] == "webhooks"


def test_it_leaves_http_retries_to_the_delivery_and_only_a_lost_database_to_celery():
    assert tasks.delivery_attempt.autoretry_for == (OperationalError,)
    assert tasks.delivery_attempt.retry_jitter is True
    assert not getattr(tasks.deliveries_queue_due, "autoretry_for", ())
