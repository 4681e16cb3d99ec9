"""precheck's provenance: who approved each memory it returns — the reviewer of the latest
pushed approval, else the author of the commit that added the file — and, on PostgreSQL where
the provenance is folded into the answer's one statement (bundles.agents.precheck_sql), the
same answer as reviews.selectors.memory_provenance for the same memories."""

from __future__ import annotations

import pytest

from memoryadmin.audit import Actor
from reviews.models import Decision, Memory, PushState
from reviews.selectors import memory_provenance
from reviews.services.decisions import proposal_approve

PROPOSED = "20260308-proposed-gotcha"  # links src/payments (tests/agents/conftest.py)


@pytest.fixture
def approved(world, reviewer_user, django_capture_on_commit_callbacks):  # type: ignore[no-untyped-def]
    memory = Memory.objects.get(repository=world.repository, memory_id=PROPOSED)
    with django_capture_on_commit_callbacks(execute=True):
        decision = proposal_approve(actor=Actor(user=reviewer_user), memory=memory)
    decision.refresh_from_db()
    assert decision.state == PushState.PUSHED, decision.state_detail
    return decision


def _precheck(client, **body):  # type: ignore[no-untyped-def]
    response = client.post("/api/precheck/", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def test_a_memory_approved_in_review_names_its_reviewer_and_the_approval_commit(
    world, team, token_client, approved: Decision
):
    client = token_client(team, ["context:read"])
    body = _precheck(client, paths=["src/payments/webhooks/stripe.py"])
    item = next(m for m in body["memories"] if m["id"] == PROPOSED)
    assert item["provenance"]["approval"] == "review"
    assert item["provenance"]["approved_by"] == approved.actor_label
    assert item["provenance"]["commit"] == approved.commit_sha
    assert len(approved.commit_sha) == 40
    # a memory committed as active needs no review: its commit and author
    pinned = next(m for m in body["memories"] if m["id"] == "20260301-pin-migrations")
    assert pinned["provenance"]["approval"] == "commit"
    assert pinned["provenance"]["approved_by"] == "Agent Smith"


def test_the_provenance_is_memory_provenance_for_the_same_memories(
    world, team, token_client, approved: Decision
):
    client = token_client(team, ["context:read"])
    body = _precheck(
        client,
        plan="retry the upload queue and the payment webhooks",
        paths=["src/payments/api.py", "src/settings.py", "src/queue/worker.py"],
    )
    ids = [m["id"] for m in body["memories"]]
    assert PROPOSED in ids and len(ids) >= 4
    memories = list(Memory.objects.filter(repository=world.repository, memory_id__in=ids))
    expected = memory_provenance(world.repository, memories)
    for item in body["memories"]:
        got = {k: item["provenance"][k] for k in ("commit", "approved_by", "approval")}
        assert got == expected[item["id"]], item["id"]
    assert {expected[i]["approval"] for i in ids} == {"review", "commit"}
