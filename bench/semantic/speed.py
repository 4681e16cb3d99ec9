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
                    **(columns(i) if callable(columns) else columns),  # type: ignore[operator]
                )
                for i, t in enumerate(texts[start : start + 5000], start)
            ]
        )


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


def search(team: Any, n: int, queries: int) -> dict[str, Any]:
    from django.db import connection

    from bundles.agents.search import search_memory
    from bundles.embeddings import model, store
    from bundles.embeddings.lifecycle import brain_model_adopt
    from bundles.selectors import served_chunks

    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((n, model.MODEL_DIM)).astype("<f4")
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    _insert(
        team,
        _texts(n, seed=9),
        embedding_model=model.MODEL_NAME,
        embedding_dim=model.MODEL_DIM,
    )
    brain_model_adopt(team=team)
    ids = list(served_chunks(team).order_by("id").values_list("id", flat=True))
    for start in range(0, n, 2000):
        store.write_vectors(
            [(pk, matrix[start + i]) for i, pk in enumerate(ids[start : start + 2000])],
            model=model.MODEL_NAME,
        )
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE bundles_chunk")
    probes = rng.standard_normal((queries, model.MODEL_DIM)).astype("<f4")
    probes /= np.linalg.norm(probes, axis=1, keepdims=True)
    texts = [
        f"how do we {WORDS[i % len(WORDS)]} the {WORDS[(i * 7) % len(WORDS)]}"
        for i in range(queries)
    ]
    model.encode(texts[:8])  # warm up
    served = served_chunks(team)
    rows: dict[str, Any] = {"backend": store.backend(), "chunks": n}
    rows["encode"] = _timed(lambda i: model.encode_one(texts[i]), queries)
    rows["hybrid"] = _timed(lambda i: search_memory(team=team, query=texts[i], limit=10), queries)
    rows["vector"] = _timed(
        lambda i: store.nearest(
            served, probes[i], model=model.MODEL_NAME, dim=model.MODEL_DIM, limit=50
        ),
        queries,
    )
    rows["raw"] = _timed(_raw_nearest(team, matrix, ids, probes), queries)
    return rows


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
    keys = np.asarray(ids)

    def numpy_nn(i: int) -> Any:
        scores = matrix @ probes[i]
        top = np.argpartition(-scores, 50)[:50]
        return keys[top[np.argsort(-scores[top])]]

    return numpy_nn


def run_speed(args: Any, make_team: Callable[[str], Any]) -> dict[str, Any]:
    return {
        "throughput": throughput(make_team("throughput"), args.embed),
        "reembed": reembed(make_team, args.reembed),
        "search": search(make_team("search"), args.search, args.queries),
    }
