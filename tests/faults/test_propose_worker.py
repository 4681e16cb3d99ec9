"""propose_memory over MCP, pushed by a real Celery worker process to a real bare remote.

The web side (Django's live server) only records the proposal and queues the push; a worker
process started here commits it as the token's person — or the bot identity for a team token —
pushes it, and re-indexes, after which the proposal is in the review queue.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bundles.models import ImportProposal, ProposalState
from memoryadmin.audit import Actor
from memoryadmin.celery import app
from memoryadmin.models import Role
from memoryadmin.tokens import token_create
from reviews.models import Memory
from tests.conftest import wait_for
from tests.faults.workers import worker
from tests.reviews.conftest import data_dir, remote, repository  # noqa: F401

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]
SCOPES = ["context:read", "reviews:propose"]


@pytest.fixture
def sent_to_workers():  # type: ignore[no-untyped-def]
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = False
    yield
    app.conf.task_always_eager = previous


def _propose(url: str, secret: str, arguments: dict[str, Any]) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {secret}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
        ):
            result = await client.call_tool("propose_memory", arguments)
            assert not result.is_error, result.structured_content
            return result.structured_content

    return anyio.run(main)


def _queue_ids(token_client, team) -> list[str]:  # type: ignore[no-untyped-def]
    queue = token_client(team, ["reviews:read"]).get("/api/reviews/proposals/").json()
    rows = queue["results"] if isinstance(queue, dict) else queue
    return [row.get("id") or row.get("memory_id") for row in rows]


def test_a_worker_pushes_mcp_proposals_as_the_tokens_person_or_the_bot(
    team,
    repository,  # noqa: F811
    remote,  # noqa: F811
    make_user,
    make_token,
    token_client,
    live_server,
    tmp_path,
    sent_to_workers,
):
    person = make_user("petra", team=team, role=Role.REVIEWER)
    _, personal = token_create(
        actor=Actor(user=person), team=team, name="petra-agent", scopes=SCOPES
    )
    bot = make_token(team, SCOPES, name="ci-agent")
    heads = len(remote.log())
    with worker(tmp_path, queue=app.conf.task_default_queue, pool="solo"):
        mine = _propose(
            live_server.url,
            personal,
            {
                "repository": "app",
                "type": "attempt",
                "title": "Caching the token lookup per request did not help",
                "body": "The time goes to the password hash, not the query.",
                "links": ["src/auth"],
            },
        )
        # Nothing was pushed by the web process: the proposal waits for the worker.
        assert mine["status"] == "proposed" and mine["push"]["state"] == ProposalState.PENDING
        theirs = _propose(
            live_server.url,
            bot,
            {"repository": "app", "type": "gotcha", "title": "The CI cache expires at midnight"},
        )
        for result in (mine, theirs):
            wait_for(lambda r=result: Memory.objects.filter(memory_id=r["id"]).exists(), timeout=90)
        wait_for(
            lambda: not ImportProposal.objects.exclude(state=ProposalState.PUSHED).exists(),
            timeout=60,
        )

    for result in (mine, theirs):
        assert remote.exists(result["path"])
        assert '"proposed"' in remote.show(result["path"]) or "proposed" in remote.show(
            result["path"]
        )
        memory = Memory.objects.get(memory_id=result["id"])
        assert memory.status == "proposed" and memory.ref == result["ref"]
    log = remote.log("%an|%ae|%s")
    assert len(log) == heads + 2
    authors = {line.split("|")[0]: line for line in log[:2]}
    assert "Petra" in authors and authors["Petra"].split("|")[1] == "petra@example.org"
    assert "memoryadmin" in authors  # the team token: the bot identity
    queued = _queue_ids(token_client, team)
    assert mine["id"] in queued and theirs["id"] in queued
