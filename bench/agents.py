"""6: the agent read path under load. A brain of N chunks and a repository of memories are
served by gunicorn with several worker processes; 20 concurrent clients call search and
precheck over REST and as MCP `tools/call`; the baselines are the same ranking SQL (and, for
hybrid search, the raw pgvector nearest-neighbour statement) sent straight through the driver
from 20 connections in the same run (bench/steps/agents.py).

Every search request asks a query no other request of the run asks (agentdata.distinct_queries),
so the web processes' query-vector cache never answers the headline rows; one extra row repeats
20 queries to show what the cache gives. Keyword-only search runs on a server with
MEMORYADMIN_SEMANTIC_ENABLED=false, hybrid on one with it on (when the extra is installed).
The load generator is this process (20 threads, httpx), separate from gunicorn's; its CPU per
request is printed beside each row because on 2 cores it competes with the server's."""

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
from bench.load import BAR_MS, paced_sweep, run_load
from bench.report import Row, _ratio

CLIENTS = 20
WEB_WORKERS = 4
THREADS = 5  # 4 processes x 5 threads: a request in flight per client, as the SQL baseline
MCP_VERSION = "2025-06-18"
REQUESTS_PER_URL = 5  # --requests 200 (full) -> 1,000 requests per operation and face
# The paced (open-loop) rows: 20 agents, each sending one request every 2 s at the stated rate
# (an agent that searches or prechecks before each step of its work, steps a few seconds
# apart), and the sweep that finds the highest total rate whose p95 stays under 50 ms.
AGENT_RATE = 10.0
PACED_RATES = [1.0, 2.0, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0]
PACED_SECONDS = 10.0  # per rate (--quick: 5)


@contextmanager
def serving(run: Run, workers: int = WEB_WORKERS, *, semantic: bool = True) -> Iterator[str]:
    """gunicorn (gthread: `workers` processes of THREADS threads) on loopback with persistent
    database connections, as a deployment under load would run it; yields its base URL."""
    import httpx

    port = _free_port()
    env = {
        **run.env,
        "MEMORYADMIN_DB_CONN_MAX_AGE": "600",
        "MEMORYADMIN_SEMANTIC_ENABLED": "true" if semantic else "false",
    }
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
            "--graceful-timeout",
            "10",
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
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:  # a worker still holding a keep-alive connection
            server.kill()
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
    """(face, operation) -> one request function over the queries and plans (request n asks
    queries[n % len]: give total + clients distinct queries and no query repeats, warm-ups
    included)."""

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
        + (f" (client CPU {t['client_cpu_ms']:.1f} ms/req)" if "client_cpu_ms" in t else "")
    )


def _raw(t: dict[str, Any], what: str) -> str:
    return f"{what} p95 {t['p95_ms']:.1f} ms (p50 {t['p50_ms']:.1f}, {t['throughput']:.0f}/s)"


def _at_rate(sweep: dict[str, Any], rate: float = AGENT_RATE) -> dict[str, Any]:
    """The sweep's run at `rate` (the stated agent rate; or the last it reached)."""
    runs = sweep["runs"]
    return next((r for r in runs if r["rate"] == rate), runs[-1])


def _paced(sweep: dict[str, Any], label: str = "") -> str:
    at = _at_rate(sweep)
    return (
        f"{label}at {at['rate']:.0f}/s: p50 {at['p50_ms']:.1f} / p95 {at['p95_ms']:.1f} / "
        f"p99 {at['p99_ms']:.1f} ms; p95 < {BAR_MS:.0f} ms up to {sweep['max_rate']:.0f} req/s"
        + ("" if sweep["max_rate"] else " (none of the rates)")
    )


def _part_vectors(run: Run) -> tuple[str, dict[str, Any] | None]:
    """The model's vectors of the notes' sentence parts, when the semantic extra runs here."""
    path = run.workdir / "agents-part-vectors.json"
    found = run.step("agents_part_vectors", parts=agentdata.vector_parts(), path=str(path))
    if not found["model"]:
        return "", None
    vectors = json.loads(path.read_text(encoding="utf-8"))
    path.unlink(missing_ok=True)
    return found["model"], vectors


def bench_agents(run: Run) -> None:
    chunks, memories = max(run.args.chunk_sizes), run.args.memories
    total = max(CLIENTS, run.args.requests * REQUESTS_PER_URL)
    team = "bench-agents"
    model, part_vectors = _part_vectors(run)
    bundle = run.workdir / "agents-bundle.json"
    agentdata.write_bundle(bundle, chunks, model=model, part_vectors=part_vectors)
    bare = agentdata.write_repository(run.workdir / "agents-git", memories)
    setup = run.step("agents_setup", team=team, path=str(bundle), remote_url=bare.as_uri())
    bundle.unlink(missing_ok=True)
    if setup["imported"] != chunks or setup["memories"] != memories:
        raise SystemExit(f"agents setup: {setup}")
    semantic = bool(model) and setup.get("searchable", 0) > 0
    per_face = total + CLIENTS  # the warm-ups ask their own queries too
    distinct = agentdata.distinct_queries(3 * per_face, seed=15)
    keyword_q, hybrid_q, mcp_q = (distinct[i * per_face : (i + 1) * per_face] for i in range(3))
    bodies = agentdata.precheck_bodies()
    import httpx

    headers = {
        "Authorization": f"Bearer {setup['secret']}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MCP_VERSION,
    }
    timings: dict[tuple[str, str], dict[str, Any]] = {}

    def load(base: str, key: tuple[str, str], request: Any) -> None:
        def make_client() -> Any:
            return httpx.Client(base_url=base, headers=headers, timeout=300)

        timings[key] = run_load(make_client, request, clients=CLIENTS, total=total)

    seconds = PACED_SECONDS / 2 if run.args.quick else PACED_SECONDS
    rates = PACED_RATES
    if total <= CLIENTS:  # a smoke run (--requests below 5): the stated rate only, briefly
        seconds, rates = 2 * CLIENTS / AGENT_RATE, [AGENT_RATE]
    paced: dict[tuple[str, str], dict[str, Any]] = {}
    paced_q = agentdata.distinct_queries(40_000, seed=16)
    numbering = {"next": 0}

    def sweep(base: str, key: tuple[str, str], request: Any) -> None:
        def make_client() -> Any:
            return httpx.Client(base_url=base, headers=headers, timeout=300)

        found = paced_sweep(
            make_client,
            request,
            clients=CLIENTS,
            rates=rates,
            seconds=seconds,
            first=numbering["next"],
            through=AGENT_RATE,
        )
        numbering["next"] = found["next"]
        paced[key] = found

    with serving(run, semantic=False) as base:
        faces = requests_for(keyword_q, bodies)
        load(base, ("REST", "search"), faces[("REST", "search")])
        load(base, ("REST", "precheck"), faces[("REST", "precheck")])
        load(base, ("MCP", "precheck"), faces[("MCP", "precheck")])
        if not semantic:
            load(base, ("MCP", "search"), requests_for(mcp_q, bodies)[("MCP", "search")])
        paced_faces = requests_for(paced_q, bodies)
        sweep(base, ("REST", "search"), paced_faces[("REST", "search")])
        sweep(base, ("MCP", "search"), paced_faces[("MCP", "search")])
        sweep(base, ("REST", "precheck"), paced_faces[("REST", "precheck")])
        sweep(base, ("MCP", "precheck"), paced_faces[("MCP", "precheck")])
    if semantic:
        with serving(run, semantic=True) as base:
            load(base, ("REST", "hybrid"), requests_for(hybrid_q, bodies)[("REST", "search")])
            load(base, ("MCP", "search"), requests_for(mcp_q, bodies)[("MCP", "search")])
            repeated = list(agentdata.QUERIES)
            load(base, ("REST", "cached"), requests_for(repeated, bodies)[("REST", "search")])
            paced_faces = requests_for(paced_q, bodies)
            sweep(base, ("REST", "hybrid"), paced_faces[("REST", "search")])
            sweep(base, ("MCP", "hybrid"), paced_faces[("MCP", "search")])
    found = run.step(
        "agents_sql",
        team=team,
        queries=keyword_q[:total],
        hybrid_queries=hybrid_q[:total] if semantic else [],
        bodies=bodies,
        clients=CLIENTS,
        requests=total,
        paced={"rates": rates, "seconds": seconds, "through": AGENT_RATE},
    )
    sql, backend = found["timings"], found.get("vector_backend", "")
    sql_paced = found["paced"]
    size = (
        f"{chunks:,} chunks, {memories:,} memories, {CLIENTS} clients, "
        f"{WEB_WORKERS} procs x {THREADS} threads"
    )
    rows = [
        ("agents: search (REST, gunicorn)", ("REST", "search"), "search", "keyword SQL"),
        ("agents: precheck (REST, gunicorn)", ("REST", "precheck"), "precheck", "precheck SQL"),
    ]
    if semantic and "hybrid" in sql:
        rows.append(
            (
                "agents: hybrid search (REST, gunicorn)",
                ("REST", "hybrid"),
                "hybrid",
                "keyword SQL + pgvector SQL",
            )
        )
    for name, key, baseline, what in rows:
        served, raw = timings[key], sql[baseline]
        ratio = _ratio(served["p95_ms"], raw["p95_ms"])
        run.add(
            Row(
                name,
                size,
                _measured(served),
                _raw(raw, what),
                f"{ratio:.1f}x",
                "<= 2x SQL, p95 < 50 ms",
                ratio <= 2 and served["p95_ms"] < 50,
            )
        )
    if semantic:
        part, raw = sql["vector_part"], sql["vector_raw"]
        ratio = _ratio(part["p95_ms"], raw["p95_ms"])
        what = "raw pgvector SQL" if backend == "pgvector" else "numpy exact, in memory"
        run.add(
            Row(
                f"agents: hybrid's vector part ({backend}, {CLIENTS} threads)",
                size,
                _measured(part),
                _raw(raw, what),
                f"{ratio:.1f}x",
                "<= 2x raw",
                ratio <= 2,
            )
        )
    search_key = ("REST", "hybrid") if semantic else ("REST", "search")
    for operation, rest_key in (("search", search_key), ("precheck", ("REST", "precheck"))):
        rest, mcp = timings[rest_key], timings[("MCP", operation)]
        ratio = _ratio(mcp["p95_ms"], rest["p95_ms"])
        kind = "hybrid " if operation == "search" and semantic else ""
        run.add(
            Row(
                f"agents: {operation} (MCP tools/call)",
                size,
                _measured(mcp),
                f"REST {kind}p95 {rest['p95_ms']:.1f} ms",
                f"{ratio:.1f}x",
                "<= 1.5x REST",
                ratio <= 1.5,
            )
        )
    if semantic:
        cached, fresh = timings[("REST", "cached")], timings[("REST", "hybrid")]
        ratio = _ratio(cached["p95_ms"], fresh["p95_ms"])
        run.add(
            Row(
                "agents: hybrid search, 20 repeated queries (vector cache hits)",
                size,
                _measured(cached),
                f"distinct queries p95 {fresh['p95_ms']:.1f} ms",
                f"{ratio:.1f}x",
                "(shown only)",
                None,
            )
        )
    paced_rows = [
        ("search, keyword", ("REST", "search"), "search"),
        ("search, keyword", ("MCP", "search"), "search"),
        ("precheck", ("REST", "precheck"), "precheck"),
        ("precheck", ("MCP", "precheck"), "precheck"),
        ("search, hybrid", ("REST", "hybrid"), "hybrid"),
        ("search, hybrid", ("MCP", "hybrid"), "hybrid"),
    ]
    for what, key, baseline in paced_rows:
        if key not in paced:
            continue
        served, raw = paced[key], sql_paced.get(baseline)
        at = _at_rate(served)
        raw_at = _at_rate(raw, at["rate"]) if raw else None
        ratio = _ratio(at["p95_ms"], raw_at["p95_ms"]) if raw_at else None
        run.add(
            Row(
                f"agents paced: {what} ({key[0]}), {CLIENTS} clients at {AGENT_RATE:.0f} req/s",
                size,
                _paced(served),
                _paced(raw, "SQL ") if raw else "(no raw baseline)",
                f"{ratio:.1f}x" if ratio is not None else "-",
                f"p95 < {BAR_MS:.0f} ms at {AGENT_RATE:.0f} req/s",
                at["rate"] == AGENT_RATE and at["p95_ms"] < BAR_MS,
            )
        )
    if not run.args.quiet:
        print(json.dumps({"agents_paced": {f"{f} {o}": t for (f, o), t in paced.items()}}))
        print(json.dumps({"agents_sql_paced": sql_paced}))
        print(json.dumps({"agents": {f"{f} {o}": t for (f, o), t in timings.items()}}))
        print(json.dumps({"agents_sql": sql}))
