"""6: the agent read path under load. A brain of N chunks and a repository of memories are
served by gunicorn with several worker processes; 20 concurrent clients call search and
precheck over REST and as MCP `tools/call`; the baseline is the same ranking SQL sent straight
through the driver from 20 connections in the same run (bench/steps/agents.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bench import agentdata
from bench.benchmarks import ROOT, Run, _free_port
from bench.load import run_load
from bench.report import Row, _ratio

CLIENTS = 20
WEB_WORKERS = 4
THREADS = 5  # 4 processes x 5 threads: a request in flight per client, as the SQL baseline
MCP_VERSION = "2025-06-18"
REQUESTS_PER_URL = 5  # --requests 200 (full) -> 1,000 requests per operation and face


@contextmanager
def serving(run: Run, workers: int = WEB_WORKERS) -> Iterator[str]:
    """gunicorn (gthread: `workers` processes of THREADS threads) on loopback with persistent
    database connections, as a deployment under load would run it; yields its base URL."""
    import httpx

    port = _free_port()
    env = {**run.env, "MEMORYADMIN_DB_CONN_MAX_AGE": "600"}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "memoryadmin.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--worker-class",
            "gthread",
            "--threads",
            str(THREADS),
            "--keep-alive",  # longer than a client's idle wait at the start barrier
            "75",
            "--backlog",
            "256",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                httpx.get(f"{base}/accounts/login/", timeout=5)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)


def _mcp_call(name: str, arguments: dict[str, Any], n: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": n + 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def _mcp_status(response: Any) -> int:
    """200 only for a tool result that is not a tool error."""
    if response.status_code != 200:
        return response.status_code
    body = response.json()
    if "result" not in body or body["result"].get("isError"):
        raise RuntimeError(f"MCP call failed: {response.text[:500]}")
    return 200


def requests_for(queries: list[str], bodies: list[dict[str, Any]]) -> dict[str, Any]:
    """(face, operation) -> one request function over the varied queries and plans."""

    def rest_search(client: Any, n: int) -> int:
        return client.get("/api/search/", params={"q": queries[n % len(queries)]}).status_code

    def rest_precheck(client: Any, n: int) -> int:
        return client.post("/api/precheck/", json=bodies[n % len(bodies)]).status_code

    def mcp_search(client: Any, n: int) -> int:
        call = _mcp_call("search_memory", {"query": queries[n % len(queries)]}, n)
        return _mcp_status(client.post("/mcp", json=call))

    def mcp_precheck(client: Any, n: int) -> int:
        return _mcp_status(
            client.post("/mcp", json=_mcp_call("precheck", bodies[n % len(bodies)], n))
        )

    return {
        ("REST", "search"): rest_search,
        ("REST", "precheck"): rest_precheck,
        ("MCP", "search"): mcp_search,
        ("MCP", "precheck"): mcp_precheck,
    }


def _measured(t: dict[str, Any]) -> str:
    return (
        f"p50 {t['p50_ms']:.1f} / p95 {t['p95_ms']:.1f} / p99 {t['p99_ms']:.1f} ms, "
        f"{t['throughput']:.0f} req/s"
    )


def bench_agents(run: Run) -> None:
    chunks, memories = max(run.args.chunk_sizes), run.args.memories
    total = max(CLIENTS, run.args.requests * REQUESTS_PER_URL)
    team = "bench-agents"
    bundle = run.workdir / "agents-bundle.json"
    agentdata.write_bundle(bundle, chunks)
    bare = agentdata.write_repository(run.workdir / "agents-git", memories)
    setup = run.step("agents_setup", team=team, path=str(bundle), remote_url=bare.as_uri())
    bundle.unlink(missing_ok=True)
    if setup["imported"] != chunks or setup["memories"] != memories:
        raise SystemExit(f"agents setup: {setup}")
    queries, bodies = list(agentdata.QUERIES), agentdata.precheck_bodies()
    import httpx

    headers = {
        "Authorization": f"Bearer {setup['secret']}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MCP_VERSION,
    }
    timings: dict[tuple[str, str], dict[str, Any]] = {}
    with serving(run) as base:

        def make_client() -> Any:
            return httpx.Client(base_url=base, headers=headers, timeout=60)

        for key, request in requests_for(queries, bodies).items():
            timings[key] = run_load(make_client, request, clients=CLIENTS, total=total)
    sql = run.step(
        "agents_sql", team=team, queries=queries, bodies=bodies, clients=CLIENTS, requests=total
    )["timings"]
    size = (
        f"{chunks:,} chunks, {memories:,} memories, {CLIENTS} clients, "
        f"{WEB_WORKERS} procs x {THREADS} threads"
    )
    for operation in ("search", "precheck"):
        rest, raw = timings[("REST", operation)], sql[operation]
        ratio = _ratio(rest["p95_ms"], raw["p95_ms"])
        run.add(
            Row(
                f"agents: {operation} (REST, gunicorn)",
                size,
                _measured(rest),
                f"raw SQL p95 {raw['p95_ms']:.1f} ms ({raw['throughput']:.0f}/s)",
                f"{ratio:.1f}x",
                "<= 2x SQL, p95 < 50 ms",
                ratio <= 2 and rest["p95_ms"] < 50,
            )
        )
    for operation in ("search", "precheck"):
        rest, mcp = timings[("REST", operation)], timings[("MCP", operation)]
        ratio = _ratio(mcp["p95_ms"], rest["p95_ms"])
        run.add(
            Row(
                f"agents: {operation} (MCP tools/call)",
                size,
                _measured(mcp),
                f"REST p95 {rest['p95_ms']:.1f} ms",
                f"{ratio:.1f}x",
                "<= 1.5x REST",
                ratio <= 1.5,
            )
        )
    if not run.args.quiet:
        print(json.dumps({"agents": {f"{f} {o}": t for (f, o), t in timings.items()}}))
