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


# --- no import circle ---------------------------------------------------------------------------


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def _import_graph() -> dict[str, set[str]]:
    """module -> the project modules it imports anywhere (top, function bodies, TYPE_CHECKING):
    `from pkg import sub` counts as importing `pkg.sub` when `sub` is a module."""
    modules = {_module_name(path): path for path in _modules()}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                subs = {f"{node.module}.{alias.name}" for alias in node.names} & set(modules)
                found |= subs if len(subs) == len(node.names) else {node.module, *subs}
        graph[name] = (found & set(modules)) - {name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        circles.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return circles


def test_it_has_no_import_circle_anywhere_in_the_house():
    assert _circles(_import_graph()) == []


def test_it_finds_a_circle_through_a_function_body_import():
    graph = {"a.services": {"a.tasks"}, "a.tasks": {"a.services"}, "a.models": set()}
    assert _circles(graph) == [["a.services", "a.tasks"]]


# --- rooms of a livable size --------------------------------------------------------------------

MAX_LINES = 400


def test_it_keeps_every_module_under_400_lines():
    big = {
        str(path.relative_to(ROOT)): lines
        for path in [*_modules(), *(ROOT / "bench").rglob("*.py")]
        if (lines := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert big == {}
