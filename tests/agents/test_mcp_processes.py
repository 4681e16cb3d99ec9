"""The MCP server holds no state in a process: gunicorn with three worker processes on loopback,
on the test database, driven by the official MCP SDK client from several sessions at once.

gunicorn's access log names the worker (`%(p)s`, `<pid>`) that answered each request, and
each request carries the session and step that sent it (`X-Test-Step`), so the test can show a
session whose handshake one process answered and whose tool calls others did.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from django.db import connection
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from reviews.models import Memory
from tests.conftest import ROOT, _worker_env
from tests.faults.load import free_port

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]
WORKERS = 3
SESSIONS = 4
ROUNDS = 2
READ_AND_PROPOSE = ["context:read", "reviews:propose"]
LOG_LINE = re.compile(r"^<(?P<pid>\d+)> (?P<step>\S+) (?P<request>\"[^\"]*\") (?P<status>\d+)$")


@pytest.fixture
def gunicorn(world, tmp_path) -> Iterator[tuple[str, Path]]:  # type: ignore[no-untyped-def]
    """gunicorn (3 sync workers) on the test database; yields its URL and its access log."""
    if connection.vendor != "postgresql":
        pytest.skip("gunicorn's processes share the test database only on PostgreSQL")
    port = free_port()
    access = tmp_path / "access.log"
    env = {
        **_worker_env(),
        "MEMORYADMIN_CELERY_EAGER": "true",  # the web process pushes the proposal itself
        "MEMORYADMIN_DATA_DIR": str(tmp_path / "web-data"),
        "PYTHONPATH": str(ROOT),
    }
    output = (tmp_path / "gunicorn.log").open("w")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "memoryadmin.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(WORKERS),
            "--timeout",
            "120",
            "--access-logfile",
            str(access),
            "--access-logformat",
            '%(p)s %({x-test-step}i)s "%(r)s" %(s)s',
        ],
        cwd=ROOT,
        env=env,
        stdout=output,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if server.poll() is not None:
                pytest.fail("gunicorn exited:\n" + (tmp_path / "gunicorn.log").read_text())
            with suppress(httpx2.TransportError):  # not listening yet
                if httpx2.get(f"{url}/accounts/login/", timeout=5).status_code == 200:
                    break
            if time.monotonic() > deadline:
                pytest.fail("gunicorn did not answer:\n" + (tmp_path / "gunicorn.log").read_text())
            time.sleep(0.2)
        yield url, access
    finally:
        server.terminate()
        server.wait(timeout=30)
        output.close()


@asynccontextmanager
async def _session(url: str, secret: str, name: str):  # type: ignore[no-untyped-def]
    """The SDK client (legacy handshake: initialize first), every request tagged with its step."""
    step = 0

    async def tag(request: Any) -> None:
        nonlocal step
        step += 1
        request.headers["X-Test-Step"] = f"{name}/{step}"

    headers = {"Authorization": f"Bearer {secret}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60, event_hooks={"request": [tag]}) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http), mode="legacy") as client,
    ):
        yield client


def _read_session(url: str, secret: str, name: str, ref: str) -> dict[str, Any]:
    """initialize, tools/list and every read tool, twice; what each answered."""

    async def main() -> dict[str, Any]:
        async with _session(url, secret, name) as client:
            seen: dict[str, Any] = {
                "tools": sorted(t.name for t in (await client.list_tools()).tools)
            }
            for _ in range(2):
                found = await client.call_tool("search_memory", {"query": "upload", "limit": 3})
                checked = await client.call_tool(
                    "precheck", {"plan": "move the upload queue", "paths": ["src/queue/a.py"]}
                )
                got = await client.call_tool("get_memory", {"ref": ref})
                assert not (found.is_error or checked.is_error or got.is_error)
                seen.setdefault("search", []).append(
                    [r["ref"] for r in found.structured_content["results"]]
                )
                seen.setdefault("precheck", []).append(
                    [m["id"] for m in checked.structured_content["memories"]]
                )
                seen.setdefault("get", []).append(got.structured_content["memory"]["id"])
            return seen

    return anyio.run(main)


def _propose(url: str, secret: str, name: str, title: str) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        async with _session(url, secret, name) as client:
            result = await client.call_tool(
                "propose_memory",
                {"repository": "app", "type": "gotcha", "title": title, "links": ["src/queue"]},
            )
            assert not result.is_error, result.structured_content
            return result.structured_content

    return anyio.run(main)


def _served(access: Path) -> dict[str, list[int]]:
    """session name -> the pids that answered its MCP requests, in order."""
    by_session: dict[str, list[tuple[int, int]]] = {}
    for line in access.read_text().splitlines():
        match = LOG_LINE.match(line.strip())
        if match is None or "/mcp" not in match["request"] or match["step"] == "-":
            continue
        assert match["status"] in ("200", "202"), line
        session, step = match["step"].rsplit("/", 1)
        by_session.setdefault(session, []).append((int(step), int(match["pid"])))
    return {name: [pid for _, pid in sorted(steps)] for name, steps in by_session.items()}


def test_every_tool_works_whichever_process_answers(gunicorn, world, team, make_token):
    url, access = gunicorn
    secret = make_token(team, READ_AND_PROPOSE)
    ref = Memory.objects.get(memory_id="20260307-new-queue").ref
    answers = []
    with ThreadPoolExecutor(SESSIONS) as pool:
        for round_ in range(ROUNDS):
            names = [f"r{round_}s{n}" for n in range(SESSIONS)]
            answers += list(pool.map(lambda name: _read_session(url, secret, name, ref), names))
    proposed = [
        _propose(url, secret, f"propose{n}", f"The queue drops message {n} on restart")
        for n in range(3)
    ]
    time.sleep(0.5)  # gunicorn writes the access log line after the response
    served = _served(access)

    # The same answers from every process: nothing cached or kept in one of them.
    assert len(answers) == SESSIONS * ROUNDS
    assert all(a["tools"] == answers[0]["tools"] for a in answers)
    assert answers[0]["tools"] == ["get_memory", "precheck", "propose_memory", "search_memory"]
    for key in ("search", "precheck", "get"):
        values = {repr(v) for a in answers for v in a[key]}
        assert len(values) == 1, (key, values)
    assert answers[0]["get"][0] == "20260307-new-queue"

    # Requests landed on every worker; sessions were served by more than one process.
    pids = {pid for steps in served.values() for pid in steps}
    assert len(pids) == WORKERS, served
    assert os.getpid() not in pids
    spread = [name for name, steps in served.items() if len(set(steps)) > 1]
    assert spread, served
    for name in (f"r{r}s{n}" for r in range(ROUNDS) for n in range(SESSIONS)):
        assert len(served[name]) >= 8, (name, served[name])  # initialize, list, six calls

    # Each proposal was committed and pushed by the process that took it, and indexed.
    for n, result in enumerate(proposed):
        assert result["status"] == "proposed", result
        assert result["push"], result
        memory = Memory.objects.get(memory_id=result["id"])
        assert memory.status == "proposed"
        assert memory.title == f"The queue drops message {n} on restart"
        assert world.remote.exists(result["path"])
