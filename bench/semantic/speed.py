"""Speed rows of the semantic benchmark, each a ratio against a baseline in the same run:
- embedding throughput: the lifecycle's batched run against the model's own batch `encode`;
- re-embedding after a model change: peak memory growth at N/10 and at N chunks (flat);
- search: hybrid search_memory latency, its vector part, and a raw nearest-neighbour query
  on the same data (pgvector SQL, or numpy over an in-memory matrix where there is no pgvector).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from bench.steps.measure import Probe

WORDS = (
    "deploy", "release", "queue", "upload", "cache", "token", "review", "branch", "schema",
    "backup", "invoice", "tenant", "gateway", "metrics", "alert", "worker", "replica",
    "timeout", "retry", "config", "secret", "vault", "ledger", "export", "import", "index",
    "shard", "latency", "budget", "runbook", "incident", "rollback", "canary", "migration",
)  # fmt: skip


def _texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        f"Note {i}: the {rng.choice(WORDS)} {rng.choice(WORDS)} of service {i % 97} "
        f"needs a {rng.choice(WORDS)} before the {rng.choice(WORDS)} step."
        for i in range(n)
    ]


def _insert(team: Any, texts: list[str], **columns: Any) -> None:
    from bundles.models import Chunk
    from formats import memoryai as protocol

    for start in range(0, len(texts), 5000):
        Chunk.objects.bulk_create(
            [
                Chunk(
                    team=team,
                    content=t,
                    content_hash=protocol.content_hash(t),
                    memory_type="fact",
                    **{k: v(i) if callable(v) else v for k, v in columns.items()},
                )
                for i, t in enumerate(texts[start : start + 5000], start)
            ]
        )


def fill_random(team: Any, n: int, seed: int) -> np.ndarray:
    """n chunks holding random unit vectors of the model's dimension (the search rows: the
    vector part's speed does not depend on what the vectors mean, and embedding 100k texts
    on a shared 2-core machine takes hours). On pgvector the HNSW index is dropped while the
    vectors are written and built again after, as a bulk load would (a few minutes at 100k,
    not the hour of 100k inserts into the graph)."""
    from django.db import connection

    from bundles.embeddings import model, schema, store
    from bundles.models import Chunk

    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((n, model.MODEL_DIM)).astype("<f4")
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    floor = Chunk.objects.order_by("-id").values_list("id", flat=True).first() or 0
    for start in range(0, n, 5000):
        part = matrix[start : start + 5000]
        _insert(
            team,
            _texts(len(part), seed=seed * 1000 + start),
            embedding_model=model.MODEL_NAME,
            embedding_dim=model.MODEL_DIM,
            embedding=lambda i, part=part: part[i].tobytes(),
        )
    if store.backend() == store.PGVECTOR:
        added = Chunk.objects.filter(team=team, pk__gt=floor).order_by("id")
        ids = list(added.values_list("id", flat=True))
        with connection.cursor() as cursor:
            cursor.execute("DROP INDEX IF EXISTS chunk_embedding_hnsw")
        for start in range(0, n, 2000):
            store.fill_vectors(
                list(zip(ids[start : start + 2000], matrix[start : start + 2000], strict=True))
            )
        with connection.cursor() as cursor:
            cursor.execute("SET maintenance_work_mem = '512MB'")
            cursor.execute(schema.INSTALL[1])  # CREATE INDEX IF NOT EXISTS ... USING hnsw
            cursor.execute("RESET maintenance_work_mem")
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE bundles_chunk")
    return matrix


def throughput(team: Any, n: int, rounds: int = 3) -> dict[str, Any]:
    """The worker's run against model.encode on the same texts, in `rounds` rounds of fresh
    chunks whose order alternates (encode first, then run first, ...): on a shared machine the
    load drifts, and a baseline measured only before the run would carry the drift."""
    from bundles.embeddings import model
    from bundles.embeddings.lifecycle import brain_embed, brain_model_adopt

    brain_model_adopt(team=team)  # set before the timing: it is not part of the run
    model.get_model()
    model.encode(_texts(64, seed=0))  # warm up
    encode_s = embed_s = 0.0
    embedded = 0
    per_round = max(1, n // rounds)
    for round_no in range(rounds):
        texts = _texts(per_round, seed=100 + round_no)
        _insert(team, texts)

        def timed_encode(texts: list[str] = texts) -> float:
            started = time.perf_counter()
            model.encode(texts)
            return time.perf_counter() - started

        def timed_run() -> tuple[float, int]:
            started = time.perf_counter()
            run = brain_embed(team_id=team.pk)
            return time.perf_counter() - started, run.embedded

        if round_no % 2 == 0:
            encode_s += timed_encode()
            seconds, done = timed_run()
        else:
            seconds, done = timed_run()
            encode_s += timed_encode()
        embed_s += seconds
        embedded += done
    return {
        "chunks": embedded,
        "rounds": rounds,
        "encode_per_s": per_round * rounds / encode_s,
        "embed_per_s": embedded / embed_s,
        "ratio": (encode_s / (per_round * rounds)) / (embed_s / max(embedded, 1)),
    }


def reembed(make_team: Callable[[str], Any], n: int) -> dict[str, Any]:
    """Peak RSS growth of a model-change re-embed at n/10 and n chunks (flat: about equal)."""
    from bundles.embeddings import model
    from bundles.embeddings.lifecycle import brain_embed
    from bundles.models import BrainSettings

    model.get_model()
    foreign = np.ones(model.MODEL_DIM, dtype="<f4").tobytes()
    rows = {}
    for label, size in (("tenth", max(1, n // 10)), ("full", n)):
        team = make_team(f"reembed-{label}")
        _insert(
            team,
            _texts(size, seed=size),
            embedding=foreign,
            embedding_model="old-model",
            embedding_dim=model.MODEL_DIM,
        )
        BrainSettings.objects.create(
            team=team, embedding_model=model.MODEL_NAME, embedding_dim=model.MODEL_DIM
        )
        probe = Probe()
        with probe():
            run = brain_embed(team_id=team.pk)
        rows[label] = {
            "chunks": run.embedded,
            "seconds": probe.seconds,
            "rss_mb": probe.rss_growth_mb,
        }
    return rows


def _percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": ordered[len(ordered) // 2] * 1000,
        "p95_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] * 1000,
    }


def _timed(function: Callable[[int], Any], count: int) -> dict[str, float]:
    samples = []
    for i in range(count):
        started = time.perf_counter()
        function(i)
        samples.append(time.perf_counter() - started)
    return _percentiles(samples)


def _timed_pair(
    first: Callable[[int], Any], second: Callable[[int], Any], count: int
) -> tuple[dict[str, float], dict[str, float]]:
    """Both timed on the same queries, interleaved (first/second, then second/first, ...) so
    a drift in the machine's load falls on both alike."""
    samples: tuple[list[float], list[float]] = ([], [])
    for i in range(count):
        order = ((0, first), (1, second)) if i % 2 == 0 else ((1, second), (0, first))
        for slot, function in order:
            started = time.perf_counter()
            function(i)
            samples[slot].append(time.perf_counter() - started)
    return _percentiles(samples[0]), _percentiles(samples[1])


def search(team: Any, n: int, queries: int, exact_queries: int = 10) -> dict[str, Any]:
    from bundles.agents.search import search_memory
    from bundles.embeddings import model, store
    from bundles.embeddings.lifecycle import brain_model_adopt
    from bundles.models import Chunk
    from bundles.selectors import served_chunks

    brain_model_adopt(team=team)
    matrix = fill_random(team, n, seed=3)
    ids = list(Chunk.objects.filter(team=team).order_by("id").values_list("id", flat=True))
    rng = np.random.default_rng(4)
    probes = rng.standard_normal((queries, model.MODEL_DIM)).astype("<f4")
    probes /= np.linalg.norm(probes, axis=1, keepdims=True)
    texts = [
        f"how do we {WORDS[i % len(WORDS)]} the {WORDS[(i * 7) % len(WORDS)]}"
        for i in range(queries)
    ]
    model.encode(texts[:8])  # warm up
    served = served_chunks(team)
    name, dim = model.MODEL_NAME, model.MODEL_DIM
    rows: dict[str, Any] = {"backend": store.backend(), "chunks": n, "vectors": "random unit"}
    rows["encode"] = _timed(lambda i: model.encode_one(texts[i]), queries)
    rows["hybrid"] = _timed(lambda i: search_memory(team=team, query=texts[i], limit=10), queries)
    rows["vector"], rows["raw"] = _timed_pair(
        lambda i: store.nearest(served, probes[i], model=name, dim=dim, limit=50),
        _raw_nearest(team, matrix, ids, probes),
        queries,
    )
    if store.backend() == store.PGVECTOR:
        rows["plan"] = nearest_plan(served, probes[0])
    # The exact-scan backend (what SQLite and plain PostgreSQL run) on the same rows, against
    # numpy over the same vectors held in memory.
    exact_count = min(exact_queries, queries)
    rows["exact"], rows["numpy"] = _timed_pair(
        lambda i: store._nearest_exact(
            served.filter(embedding_model=name, embedding_dim=dim), [probes[i]], 50
        ),
        _numpy_nearest(matrix, ids, probes),
        exact_count,
    )
    rows["exact_queries"] = exact_count
    return rows


def nearest_plan(chunks: Any, vector: np.ndarray) -> str:
    """EXPLAIN of the vector part's query, as search runs it (the HNSW index, or not)."""
    from django.db import connection, transaction

    from bundles.embeddings import model, store

    chunks = chunks.filter(
        embedding_model=model.MODEL_NAME, embedding_dim=model.MODEL_DIM, embedding__isnull=False
    )
    sql, params = store.pgvector_query(chunks, vector, 50)
    with transaction.atomic(), connection.cursor() as cursor:
        store.pgvector_session(cursor, 50)
        cursor.execute("EXPLAIN " + sql, params)
        plan = [row[0] for row in cursor.fetchall()]
    scan = next((line.strip() for line in plan if " Scan " in line or "Scan on" in line), "")
    return scan.split("  (cost")[0]


def _numpy_nearest(matrix: np.ndarray, ids: list[int], probes: np.ndarray):  # type: ignore[no-untyped-def]
    keys = np.asarray(ids)

    def numpy_nn(i: int) -> Any:
        scores = matrix @ probes[i]
        top = np.argpartition(-scores, 50)[:50]
        return keys[top[np.argsort(-scores[top])]]

    return numpy_nn


def _raw_nearest(team: Any, matrix: np.ndarray, ids: list[int], probes: np.ndarray):  # type: ignore[no-untyped-def]
    from django.db import connection, transaction

    from bundles.embeddings import store

    if store.backend() == store.PGVECTOR:

        def pgvector(i: int) -> list[Any]:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SET LOCAL hnsw.ef_search = 100")
                cursor.execute(
                    "SELECT id FROM bundles_chunk WHERE team_id = %s "
                    "ORDER BY embedding_vector <=> %s::vector LIMIT 50",
                    [team.pk, store.vector_literal(probes[i])],
                )
                return cursor.fetchall()

        return pgvector
    return _numpy_nearest(matrix, ids, probes)


def run_speed(args: Any, make_team: Callable[[str], Any]) -> dict[str, Any]:
    return {
        "throughput": throughput(make_team("throughput"), args.embed),
        "reembed": reembed(make_team, args.reembed),
        "search": search(make_team("search"), args.search, args.queries),
    }
