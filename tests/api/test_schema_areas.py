"""The API reference is grouped by area and opens with an introduction written from the one
scope registry in code (memoryadmin/api_docs.py)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memoryadmin.api_docs import AREAS, area_for
from memoryadmin.models import Scope
from memoryadmin.permissions import SCOPE_ACTIONS, role_needed

METHODS = ("get", "put", "post", "patch", "delete")


@pytest.fixture
def served(client) -> dict:  # type: ignore[no-untyped-def]
    response = client.get(reverse("api-schema"), {"format": "json"})
    assert response.status_code == 200
    return response.json()


def _operations(schema: dict) -> list[tuple[str, str, dict]]:
    return [
        (method, path, item[method])
        for path, item in schema["paths"].items()
        for method in METHODS
        if method in item
    ]


def test_it_gives_every_operation_exactly_one_known_area(served):
    known = {area.name for area in AREAS}
    operations = _operations(served)
    assert len(operations) > 60
    wrong = [(m, p, op.get("tags")) for m, p, op in operations if len(op.get("tags", [])) != 1]
    assert wrong == []
    assert {op["tags"][0] for _, _, op in operations} == known  # and no area is empty
    assert [t["name"] for t in served["tags"]] == [a.name for a in AREAS]
    assert all(t["description"] for t in served["tags"])


def test_it_puts_each_endpoint_where_a_reader_looks_for_it():
    assert area_for("post", "/api/search/") == "Agents"
    assert area_for("post", "/api/reviews/proposals/") == "Agents"  # an agent proposes
    assert area_for("get", "/api/reviews/proposals/") == "Reviews"  # the queue
    assert area_for("post", "/api/reviews/proposals/{key}/approve/") == "Reviews"
    assert area_for("post", "/v1/brain/import") == "Brain & bundles"
    assert area_for("delete", "/api/tokens/{token_id}/") == "Team"
    assert area_for("post", "/api/webhooks/{id}/test/") == "Webhooks"
    assert area_for("get", "/api/unknown/") is None


def test_it_introduces_tokens_and_every_scope_from_the_registry(served):
    intro = served["info"]["description"]
    assert "Authorization: Bearer <token>" in intro and "/t/<team>/tokens/" in intro
    for scope in Scope:
        row = next(line for line in intro.splitlines() if line.startswith(f"| `{scope.value}` |"))
        assert scope.label in row and f"| {role_needed(SCOPE_ACTIONS[scope])} |" in row
    # The operations column is read from the views' own required_scopes.
    team_row = next(line for line in intro.splitlines() if "| `team:manage` |" in line)
    assert "`POST /api/webhooks/{id}/test/`" in team_row and "`GET /api/members/`" in team_row
    usage_row = next(line for line in intro.splitlines() if "| `usage:read` |" in line)
    assert "`GET /api/usage/`" in usage_row and "/api/sources/" not in usage_row
