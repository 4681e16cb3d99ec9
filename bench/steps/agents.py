"""Agents steps: a team with a large brain and a repository of memories, and the baseline —
the ranking SQL the read path issues, sent straight through the database driver from as many
concurrent connections as the HTTP run has clients."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.steps.helpers import _team
from bench.steps.measure import Probe

# -- agents ---------------------------------------------------------------------------------


def agents_setup(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """Import the bundle, index the repository (which mirrors its memories into the brain),
    and make a token that may read and propose."""
    from bundles.imports import bundle_import_file
    from bundles.models import Chunk
    from memoryadmin.audit import Actor
    from memoryadmin.tokens import token_create
    from reviews.models import Memory, Repository
    from reviews.services.repositories import repository_sync

    team = _team(args["team"])
    with probe():
        report = bundle_import_file(team=team, actor=Actor.system(), path=Path(args["path"]))
        repository = Repository.objects.create(
            team=team, name="app", remote_url=args["remote_url"], branch="main"
        )
        repository = repository_sync(repository_id=repository.pk)
    if not repository.last_sync_ok:
        raise RuntimeError(f"sync failed: {repository.last_error}")
    from django.db import connection

    if connection.vendor == "postgresql":  # the statistics autovacuum keeps on a live brain
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE bundles_chunk, bundles_chunkorigin, reviews_memory")
    _, secret = token_create(
        actor=Actor.system(),
        team=team,
        name=f"bench-agents-{time.time_ns()}",
        scopes=["context:read", "reviews:propose"],
    )
    return {
        "secret": secret,
        "chunks": Chunk.objects.filter(team=team).count(),
        "imported": report["report"]["chunks"]["inserted"],
        "memories": Memory.objects.filter(repository=repository).count(),
    }


def _search_sql(team: Any, query: str) -> Any:
    """The ranking statement of search_memory for `query` (filters as the REST view's)."""
    from django.utils import timezone

    from bundles.agents.ranking import keyword_match
    from bundles.agents.search import search_filters

    chunks = search_filters(
        team=team,
        scopes=[],
        types=[],
        origins=[],
        repository_id=None,
        include_flagged=False,
        now=timezone.now(),
    )
    matched = keyword_match(chunks, query)
    return matched.order_by("-keyword_score", "-id").values_list("id", "keyword_score")[:10]


def _precheck_sql(team: Any, body: dict[str, Any]) -> list[Any]:
    """The statements precheck ranks with: the narrow read of pinned and linked memories,
    and the text match of the plan's words over the repository memories' mirrored chunks."""
    from django.db.models import Exists
    from django.utils import timezone

    from bundles.agents import precheck as module
    from bundles.agents.ranking import any_word_query, keyword_match
    from bundles.selectors import active_origins, served_chunks

    statements = [module.linked_memories(team, None, list(body.get("paths") or []))]
    query = any_word_query(str(body.get("plan") or ""))
    if query:
        now = timezone.now()
        chunks = served_chunks(team, now).filter(
            Exists(active_origins(now=now).filter(kind="repository")),
            memory_type__in=("x_constraint", "pitfall", "decision"),
        )
        matched = keyword_match(chunks, query)
        limit = module.MAX_TEXT_MATCHES * 3
        statements.append(
            matched.order_by("-keyword_score", "-id").values_list("id", "keyword_score")[:limit]
        )
    return statements


def _compiled(querysets: list[Any]) -> list[tuple[str, tuple]]:
    return [qs.query.sql_with_params() for qs in querysets]


def _connect() -> Any:
    """A new driver connection to the benchmark database (no Django in between)."""
    from django.db import connection

    if connection.vendor == "postgresql":
        import psycopg

        params = connection.get_connection_params()
        params.pop("cursor_factory", None)
        params.pop("context", None)
        return psycopg.connect(**params, autocommit=True)
    import sqlite3

    return sqlite3.connect(connection.settings_dict["NAME"], check_same_thread=False)


def agents_sql(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """The same ranking SQL through the driver: `clients` connections, each its share of
    `requests` statements per operation, round-robin over the queries."""
    from django.db import connection

    from bench.load import percentiles

    team = _team(args["team"])
    plans = {
        "search": [_compiled([_search_sql(team, q)]) for q in args["queries"]],
        "precheck": [_compiled(_precheck_sql(team, body)) for body in args["bodies"]],
    }
    sqlite = connection.vendor == "sqlite"
    clients, total = args["clients"], args["requests"]
    connections = [_connect() for _ in range(clients)]
    results: dict[str, Any] = {}
    try:
        for operation, statements in plans.items():

            def work(index: int, statements: list = statements) -> list[float]:
                db = connections[index]
                samples = []
                for n in range(index, total, clients):
                    start = time.perf_counter()
                    for sql, params in statements[n % len(statements)]:
                        if sqlite:
                            sql = sql.replace("%s", "?")
                        db.execute(sql, params).fetchall()
                    samples.append(time.perf_counter() - start)
                return samples

            for statement in statements:  # warm: plans and pages, as a running server has them
                for sql, params in statement:
                    sql = sql.replace("%s", "?") if sqlite else sql
                    connections[0].execute(sql, params).fetchall()
            started = time.perf_counter()
            with ThreadPoolExecutor(clients) as pool:
                samples = [s for part in pool.map(work, range(clients)) for s in part]
            elapsed = time.perf_counter() - started
            results[operation] = {**percentiles(samples), "throughput": len(samples) / elapsed}
    finally:
        for db in connections:
            db.close()
    return {"timings": results}
