"""Services queue tasks by registered name: every name they use is registered in a process that
only set Django up (a web process imports no tasks module by itself)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHECK = """
import django, importlib
django.setup()
from celery import current_app
missing = []
for app in ("sources", "reviews", "bundles", "webhooks"):
    names = importlib.import_module(app + ".task_names")
    for key, name in vars(names).items():
        if key.isupper() and name not in current_app.tasks:
            missing.append(name)
print(sorted(missing))
"""


def test_it_registers_every_task_a_service_queues_by_name():
    result = subprocess.run(
        [sys.executable, "-c", CHECK],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"DJANGO_SETTINGS_MODULE": "tests.settings", "PATH": "/usr/bin:/bin"},
    )
    assert result.stdout.strip() == "[]", result.stderr
