"""The reviews app's shape: modules small enough to read, and no import circle at load time."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "reviews"
# The API and HTML faces are split by their own step of the house work.
FACES = {"api.py", "views.py", "serializers.py"}
MAX_LINES = 400


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(APP.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _top_level_imports(path: Path, modules: set[str]) -> set[str]:
    """reviews.* modules imported when this one loads (not in functions, not for type checks)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return {name for name in names if name in modules}


def _circles() -> list[list[str]]:
    modules = _modules()
    graph = {
        name: _top_level_imports(path, set(modules)) - {name} for name, path in modules.items()
    }
    circles, done = [], set()

    def walk(name: str, trail: list[str]) -> None:
        if name in trail:
            circles.append([*trail[trail.index(name) :], name])
            return
        if name in done:
            return
        for other in sorted(graph[name]):
            walk(other, [*trail, name])
        done.add(name)

    for name in sorted(graph):
        walk(name, [])
    return circles


def test_it_finds_the_modules_of_the_app():
    assert {"reviews.git", "reviews.tasks", "reviews.services.push"} <= set(_modules())


def test_it_keeps_every_module_of_the_app_under_four_hundred_lines():
    long = {
        str(path.relative_to(ROOT)): lines
        for path in _modules().values()
        if path.name not in FACES and (lines := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


def test_it_loads_the_app_without_an_import_circle():
    assert _circles() == []
