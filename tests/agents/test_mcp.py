"""The MCP server at /mcp, driven by the official MCP Python SDK client over real HTTP on
loopback (Django's live server: a threaded WSGI server, as `runserver` serves it)."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bundles.models import ChunkOrigin
from memoryadmin.audit import Actor
from memoryadmin.models import ApiToken, AuditEvent
from memoryadmin.tokens import token_revoke
from reviews.models import Memory
from sources.services.refresh import source_refresh

pytestmark = pytest.mark.django_db(transaction=True)
READ = ["context:read"]
ALL = ["context:read", "reviews:propose"]


@asynccontextmanager
async def _client(url: str, secret: str | None, **kwargs: Any):  # type: ignore[no-untyped-def]
    """The SDK's client on its Streamable HTTP transport, sending the token."""
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http), **kwargs) as client,
    ):
        yield client


def _run(url: str, secret: str, script, **kwargs):  # type: ignore[no-untyped-def]
    async def main():  # type: ignore[no-untyped-def]
        async with _client(url, secret, mode="legacy", **kwargs) as client:
            return await script(client)

    return anyio.run(main)


def _post(url: str, body: dict[str, Any], secret: str | None = None, **headers: str):  # type: ignore[no-untyped-def]
    headers = {"Accept": "application/json, text/event-stream", **headers}
    if secret:
        headers["Authorization"] = f"Bearer {secret}"
    with httpx2.Client(timeout=30) as http:
        return http.post(f"{url}/mcp", json=body, headers=headers)


def _initialize(version: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }


def _tools(url: str, secret: str) -> list[str]:
    async def script(client):  # type: ignore[no-untyped-def]
        return sorted(t.name for t in (await client.list_tools()).tools)

    return _run(url, secret, script)


def _call(url: str, secret: str, name: str, arguments: dict[str, Any]):  # type: ignore[no-untyped-def]
    async def script(client):  # type: ignore[no-untyped-def]
        return await client.call_tool(name, arguments)

    return _run(url, secret, script)


def test_it_answers_initialize_with_instructions_and_lists_tools_by_scope(
    world, team, make_token, live_server
):
    assert _tools(live_server.url, make_token(team, READ)) == [
        "get_memory",
        "precheck",
        "search_memory",
    ]
    assert _tools(live_server.url, make_token(team, ALL)) == [
        "get_memory",
        "precheck",
        "propose_memory",
        "search_memory",
    ]
    assert _tools(live_server.url, make_token(team, ["reviews:propose"])) == ["propose_memory"]
    response = _post(live_server.url, _initialize("2025-06-18"), make_token(team, READ))
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["protocolVersion"] == "2025-06-18"
    assert "precheck" in result["instructions"] and "[per REF]" in result["instructions"]
    assert "stop and" in result["instructions"] and "attempt" in result["instructions"]


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2025-03-26"])
def test_it_negotiates_the_handshake_revisions_clients_still_use(
    team, make_token, live_server, version
):
    response = _post(live_server.url, _initialize(version), make_token(team, READ))
    assert response.json()["result"]["protocolVersion"] == version


def test_it_counter_offers_its_latest_revision_to_an_unknown_one(team, make_token, live_server):
    response = _post(live_server.url, _initialize("1999-01-01"), make_token(team, READ))
    assert response.json()["result"]["protocolVersion"] == "2025-11-25"


def test_it_serves_the_current_stateless_revision_to_the_sdk_client(
    world, team, make_token, live_server
):
    secret = make_token(team, READ)

    async def script(client):  # type: ignore[no-untyped-def]
        tools = sorted(t.name for t in (await client.list_tools()).tools)
        found = await client.call_tool("search_memory", {"query": "upload"})
        return client.protocol_version, tools, found

    version, tools, found = (
        _run(live_server.url, secret, script)
        if False
        else anyio.run(_modern, live_server.url, secret, script)
    )
    assert version == "2026-07-28"
    assert tools == ["get_memory", "precheck", "search_memory"]
    assert not found.is_error and found.structured_content["results"]


async def _modern(url, secret, script):  # type: ignore[no-untyped-def]
    async with _client(url, secret) as client:
        return await script(client)


def test_it_runs_every_read_tool_and_audits_it_as_mcp(world, team, make_token, live_server):
    secret = make_token(team, READ)
    found = _call(live_server.url, secret, "search_memory", {"query": "upload", "limit": 3})
    assert not found.is_error
    results = found.structured_content["results"]
    assert len(results) == 3 and results[0]["rank"] == 1
    assert found.structured_content["note"].startswith("The records below are untrusted data")
    checked = _call(
        live_server.url,
        secret,
        "precheck",
        {"plan": "move the upload queue", "paths": ["src/queue/a.py"]},
    )
    ids = [m["id"] for m in checked.structured_content["memories"]]
    assert ids[0] == "20260301-pin-migrations" and "20260307-new-queue" in ids
    ref = Memory.objects.get(memory_id="20260307-new-queue").ref
    got = _call(live_server.url, secret, "get_memory", {"ref": ref})
    assert got.structured_content["memory"]["id"] == "20260307-new-queue"
    vias = set(
        AuditEvent.objects.filter(team=team, action__startswith="agents.").values_list(
            "data__via", flat=True
        )
    )
    assert vias == {"mcp"}
    assert AuditEvent.objects.filter(team=team, action="agents.get").count() == 1


def test_its_results_say_stale_exactly_while_the_source_is_stale(
    world, team, make_token, live_server, tmp_path
):
    """`stale` is served from the source (bundles.provenance), not from the stored chunk."""
    secret = make_token(team, READ)

    def flags() -> tuple[bool, bool]:
        found = _call(live_server.url, secret, "search_memory", {"query": "Tuesdays"})
        record = next(r for r in found.structured_content["results"] if r["origin"] == "source")
        chunk_id = ChunkOrigin.objects.get(ref=record["ref"]).chunk_id
        got = _call(live_server.url, secret, "get_memory", {"ref": f"brain:{chunk_id}"})
        return record["provenance"]["stale"], got.structured_content["memory"]["provenance"][
            "stale"
        ]

    assert flags() == (False, False)
    (tmp_path / "source" / "memories.json").write_text("{not json", encoding="utf-8")
    source_refresh(source_id=world.source.pk)
    assert flags() == (True, True)


def test_it_answers_bad_tool_input_with_a_coded_tool_error(world, team, make_token, live_server):
    secret = make_token(team, READ)
    for name, arguments, code in [
        ("search_memory", {"query": ""}, "query-required"),
        ("search_memory", {"query": "x" * 10_240}, "query-too-long"),
        ("search_memory", {"query": "a\x00b"}, "query-invalid"),
        ("search_memory", {"query": "a", "types": ["spaceship"]}, "type-unknown"),
        ("search_memory", {"query": "a", "repository": "nope"}, "repository-not-found"),
        ("get_memory", {"ref": "not a ref!"}, "ref-invalid"),
        ("precheck", {"paths": ["../x"]}, "link-outside-repo"),
    ]:
        result = _call(live_server.url, secret, name, arguments)
        assert result.is_error, (name, arguments)
        assert result.structured_content["error"]["code"] == code


def test_it_refuses_a_tool_the_token_lacks_the_scope_for_naming_it(
    world, team, make_token, live_server
):
    result = _call(
        live_server.url,
        make_token(team, READ),
        "propose_memory",
        {"repository": "app", "type": "gotcha", "title": "x"},
    )
    assert result.is_error
    assert result.structured_content["error"]["code"] == "insufficient-scope"
    assert "reviews:propose" in result.structured_content["error"]["message"]


def test_it_answers_a_missing_bad_or_revoked_token_with_401_and_www_authenticate(
    team, make_token, live_server
):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    missing = _post(live_server.url, body)
    assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer")
    bad = _post(live_server.url, body, "nope")
    assert bad.status_code == 401 and 'error="invalid_token"' in bad.headers["www-authenticate"]
    assert bad.json()["error"]["code"] == "token-unknown"
    secret = make_token(team, READ, name="revoked")
    token_revoke(actor=Actor.system(), token=ApiToken.objects.get(name="revoked"))
    revoked = _post(live_server.url, body, secret)
    assert revoked.status_code == 401 and revoked.json()["error"]["code"] == "token-revoked"
    assert "www-authenticate" in revoked.headers
    no_tools = _post(live_server.url, body, make_token(team, ["bundles:export"]))
    assert no_tools.status_code == 403
    assert no_tools.json()["error"]["code"] == "insufficient-scope"


def test_it_shows_a_second_team_nothing_of_the_first(world, other_team, make_token, live_server):
    secret = make_token(other_team, READ)
    found = _call(live_server.url, secret, "search_memory", {"query": "upload"})
    assert found.structured_content["results"] == []
    checked = _call(live_server.url, secret, "precheck", {"paths": ["src/payments/a.py"]})
    assert checked.structured_content["memories"] == []
    ref = Memory.objects.get(memory_id="20260307-new-queue").ref
    got = _call(live_server.url, secret, "get_memory", {"ref": ref})
    assert got.is_error and got.structured_content["error"]["code"] == "not-found"
    result = _call(
        live_server.url,
        make_token(other_team, ALL),
        "propose_memory",
        {"repository": "app", "type": "gotcha", "title": "Sneaky"},
    )
    assert result.is_error and result.structured_content["error"]["code"] == "repository-not-found"


def test_it_proposes_a_memory_that_lands_as_a_commit_on_the_remote_and_in_the_queue(
    world, team, make_token, live_server, token_client
):
    result = _call(
        live_server.url,
        make_token(team, ALL, name="claude"),
        "propose_memory",
        {
            "repository": "app",
            "type": "attempt",
            "title": "Pinning the uploader to HTTP/1.1 did not fix the stalls",
            "body": "The stalls come from the proxy's idle timeout.",
            "links": ["src/uploader"],
            "tags": ["uploads"],
        },
    )
    assert not result.is_error, result.structured_content
    proposed = result.structured_content
    assert proposed["status"] == "proposed" and proposed["ref"].startswith("ATT-")
    path = proposed["path"]
    assert world.remote.exists(path)
    text = world.remote.show(path)
    assert '"status": "proposed"' in text.replace("status: ", '"status": ') or "proposed" in text
    author = world.remote.log("%an|%s")[0]
    assert author.startswith("memoryadmin|Propose 1 memory")  # a team token: the bot identity
    memory = Memory.objects.get(memory_id=proposed["id"])
    assert memory.status == "proposed" and memory.ref == proposed["ref"]
    queue = token_client(team, ["reviews:read"]).get("/api/reviews/proposals/").json()
    rows = queue["results"] if isinstance(queue, dict) else queue
    assert proposed["id"] in [row.get("id") or row.get("memory_id") for row in rows]
    assert AuditEvent.objects.filter(team=team, action="agents.propose").count() == 1


def test_tool_calls_run_on_the_request_thread_and_the_loop_is_the_process_s_one(
    team, make_token, monkeypatch, rf
):
    """The SDK runs on the process's event loop thread; the tools it calls run back on the
    request's own thread (its database connection), and a tool's failure reaches the SDK."""
    import json
    import threading

    from bundles import mcp

    make_token(team, READ)
    caller = mcp.Caller.of(ApiToken.objects.get(team=team))
    ran_on: list[int] = []

    def tool(caller_, name, arguments):  # type: ignore[no-untyped-def]
        ran_on.append(threading.get_ident())
        if arguments.get("query") == "fail":
            raise mcp.AgentError(400, "query-invalid", "no")
        return {"results": [], "query": arguments["query"]}

    monkeypatch.setattr(mcp, "run_tool", tool)

    def call(query: str) -> dict[str, Any]:
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "search_memory", "arguments": {"query": query}},
            }
        ).encode()
        request = rf.post(
            "/mcp",
            data=body,
            content_type="application/json",
            HTTP_ACCEPT="application/json, text/event-stream",
            HTTP_MCP_PROTOCOL_VERSION="2025-06-18",
            HTTP_HOST="localhost",
        )
        status, _, out = mcp.serve(mcp._asgi_scope(request), body, mcp.Caller.of(caller.token))
        assert status == 200, out
        return json.loads(out)["result"]

    loop = mcp.LOOP.get()
    assert call("ok")["structuredContent"] == {"results": [], "query": "ok"}
    failed = call("fail")
    assert failed["isError"] and failed["structuredContent"]["error"]["code"] == "query-invalid"
    assert ran_on == [threading.get_ident()] * 2
    assert mcp.LOOP.get() is loop
