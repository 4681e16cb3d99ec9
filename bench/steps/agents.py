"""Agents steps: a team with a large brain and a repository of memories, and the baselines —
the ranking SQL the read path issues, sent straight through the database driver from as many
concurrent connections as the HTTP run has clients; for hybrid search also the raw nearest-
neighbour statement (pgvector, or numpy over every vector in memory where pgvector is absent)
and the service's own vector part (store.nearest over the search filters) under the same load."""

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
    from bundles.embeddings import store
    from bundles.embeddings.team_model import searchable_model

    model_dim = searchable_model(team)
    return {
        "secret": secret,
        "searchable": store.vector_count(team.pk, *model_dim) if model_dim else 0,
        "chunks": Chunk.objects.filter(team=team).count(),
        "imported": report["report"]["chunks"]["inserted"],
        "memories": Memory.objects.filter(repository=repository).count(),
    }


def agents_part_vectors(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """The model's vectors of the bench notes' sentence parts (bench.agentdata.vector_parts),
    written as JSON to args["path"]; nothing when the semantic extra does not run here."""
    import json

    from bundles.embeddings import model

    if not model.available():
        return {"model": ""}
    parts = list(args["parts"])
    with probe():
        vectors = model.encode(parts)
    Path(args["path"]).write_text(
        json.dumps({text: vector.tolist() for text, vector in zip(parts, vectors, strict=True)}),
        encoding="utf-8",
    )
    return {"model": model.MODEL_NAME, "parts": len(parts)}


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
    # search_memory reads this deep before fusing (bundles.agents.meaning.CANDIDATES)
    return matched.order_by("-keyword_score", "-id").values_list("id", "keyword_score")[:50]


def _precheck_sql(team: Any, body: dict[str, Any]) -> list[tuple[str, Any]]:
    """The statements that give precheck's answer, with the parameters the service sends: on
    PostgreSQL the one statement of bundles.agents.precheck_sql (the plan's text match with its
    chunks' repository refs, the answer's rows — link match, pinned key and text hits —, the
    shared-ref count and the provenance). The read log's write is left out: the baseline is the
    read alone, so the ratio includes the audit. Elsewhere: the narrow link read and the text
    match (the SQLite service sends more)."""
    import posixpath

    from django.db import connection
    from django.utils import timezone

    from bundles.agents import precheck as module
    from bundles.agents import precheck_sql
    from bundles.agents.ranking import any_word_query, keyword_match

    now = timezone.now()
    paths = [posixpath.normpath(p) for p in body.get("paths") or []]
    if connection.vendor == "postgresql":
        query = module._plan_query(str(body.get("plan") or ""))
        sql = precheck_sql.statement(text=bool(query), paths=bool(paths), repository=False)
        params = {
            "team": team.pk,
            "now": now,
            "query": query,
            "depth": module.TEXT_DEPTH,
            "paths": module.path_ancestors(paths),
            "repository": None,
        }
        return [(sql, params)]
    query = any_word_query(str(body.get("plan") or ""))
    chunks = module.text_chunks(team, None, now)
    statements = [module.linked_memories(team, None, paths)]
    matched = keyword_match(chunks, query) if query else None
    if matched is not None:
        ranked = matched.order_by("-keyword_score", "-id")
        statements.append(ranked.values_list("id", "keyword_score")[: module.TEXT_DEPTH])
    return _compiled(statements)


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


def _nearest_sql(team: Any, vector: Any, limit: int) -> tuple[str, tuple]:
    """The raw nearest-neighbour statement: the team's vectors by cosine distance, no other
    filter, through the same HNSW index (ef_search and iterative scan set as the service's)."""
    from bundles.embeddings.store import vector_literal

    literal = vector_literal(vector)
    return (
        "SELECT id, embedding_vector <=> %s::vector AS distance FROM bundles_chunk "
        "WHERE team_id = %s AND embedding_vector IS NOT NULL ORDER BY distance LIMIT %s",
        (literal, team.pk, limit),
    )


def _timed(clients: int, total: int, work_one: Any, setup: Any = None) -> dict[str, Any]:
    """`total` calls of work_one(index, n) from `clients` threads at once; percentiles."""
    from bench.load import percentiles

    def work(index: int) -> list[float]:
        if setup is not None:
            setup(index)
        samples = []
        for n in range(index, total, clients):
            start = time.perf_counter()
            work_one(index, n)
            samples.append(time.perf_counter() - start)
        return samples

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        samples = [s for part in pool.map(work, range(clients)) for s in part]
    elapsed = time.perf_counter() - started
    return {**percentiles(samples), "throughput": len(samples) / elapsed}


def agents_sql(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """The same ranking SQL through the driver: `clients` connections, each its share of
    `requests` statements per operation, round-robin over the queries. With `hybrid_queries`
    and the team's vectors searchable here, also: the keyword statement plus the raw
    nearest-neighbour statement per query (`hybrid`), the raw nearest-neighbour statement
    alone (`vector_raw`), and the service's vector part, store.nearest over search_filters
    through Django (`vector_part`); the query vectors are encoded before the clock starts."""
    from django.db import connection

    from bundles.agents.meaning import CANDIDATES
    from bundles.embeddings import store
    from bundles.embeddings.team_model import searchable_model

    team = _team(args["team"])
    plans = {
        "search": [_compiled([_search_sql(team, q)]) for q in args["queries"]],
        "precheck": [_precheck_sql(team, body) for body in args["bodies"]],
    }
    model_dim = searchable_model(team) if args.get("hybrid_queries") else None
    vectors: list[Any] = []
    pgvector = store.backend() == store.PGVECTOR
    if model_dim is not None:
        from bundles.embeddings import model as embedding_model

        hybrid = list(args["hybrid_queries"])
        vectors = list(embedding_model.encode(hybrid))
        if pgvector:
            plans["vector_raw"] = [[_nearest_sql(team, vector, CANDIDATES)] for vector in vectors]
            plans["hybrid"] = [
                [*_compiled([_search_sql(team, q)]), _nearest_sql(team, vector, CANDIDATES)]
                for q, vector in zip(hybrid, vectors, strict=True)
            ]
    sqlite = connection.vendor == "sqlite"
    clients, total = args["clients"], args["requests"]
    connections = [_connect() for _ in range(clients)]
    if pgvector:
        for db in connections:  # the service's settings for its filtered HNSW scan
            db.execute("SET hnsw.iterative_scan = relaxed_order")
            db.execute(f"SET hnsw.ef_search = {max(store.HNSW_EF_SEARCH, CANDIDATES)}")
    results: dict[str, Any] = {}
    paced: dict[str, Any] = {}
    try:
        for operation, statements in plans.items():

            def run_one(index: int, n: int, statements: list = statements) -> None:
                db = connections[index]
                for sql, params in statements[n % len(statements)]:
                    if sqlite:
                        sql = sql.replace("%s", "?")
                    db.execute(sql, params).fetchall()

            for statement in statements:  # warm: plans and pages, as a running server has them
                for sql, params in statement:
                    sql = sql.replace("%s", "?") if sqlite else sql
                    connections[0].execute(sql, params).fetchall()
            results[operation] = _timed(clients, total, run_one)
            if args.get("paced") and operation in ("search", "precheck", "hybrid"):
                paced[operation] = _paced(connections, run_one, args["paced"])
        if model_dim is not None:
            model, dim = model_dim
            if not pgvector:
                results["vector_raw"] = _numpy_nearest(team, model, dim, vectors, clients, total)
            results["vector_part"] = _vector_part(team, model, dim, vectors, clients, total)
    finally:
        for db in connections:
            db.close()
    return {
        "timings": results,
        "paced": paced,
        "vector_backend": store.backend() if model_dim else "",
    }


def _paced(connections: list[Any], run_one: Any, paced: dict[str, Any]) -> dict[str, Any]:
    """The HTTP rows' paced sweep (bench.load.paced_sweep) over the same statements: one
    driver connection per client, the statements of request n as run_one sends them."""
    import itertools
    import threading
    from contextlib import nullcontext

    from bench.load import paced_sweep

    handed = itertools.count()
    lock = threading.Lock()

    def make_client() -> Any:  # each run's `clients` threads take one connection each
        with lock:
            return nullcontext(next(handed) % len(connections))

    def request(index: int, n: int) -> int:
        run_one(index, n)
        return 200

    return paced_sweep(
        make_client,
        request,
        clients=len(connections),
        rates=list(paced["rates"]),
        seconds=float(paced["seconds"]),
        through=float(paced.get("through", 0.0)),
    )


def _vector_part(
    team: Any, model: str, dim: int, vectors: list[Any], clients: int, total: int
) -> dict[str, Any]:
    """search_memory's meaning signal alone: store.nearest over the search filters (Django,
    one connection per thread), the query vector given."""
    from django.db import connections as django_connections
    from django.utils import timezone

    from bundles.agents.meaning import CANDIDATES
    from bundles.agents.search import search_filters
    from bundles.embeddings import store

    def chunks() -> Any:
        return search_filters(
            team=team,
            scopes=[],
            types=[],
            origins=[],
            repository_id=None,
            include_flagged=False,
            now=timezone.now(),
        )

    def run_one(index: int, n: int) -> None:
        store.nearest(chunks(), vectors[n % len(vectors)], model=model, dim=dim, limit=CANDIDATES)

    for vector in vectors[:5]:
        store.nearest(chunks(), vector, model=model, dim=dim, limit=CANDIDATES)
    try:
        return _timed(clients, total, run_one)
    finally:
        django_connections.close_all()


def _numpy_nearest(
    team: Any, model: str, dim: int, vectors: list[Any], clients: int, total: int
) -> dict[str, Any]:
    """Without pgvector: the exact nearest 50 by numpy over every vector of the team, held in
    memory as one matrix (read before the clock starts): the least an exact scan can cost."""
    import numpy as np

    from bundles.agents.meaning import CANDIDATES
    from bundles.models import Chunk

    rows = Chunk.objects.filter(
        team=team, embedding_model=model, embedding_dim=dim, embedding__isnull=False
    ).values_list("id", "embedding")
    ids = np.asarray([pk for pk, _ in rows], dtype=np.int64)
    matrix = np.vstack([np.frombuffer(bytes(blob), dtype="<f4") for _, blob in rows])

    def run_one(index: int, n: int) -> None:
        scores = matrix @ vectors[n % len(vectors)]
        top = np.argpartition(-scores, CANDIDATES)[:CANDIDATES]
        ids[top[np.argsort(-scores[top])]].tolist()

    return _timed(clients, total, run_one)
