"""POST /api/memories/: propose a memory (the REST face of the MCP tool propose_memory)."""

from __future__ import annotations

import pytest

from bundles.models import ImportProposal
from memoryadmin.models import AuditEvent
from tests.agents.conftest import GHP

PROPOSE = ["reviews:propose"]


def _body(**extra):  # type: ignore[no-untyped-def]
    return {"repository": "app", "type": "gotcha", "title": "Uploads need a retry", **extra}


def test_it_refuses_text_that_looks_like_a_credential_naming_the_rule_not_the_value(
    world, team, token_client
):
    response = token_client(team, PROPOSE).post(
        "/api/memories/", _body(body=f"Use token={GHP} to upload."), format="json"
    )
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "secret-detected" and "github-token" in error["details"]["rules"]
    assert GHP not in response.content.decode()
    assert ImportProposal.objects.count() == 0
    assert not AuditEvent.objects.filter(action="agents.propose").exists()


@pytest.mark.parametrize(
    ("extra", "status", "code"),
    [
        ({"links": ["../outside"]}, 400, "link-outside-repo"),
        ({"links": ["/etc/passwd"]}, 400, "link-outside-repo"),
        ({"type": "spaceship"}, 400, "type-unknown"),
        ({"title": ""}, 400, "title-required"),
        ({"title": "two\nlines"}, 400, "title-invalid"),
        ({"body": "x" * 20_001}, 400, "body-too-long"),
        ({"repository": "nope"}, 404, "repository-not-found"),
        ({"supersedes": "20990101-nothing"}, 404, "supersedes-not-found"),
        ({"tags": "a\x00b"}, 400, "tags-invalid"),
    ],
)
def test_it_answers_bad_proposals_with_a_coded_4xx_and_writes_nothing(
    world, team, token_client, extra, status, code
):
    response = token_client(team, PROPOSE).post("/api/memories/", _body(**extra), format="json")
    assert response.status_code == status, response.content
    assert response.json()["error"]["code"] == code
    assert ImportProposal.objects.count() == 0


def test_it_needs_the_propose_scope(world, team, token_client):
    response = token_client(team, ["context:read"]).post("/api/memories/", _body(), format="json")
    assert response.status_code == 403


def test_it_refuses_the_same_proposal_twice(
    world, team, token_client, django_capture_on_commit_callbacks
):
    client = token_client(team, PROPOSE)
    first = client.post("/api/memories/", _body(), format="json")
    assert first.status_code == 202, first.content
    second = client.post("/api/memories/", _body(), format="json")
    assert second.status_code == 409 and second.json()["error"]["code"] == "already-proposed"


def test_it_takes_a_proposal_at_the_review_queue_url_too(world, team, token_client):
    client = token_client(team, PROPOSE)
    response = client.post("/api/reviews/proposals/", _body(), format="json")
    assert response.status_code == 202, response.content
    assert response.json()["status"] in ("proposed", "active")
    assert ImportProposal.objects.count() == 1
    refused = token_client(team, ["reviews:read"]).post(
        "/api/reviews/proposals/", _body(title="Another"), format="json"
    )
    assert refused.status_code == 403
