"""The sources app's shape: tasks stand above the services, and no module grows past a read."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "sources"
MAX_LINES = 400


def test_it_keeps_the_tasks_free_of_sources_imports_at_module_level():
    """The services queue work by task name; the tasks import their service in the task body.
    At the top the tasks read only the names (`sources.task_names`, which imports nothing)."""
    tree = ast.parse((ROOT / "tasks.py").read_text())
    names = [
        alias.name for node in tree.body if isinstance(node, ast.Import) for alias in node.names
    ]
    names += [node.module or "" for node in tree.body if isinstance(node, ast.ImportFrom)]
    names += [
        f"{node.module}.{alias.name}"
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module == "sources"
        for alias in node.names
    ]
    own = {name for name in names if name.split(".")[0] == "sources"} - {"sources"}
    assert own <= {"sources.task_names"}


def test_it_keeps_every_sources_module_under_400_lines():
    long = {
        str(path.relative_to(ROOT)): lines
        for path in ROOT.rglob("*.py")
        if "migrations" not in path.parts
        and (lines := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}
