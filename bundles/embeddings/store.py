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

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

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
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def to_blob(vector: np.ndarray) -> bytes:
    import numpy as np

    return np.asarray(vector, dtype="<f4").tobytes()


def from_blob(blob: bytes | memoryview, dim: int) -> np.ndarray | None:
    import numpy as np

    data = bytes(blob)
    if len(data) != dim * 4:
        return None
    return np.frombuffer(data, dtype="<f4")


def nearest(
    chunks: QuerySet[Chunk], vector: np.ndarray, *, model: str, dim: int, limit: int
) -> list[Neighbour]:
    """The `limit` chunks of `chunks` whose vector (of `model`) is nearest to `vector`."""
    chunks = chunks.filter(embedding_model=model, embedding_dim=dim, embedding__isnull=False)
    if limit <= 0:
        return []
    if backend() == PGVECTOR:
        return _nearest_pgvector(chunks, vector, limit)
    return _nearest_exact(chunks, vector, limit)


def _nearest_pgvector(chunks: QuerySet[Chunk], vector: np.ndarray, limit: int) -> list[Neighbour]:
    literal = vector_literal(vector)
    ranked = (
        chunks.annotate(
            has_vector=RawSQL("bundles_chunk.embedding_vector IS NOT NULL", [], BooleanField())
        )
        .filter(has_vector=True)
        .annotate(
            distance=RawSQL(
                "bundles_chunk.embedding_vector <=> %s::vector", [literal], FloatField()
            )
        )
        .order_by("distance")
        .values_list("id", "distance")[:limit]
    )
    sql, params = ranked.query.sql_with_params()
    with transaction.atomic(), connection.cursor() as cursor:
        # Filtered HNSW: keep scanning the graph until `limit` rows pass the filters.
        cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        cursor.execute(f"SET LOCAL hnsw.ef_search = {max(HNSW_EF_SEARCH, limit)}")
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    found = [Neighbour(chunk_id=pk, similarity=1.0 - float(distance)) for pk, distance in rows]
    # relaxed_order may return rows slightly out of order: order them exactly.
    return sorted(found, key=lambda n: (-n.similarity, -n.chunk_id))


def _nearest_exact(chunks: QuerySet[Chunk], vector: np.ndarray, limit: int) -> list[Neighbour]:
    import numpy as np

    query = np.asarray(vector, dtype=np.float32)
    query = query / (np.linalg.norm(query) or 1.0)
    best_ids = np.zeros(0, dtype=np.int64)
    best_scores = np.zeros(0, dtype=np.float32)
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
            if row is not None and row.shape[0] == query.shape[0]:
                ids.append(pk)
                matrix.append(row)
        if not ids:
            continue
        block = np.vstack(matrix)
        norms = np.linalg.norm(block, axis=1)
        norms[norms == 0] = 1.0
        scores = (block @ query) / norms
        best_ids = np.concatenate([best_ids, np.asarray(ids, dtype=np.int64)])
        best_scores = np.concatenate([best_scores, scores.astype(np.float32)])
        if best_ids.shape[0] > limit:
            # Highest score first, then the newer chunk (higher id), like the keyword signal.
            order = np.lexsort((-best_ids, -best_scores))[:limit]
            best_ids, best_scores = best_ids[order], best_scores[order]
    order = np.lexsort((-best_ids, -best_scores))[:limit]
    return [Neighbour(chunk_id=int(best_ids[i]), similarity=float(best_scores[i])) for i in order]


def write_vectors(rows: list[tuple[int, np.ndarray]], *, model: str) -> None:
    """Store each chunk's vector of `model` (blob, and the pgvector column where it exists)."""
    if not rows:
        return
    with_column = backend() == PGVECTOR
    with connection.cursor() as cursor:
        if with_column:
            cursor.executemany(
                "UPDATE bundles_chunk SET embedding = %s, embedding_model = %s, "
                "embedding_dim = %s, embedding_vector = %s::vector WHERE id = %s",
                [
                    (to_blob(vec), model, int(vec.shape[0]), vector_literal(vec), pk)
                    for pk, vec in rows
                ],
            )
        else:
            cursor.executemany(
                "UPDATE bundles_chunk SET embedding = %s, embedding_model = %s, "
                "embedding_dim = %s WHERE id = %s",
                [(to_blob(vec), model, int(vec.shape[0]), pk) for pk, vec in rows],
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
    with connection.cursor() as cursor:
        cursor.executemany(
            "UPDATE bundles_chunk SET embedding_vector = %s::vector WHERE id = %s",
            [(vector_literal(vec), pk) for pk, vec in rows],
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
