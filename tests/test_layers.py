"""The house's floors: imports only point down. Data flows up into the brain by signals.

formats (pure spec libraries) and memoryadmin (core) at the ground, then webhooks, then sources and
reviews side by side, then bundles (the brain). Faces and tasks (views, API, URLs, admin, tasks,
management commands, demo seeding) stand above every floor and may import anything. The walk reads
every import in a module, at the top or inside a function, so a late import cannot hide an arrow.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FLOORS = {"formats": 0, "memoryadmin": 0, "webhooks": 1, "sources": 2, "reviews": 2, "bundles": 3}
FACES = {"views", "api", "api_urls", "urls", "admin", "tasks", "demo", "management", "dashboard"}


def _modules() -> list[Path]:
    return sorted(
        path
        for app in FLOORS
        for path in (ROOT / app).rglob("*.py")
        if "migrations" not in path.parts
    )


def _is_face(path: Path) -> bool:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return any(part in FACES for part in parts[1:])


def _imported_apps(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        found |= {name.split(".")[0] for name in names if name.split(".")[0] in FLOORS}
    return found


def _arrows_up() -> list[str]:
    arrows = []
    for path in _modules():
        app = path.relative_to(ROOT).parts[0]
        if _is_face(path):
            continue
        for other in sorted(_imported_apps(path) - {app}):
            if FLOORS[other] >= FLOORS[app] and not (app == "memoryadmin" and other == "formats"):
                arrows.append(f"{path.relative_to(ROOT)} imports {other}")
    return arrows


def test_it_finds_modules_on_every_floor():
    apps = {path.relative_to(ROOT).parts[0] for path in _modules()}
    assert apps == set(FLOORS)


def test_it_keeps_every_import_pointing_down():
    assert _arrows_up() == []


def test_it_keeps_the_format_libraries_free_of_every_app():
    leaks = [
        f"{path.relative_to(ROOT)} imports {sorted(_imported_apps(path) - {'formats'})}"
        for path in (ROOT / "formats").rglob("*.py")
        if _imported_apps(path) - {"formats"}
    ]
    assert leaks == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from bundles.mirror import x\n", {"bundles"}),
        ("def f():\n    import reviews.models\n", {"reviews"}),
        ("from . import sibling\nimport os\n", set()),
    ],
)
def test_it_sees_imports_at_the_top_and_inside_functions(tmp_path, source, expected):
    path = tmp_path / "module.py"
    path.write_text(source)
    assert _imported_apps(path) == expected
