"""Where vectors live and how the nearest ones are found.

Two backends, same answers (cosine similarity, ties by newer chunk first):
- "pgvector": PostgreSQL with the extension (migration bundles/0008): the `embedding_vector`
  column, HNSW index, `<=>` cosine distance; the team and the search filters are WHERE clauses,
  with pgvector's iterative index scan so a filter never starves the result.
- "exact scan": everywhere else. The float32 blobs of the filtered chunks are read in id
  ranges of SCAN_BATCH rows, scored with numpy and merged into a running top k, so memory stays
  bounded (SCAN_BATCH x 384 x 4 bytes) whatever the brain's size.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import connection, transaction
from django.db.models import BooleanField, FloatField, QuerySet
from django.db.models.expressions import RawSQL

from bundles.embeddings.schema import has_vector_column
from bundles.models import Chunk

if TYPE_CHECKING:
    import numpy as np

PGVECTOR = "pgvector"
EXACT = "exact scan"
SCAN_BATCH = 4096
HNSW_EF_SEARCH = 100

_backend_by_db: dict[str, str] = {}


@dataclass(frozen=True)
class Neighbour:
    chunk_id: int
    similarity: float  # cosine, -1..1


def backend() -> str:
    """ "pgvector" or "exact scan" for the default database (looked up once per process)."""
    key = f"{connection.vendor}:{connection.settings_dict.get('NAME')}"
    if key not in _backend_by_db:
        _backend_by_db[key] = PGVECTOR if has_vector_column(connection) else EXACT
    return _backend_by_db[key]


def forget_backend() -> None:
    _backend_by_db.clear()


def vector_literal(vector: Iterable[float]) -> str:
    """pgvector's text form: [0.1,0.2,...] (repr of a float round-trips exactly)."""
    values = vector.tolist() if hasattr(vector, "tolist") else [float(x) for x in vector]
    return "[" + ",".join(map(repr, values)) + "]"


def to_blob(vector: np.ndarray) -> bytes:
    import numpy as np

    return np.asarray(vector, dtype="<f4").tobytes()


def from_blob(blob: bytes | memoryview, dim: int) -> np.ndarray | None:
    import numpy as np

    data = bytes(blob)
    if len(data) != dim * 4:
        return None
    return np.frombuffer(data, dtype="<f4")


def blob_floats(blob: bytes | memoryview, dim: int) -> list[float] | None:
    """The blob's numbers without numpy (the pgvector backfill runs without the extra)."""
    data = bytes(blob)
    if len(data) != dim * 4:
        return None
    return list(struct.unpack(f"<{dim}f", data))


def nearest(
    chunks: QuerySet[Chunk], vector: np.ndarray, *, model: str, dim: int, limit: int
) -> list[Neighbour]:
    """The `limit` chunks of `chunks` whose vector (of `model`) is nearest to `vector`."""
    return nearest_many(chunks, [vector], model=model, dim=dim, limit=limit)[0]


def nearest_many(
    chunks: QuerySet[Chunk], vectors: list[np.ndarray], *, model: str, dim: int, limit: int
) -> list[list[Neighbour]]:
    """`nearest` for several vectors at once: one transaction on pgvector, one pass over the
    blobs on the exact scan (the import report's and the reviewer hints' batches)."""
    chunks = chunks.filter(embedding_model=model, embedding_dim=dim, embedding__isnull=False)
    if limit <= 0 or not vectors:
        return [[] for _ in vectors]
    if backend() == PGVECTOR:
        return _nearest_pgvector(chunks, vectors, limit)
    return _nearest_exact(chunks, vectors, limit)


def pgvector_query(chunks: QuerySet[Chunk], vector: np.ndarray, limit: int) -> tuple[str, list]:
    """The SQL of one filtered nearest-neighbour query (the plan test EXPLAINs it)."""
    ranked = (
        chunks.annotate(
            has_vector=RawSQL("bundles_chunk.embedding_vector IS NOT NULL", [], BooleanField())
        )
        .filter(has_vector=True)
        .annotate(
            distance=RawSQL(
                "bundles_chunk.embedding_vector <=> %s::vector",
                [vector_literal(vector)],
                FloatField(),
            )
        )
        .order_by("distance")
        .values_list("id", "distance")[:limit]
    )
    sql, params = ranked.query.sql_with_params()
    return sql, list(params)


def pgvector_settings(limit: int) -> str:
    """Filtered HNSW: keep scanning the graph until `limit` rows pass the filters (SET LOCAL:
    for the rest of the transaction)."""
    return (
        "SET LOCAL hnsw.iterative_scan = relaxed_order; "
        f"SET LOCAL hnsw.ef_search = {max(HNSW_EF_SEARCH, int(limit))}"
    )


def pgvector_session(cursor: Any, limit: int) -> None:
    """pgvector_settings inside the caller's transaction, in one round trip."""
    cursor.execute(pgvector_settings(limit))


def _neighbours(rows: Iterable[tuple[int, float]]) -> list[Neighbour]:
    found = [Neighbour(chunk_id=pk, similarity=1.0 - float(distance)) for pk, distance in rows]
    # relaxed_order may return rows slightly out of order: order them exactly.
    return sorted(found, key=lambda n: (-n.similarity, -n.chunk_id))


def _nearest_pgvector(
    chunks: QuerySet[Chunk], vectors: list[np.ndarray], limit: int
) -> list[list[Neighbour]]:
    if len(vectors) == 1 and _client_side_binding():
        return [_nearest_one_round_trip(chunks, vectors[0], limit)]
    answers = []
    with transaction.atomic(), connection.cursor() as cursor:
        pgvector_session(cursor, limit)
        for vector in vectors:
            cursor.execute(*pgvector_query(chunks, vector, limit))
            answers.append(_neighbours(cursor.fetchall()))
    return answers


def _nearest_one_round_trip(chunks: QuerySet[Chunk], vector: np.ndarray, limit: int) -> list:
    """One query vector (a search): the settings and the query in one string, one round trip.
    Outside a transaction the string runs as one implicit transaction (PostgreSQL's rule for a
    multi-statement simple query), so SET LOCAL holds for the query and ends with it; inside
    one it holds to the end of that transaction, as pgvector_session's does. No BEGIN, no
    COMMIT of its own: 3 round trips fewer than a transaction around it."""
    sql, params = pgvector_query(chunks, vector, limit)
    with connection.cursor() as cursor:
        cursor.execute(f"{pgvector_settings(limit)}; {sql}", params)
        while cursor.description is None and cursor.nextset():
            pass  # past the two SETs' empty results
        return _neighbours(cursor.fetchall())


def _client_side_binding() -> bool:
    """Whether Django's cursors bind parameters client-side (psycopg's ClientCursor, Django's
    default): only then may one execute() carry several statements."""
    import psycopg

    connection.ensure_connection()
    factory = getattr(connection.connection, "cursor_factory", None)
    return isinstance(factory, type) and issubclass(factory, psycopg.ClientCursor)


def _nearest_exact(
    chunks: QuerySet[Chunk], vectors: list[np.ndarray], limit: int
) -> list[list[Neighbour]]:
    import numpy as np

    queries = np.vstack([np.asarray(v, dtype=np.float32) for v in vectors])
    norms = np.linalg.norm(queries, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    queries = queries / norms
    best_ids = [np.zeros(0, dtype=np.int64) for _ in vectors]
    best_scores = [np.zeros(0, dtype=np.float32) for _ in vectors]
    cursor_id = 0
    ordered = chunks.order_by("id").values_list("id", "embedding", "embedding_dim")
    while True:
        rows = list(ordered.filter(id__gt=cursor_id)[:SCAN_BATCH])
        if not rows:
            break
        cursor_id = rows[-1][0]
        ids, matrix = [], []
        for pk, blob, dim in rows:
            row = from_blob(blob, dim)
            if row is not None and row.shape[0] == queries.shape[1]:
                ids.append(pk)
                matrix.append(row)
        if not ids:
            continue
        block = np.vstack(matrix)
        block_norms = np.linalg.norm(block, axis=1)
        block_norms[block_norms == 0] = 1.0
        scores = (queries @ block.T) / block_norms  # one row of scores per query
        block_ids = np.asarray(ids, dtype=np.int64)
        for q in range(queries.shape[0]):
            merged_ids = np.concatenate([best_ids[q], block_ids])
            merged = np.concatenate([best_scores[q], scores[q].astype(np.float32)])
            # Highest score first, then the newer chunk (higher id), like the keyword signal.
            order = np.lexsort((-merged_ids, -merged))[:limit]
            best_ids[q], best_scores[q] = merged_ids[order], merged[order]
    return [
        [
            Neighbour(chunk_id=int(pk), similarity=float(score))
            for pk, score in zip(best_ids[q], best_scores[q], strict=True)
        ]
        for q in range(queries.shape[0])
    ]


def write_vectors(rows: list[tuple[int, np.ndarray]], *, model: str) -> None:
    """Store each chunk's vector of `model` (blob, and the pgvector column where it exists):
    on PostgreSQL one UPDATE for the whole batch (unnest of the ids, blobs and vectors)."""
    if not rows:
        return
    by_dim: dict[int, list[tuple[int, np.ndarray]]] = {}
    for pk, vec in rows:
        by_dim.setdefault(int(vec.shape[0]), []).append((pk, vec))
    with connection.cursor() as cursor:
        for dim, group in by_dim.items():
            if connection.vendor == "postgresql":
                _write_batch_postgresql(cursor, group, model=model, dim=dim)
            else:
                cursor.executemany(
                    "UPDATE bundles_chunk SET embedding = %s, embedding_model = %s, "
                    "embedding_dim = %s WHERE id = %s",
                    [(to_blob(vec), model, dim, pk) for pk, vec in group],
                )


def _write_batch_postgresql(
    cursor: Any, rows: list[tuple[int, np.ndarray]], *, model: str, dim: int
) -> None:
    ids = [pk for pk, _ in rows]
    blobs = [to_blob(vec) for _, vec in rows]
    if backend() == PGVECTOR:
        cursor.execute(
            "UPDATE bundles_chunk AS c SET embedding = v.blob, embedding_model = %s, "
            "embedding_dim = %s, embedding_vector = v.vec::vector "
            "FROM unnest(%s::bigint[], %s::bytea[], %s::text[]) AS v(id, blob, vec) "
            "WHERE c.id = v.id",
            [model, dim, ids, blobs, [vector_literal(vec) for _, vec in rows]],
        )
    else:
        cursor.execute(
            "UPDATE bundles_chunk AS c SET embedding = v.blob, embedding_model = %s, "
            "embedding_dim = %s FROM unnest(%s::bigint[], %s::bytea[]) AS v(id, blob) "
            "WHERE c.id = v.id",
            [model, dim, ids, blobs],
        )


def missing_vector_rows(
    team_id: int, model: str, dim: int, after_id: int, limit: int
) -> list[tuple[int, bytes]]:
    """pgvector: chunks holding a blob of the model but no vector yet (imported ones)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, embedding FROM bundles_chunk WHERE team_id = %s AND embedding_model = %s "
            "AND embedding_dim = %s AND embedding IS NOT NULL AND embedding_vector IS NULL "
            "AND id > %s ORDER BY id LIMIT %s",
            [team_id, model, dim, after_id, limit],
        )
        return [(pk, bytes(blob)) for pk, blob in cursor.fetchall()]


def fill_vectors(rows: list[tuple[int, np.ndarray]]) -> None:
    if not rows:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE bundles_chunk AS c SET embedding_vector = v.vec::vector "
            "FROM unnest(%s::bigint[], %s::text[]) AS v(id, vec) WHERE c.id = v.id",
            [[pk for pk, _ in rows], [vector_literal(vec) for _, vec in rows]],
        )


def vector_count(team_id: int, model: str, dim: int) -> int:
    """Chunks of the team whose vector of the model is searchable right now."""
    chunks = Chunk.objects.filter(
        team_id=team_id, embedding_model=model, embedding_dim=dim, embedding__isnull=False
    )
    if backend() == PGVECTOR:
        chunks = chunks.annotate(
            has_vector=RawSQL("bundles_chunk.embedding_vector IS NOT NULL", [], BooleanField())
        ).filter(has_vector=True)
    return chunks.count()
