"""The pgvector backend: turning it on after install (manage.py enable_pgvector) and the
plan of the filtered nearest-neighbour query (the HNSW index, filtered by team). Runs on the
pgvector server (.ci/pgvector; MEMORYADMIN_REQUIRE_PGVECTOR=true there) and, where the
database has no pgvector, checks that the command says why it cannot."""

from __future__ import annotations

import os
from io import StringIO

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from bundles.embeddings import model as embedding_model
from bundles.embeddings import schema, store
from bundles.embeddings.lifecycle import brain_model_adopt
from bundles.models import Chunk
from memoryadmin.models import AuditEvent
from tests.semantic.conftest import make_chunk


def _require_pgvector() -> None:
    if connection.vendor == "postgresql" and schema.has_vector_column(connection):
        return
    if os.environ.get("MEMORYADMIN_REQUIRE_PGVECTOR") == "true":
        pytest.fail("MEMORYADMIN_REQUIRE_PGVECTOR=true but the database has no pgvector")
    pytest.skip("the database has no pgvector (CI runs this file against .ci/pgvector)")


def _unit_vectors(n: int, seed: int) -> np.ndarray:
    matrix = np.random.default_rng(seed).standard_normal((n, embedding_model.MODEL_DIM))
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix.astype("<f4")


def _stored_chunks(team, n: int, seed: int = 1) -> list[Chunk]:  # type: ignore[no-untyped-def]
    """Chunks holding stored vectors of the team's model (as an import or an earlier run
    left them), without touching the pgvector column."""
    return [
        make_chunk(
            team,
            f"Stored note {seed}-{i}",
            embedding=vector.tobytes(),
            embedding_model=embedding_model.MODEL_NAME,
            embedding_dim=embedding_model.MODEL_DIM,
        )
        for i, vector in enumerate(_unit_vectors(n, seed))
    ]


def _index_exists() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = 'chunk_embedding_hnsw'")
        return cursor.fetchone() is not None


def test_enable_pgvector_adds_the_column_and_index_and_copies_the_stored_vectors(semantic, team):
    _require_pgvector()
    brain_model_adopt(team=team)
    chunks = _stored_chunks(team, 5)
    with connection.cursor() as cursor:  # the test's inserts' deferred FK checks, before DDL
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    schema.uninstall_pgvector(connection)  # as if the extension came after the migrations
    store.forget_backend()
    assert store.backend() == store.EXACT and not _index_exists()
    out = StringIO()
    call_command("enable_pgvector", "--batch-size", "2", stdout=out)
    assert "pgvector is enabled: added the embedding_vector column" in out.getvalue()
    assert "copied 5 stored vectors" in out.getvalue() and team.slug in out.getvalue()
    assert store.backend() == store.PGVECTOR and _index_exists()
    model, dim = embedding_model.MODEL_NAME, embedding_model.MODEL_DIM
    assert store.vector_count(team.pk, model, dim) == 5
    query = np.frombuffer(bytes(chunks[3].embedding), "<f4")
    found = store.nearest(Chunk.objects.filter(team=team), query, model=model, dim=dim, limit=1)
    assert found[0].chunk_id == chunks[3].pk
    event = AuditEvent.objects.get(action="brain.pgvector-enable")
    assert event.data == {"created_column": True, "filled": 5, "teams": [team.slug]}
    again = StringIO()
    call_command("enable_pgvector", stdout=again)  # idempotent: nothing left to copy
    assert "kept the embedding_vector column" in again.getvalue()
    assert "copied 0 stored vectors" in again.getvalue()


def test_enable_pgvector_says_why_it_cannot_where_there_is_no_pgvector(team):
    if connection.vendor == "postgresql" and schema.has_vector_column(connection):
        pytest.skip("this database has pgvector (the other test covers it)")
    with pytest.raises(CommandError) as refused:
        call_command("enable_pgvector")
    assert "pgvector is not enabled:" in str(refused.value)
    assert "Search keeps the exact scan." in str(refused.value)
    assert not AuditEvent.objects.filter(action="brain.pgvector-enable").exists()


def _plan(chunks, vector: np.ndarray) -> str:  # type: ignore[no-untyped-def]
    from django.db import transaction

    chunks = chunks.filter(
        embedding_model=embedding_model.MODEL_NAME,
        embedding_dim=embedding_model.MODEL_DIM,
        embedding__isnull=False,
    )
    sql, params = store.pgvector_query(chunks, vector, 50)
    with transaction.atomic(), connection.cursor() as cursor:
        store.pgvector_session(cursor, 50)
        cursor.execute("EXPLAIN " + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())


def _bulk_vectors(team, n: int, seed: int) -> None:  # type: ignore[no-untyped-def]
    from formats import memoryai as protocol

    matrix = _unit_vectors(n, seed)
    created = Chunk.objects.bulk_create(
        Chunk(
            team=team,
            content=f"Note {seed}-{i}",
            content_hash=protocol.content_hash(f"Note {seed}-{i}"),
            memory_type="fact" if i % 2 else "decision",
            embedding=vector.tobytes(),
            embedding_model=embedding_model.MODEL_NAME,
            embedding_dim=embedding_model.MODEL_DIM,
        )
        for i, vector in enumerate(matrix)
    )
    store.fill_vectors([(c.pk, vector) for c, vector in zip(created, matrix, strict=True)])


def test_the_filtered_nearest_query_walks_the_hnsw_index_for_one_team(semantic, team, other_team):
    _require_pgvector()
    brain_model_adopt(team=team)
    _bulk_vectors(team, 1500, seed=1)
    _bulk_vectors(other_team, 300, seed=2)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE bundles_chunk")
    from bundles.selectors import served_chunks

    query = _unit_vectors(1, seed=3)[0]
    for chunks in (served_chunks(team), served_chunks(team).filter(memory_type="decision")):
        plan = _plan(chunks, query)
        assert "Index Scan using chunk_embedding_hnsw on bundles_chunk" in plan, plan
        assert f"team_id = {team.pk}" in plan, plan
    # A stored vector is found first; only the team's chunks come back.
    model, dim = embedding_model.MODEL_NAME, embedding_model.MODEL_DIM
    stored = Chunk.objects.filter(team=team).order_by("id")[7]
    vector = np.frombuffer(bytes(stored.embedding), "<f4")
    indexed = store.nearest(served_chunks(team), vector, model=model, dim=dim, limit=10)
    assert indexed[0].chunk_id == stored.pk and len(indexed) == 10
    teams = Chunk.objects.filter(pk__in=[n.chunk_id for n in indexed]).values_list("team_id")
    assert set(teams) == {(team.pk,)}


@pytest.mark.django_db(transaction=True)
def test_one_query_vector_is_one_round_trip_and_its_settings_end_with_it(
    semantic, team, django_assert_num_queries
):
    """store.nearest for one vector sends the HNSW settings and the query as one string: in
    autocommit it is one implicit transaction, so SET LOCAL holds for the query and no longer;
    the answer is the one the transaction-per-batch path (nearest_many) gives."""
    _require_pgvector()
    brain_model_adopt(team=team)
    _bulk_vectors(team, 200, seed=4)
    from bundles.selectors import served_chunks

    model, dim = embedding_model.MODEL_NAME, embedding_model.MODEL_DIM
    query, other = _unit_vectors(2, seed=5)
    assert not connection.in_atomic_block
    assert store.backend() == store.PGVECTOR  # looked up once per process, before the count
    with django_assert_num_queries(1):
        one = store.nearest(served_chunks(team), query, model=model, dim=dim, limit=120)
    both = store.nearest_many(served_chunks(team), [query, other], model=model, dim=dim, limit=120)
    assert one == both[0] and len(one) == 120
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('hnsw.ef_search')")
        assert cursor.fetchone()[0] == "40"  # pgvector's default again: the SET LOCAL ended
