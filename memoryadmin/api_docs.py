"""The API reference's areas and introduction (a drf-spectacular postprocessing hook).

Each operation gets exactly one tag, its area, from the table below (by path, and method where
an area shares a path prefix); the introduction is written from the scope registry
(`models.Scope`, `permissions.SCOPE_ACTIONS`) and the views' own `required_scopes`, so it
never drifts from what the code checks. Redoc shows it above the first area.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from memoryadmin.models import Scope
from memoryadmin.permissions import SCOPE_ACTIONS, role_needed


@dataclass(frozen=True)
class Area:
    name: str
    description: str
    prefixes: tuple[str, ...]
    # "POST /api/reviews/proposals/": one operation on another area's path, matched first.
    operations: tuple[str, ...] = ()


AREAS: tuple[Area, ...] = (
    Area(
        "Agents",
        "What an agent reads and proposes: ranked search, a plan's precheck, one memory by "
        "reference, the team's context, and a memory proposed for review.",
        ("/api/search/", "/api/precheck/", "/api/memories/", "/api/context/"),
        operations=("POST /api/reviews/proposals/",),
    ),
    Area(
        "Brain & bundles",
        "The team's one memory as MemoryAI bundles: export and import (JSON, NDJSON, files, "
        "background jobs), the spec, embedding progress, deleting a chunk and undoing an import.",
        ("/api/brain/", "/v1/"),
    ),
    Area(
        "Sources",
        "OpenMemories sources: add, test, change, approve, refresh state, credentials, disable, "
        "delete.",
        ("/api/sources/",),
    ),
    Area(
        "Reviews",
        "The MemoryRail review gate: repositories (add, test, change, sync, disable, delete), "
        "the proposal queue, decisions (approve, reject, batch, retry) and their history.",
        ("/api/reviews/",),
    ),
    Area(
        "Webhooks",
        "Signed event deliveries: endpoints, secret rotation and its overlap, test sends.",
        ("/api/webhooks/",),
    ),
    Area(
        "Team",
        "Who is calling, the team's members and their roles, invitations, and API tokens.",
        ("/api/me/", "/api/members/", "/api/invitations/", "/api/tokens/"),
    ),
    Area("Usage", "What agents were served, counted per memory and reader.", ("/api/usage/",)),
    Area(
        "Audit",
        "The team's audit log: who changed what and when, with the Audit page's filters.",
        ("/api/audit/",),
    ),
)

METHODS = ("get", "put", "post", "patch", "delete")


def area_for(method: str, path: str) -> str | None:
    """The one area an operation belongs to (None: the table lacks it; the test says so)."""
    operation = f"{method.upper()} {path}"
    for area in AREAS:
        if operation in area.operations:
            return area.name
    return next((area.name for area in AREAS if path.startswith(area.prefixes)), None)


def _operations_by_scope(endpoints: list[tuple[Any, ...]]) -> dict[str, list[str]]:
    """`GET /api/sources/`… per scope, read from each view's `required_scopes`."""
    found: dict[str, list[str]] = defaultdict(list)
    for path, _regex, method, callback in endpoints:
        scopes = getattr(getattr(callback, "cls", None), "required_scopes", {}) or {}
        scope = scopes.get(method) or scopes.get("*")
        if scope:
            # drf-spectacular names a `pk` path parameter `id` (SCHEMA_COERCE_PATH_PK).
            found[str(scope)].append(f"`{method} {path.replace('{pk}', '{id}')}`")
    return found


def introduction(endpoints: list[tuple[Any, ...]]) -> str:
    by_scope = _operations_by_scope(endpoints)
    rows = "\n".join(
        f"| `{scope.value}` | {scope.label} | {role_needed(SCOPE_ACTIONS[scope])} | "
        f"{', '.join(by_scope.get(scope.value, [])) or '—'} |"
        for scope in Scope
    )
    return f"""Sources, reviews and MemoryAI bundles for a team's agent memory: everything the
team pages do, for scripts and agents.

## Getting a token

A team admin creates one on the team's **Tokens** page (`/t/<team>/tokens/`), with
`POST /api/tokens/` (scope `team:manage`), or with `manage.py token_create SLUG --name NAME
--scopes a,b`. It belongs to one team and carries the scopes ticked when it was made; the
secret is shown once, then only its prefix. A personal token acts for the person who made it:
never beyond their current role on the team (the lowest role each scope needs is in the table).

## Sending it

Send it in every request as `Authorization: Bearer <token>`. The token names the team; a
signed-in browser session works too (it needs the role in the table, and `?team=<slug>` when the
person is in several teams). A missing, unknown, revoked or expired token answers 401; a scope
the token lacks answers 403 `insufficient-scope`. Every error has one shape:
`{{"error": {{"code", "message", "details"}}}}`, with a stable `code`.

## Scopes

| scope | allows | lowest role | operations |
|---|---|---|---|
{rows}
"""


def areas_and_introduction(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """POSTPROCESSING_HOOKS entry: one area tag per operation, the areas' descriptions in
    their order, and the introduction as the schema's description."""
    for path, item in result.get("paths", {}).items():
        for method in METHODS:
            operation = item.get(method)
            if operation is not None:
                area = area_for(method, path)
                operation["tags"] = [area] if area else []
    result["tags"] = [{"name": a.name, "description": a.description} for a in AREAS]
    result.setdefault("info", {})["description"] = introduction(generator.endpoints or [])
    return result
