"""Vector search and hybrid ranking: exact scan and pgvector agree, paraphrases are found,
each result says what matched, and a caller's vector is checked before it is used."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from bundles.agents.errors import AgentError
from bundles.agents.search import search_memory
from bundles.embeddings import model as embedding_model
from bundles.embeddings import store
from bundles.embeddings.lifecycle import brain_embed
from bundles.models import Chunk
from tests.semantic.conftest import make_chunk

TEXTS = {
    "deploy": "Deploys go out on Tuesdays after the release review.",
    "tabs": "Indent Python code with four spaces, never tabs.",
    "db": "The primary PostgreSQL database is backed up every night at 02:00 UTC.",
    "cache": "Redis holds the session cache; it may be flushed at any time.",
    "tests": "Every pull request needs green tests before it is merged.",
    "secret": "API keys live in the vault, never in the repository.",
}


@pytest.fixture
def memory(semantic, team):  # type: ignore[no-untyped-def]
    chunks = {key: make_chunk(team, text) for key, text in TEXTS.items()}
    make_chunk(team, "Deleted note about nightly database backups", is_deleted=True)
    brain_embed(team_id=team.pk)
    return chunks


def _brute_force(team, vector: np.ndarray, limit: int) -> list[int]:  # type: ignore[no-untyped-def]
    rows = Chunk.objects.filter(team=team, is_deleted=False).values_list("id", "embedding")
    scored = [(pk, float(np.frombuffer(bytes(b), "<f4") @ vector)) for pk, b in rows]
    return [pk for pk, _ in sorted(scored, key=lambda r: (-r[1], -r[0]))[:limit]]


def test_the_exact_scan_finds_what_a_brute_force_numpy_search_finds(memory, team, monkeypatch):
    monkeypatch.setattr(store, "SCAN_BATCH", 2)  # several batches merged into one top k
    query = embedding_model.encode_one("when are releases shipped?")
    served = Chunk.objects.filter(team=team, is_deleted=False)
    found = store._nearest_exact(served, [query], 3)[0]
    assert [n.chunk_id for n in found] == _brute_force(team, query, 3)
    assert found[0].chunk_id == memory["deploy"].pk


def test_several_queries_in_one_pass_get_what_each_gets_alone(memory, team, monkeypatch):
    monkeypatch.setattr(store, "SCAN_BATCH", 2)
    texts = ("when are releases shipped?", "how is code indented", "where do secrets go")
    queries = embedding_model.encode(list(texts))
    served = Chunk.objects.filter(team=team, is_deleted=False)
    together = store._nearest_exact(served, list(queries), 3)
    assert [[n.chunk_id for n in found] for found in together] == [
        _brute_force(team, query, 3) for query in queries
    ]


def test_pgvector_gives_the_exact_scans_answer(memory, team):
    if store.backend() != store.PGVECTOR:
        if os.environ.get("MEMORYADMIN_REQUIRE_PGVECTOR") == "true":
            pytest.fail("MEMORYADMIN_REQUIRE_PGVECTOR=true but the database has no pgvector")
        pytest.skip("the database has no pgvector (CI runs this file against .ci/pgvector)")
    served = Chunk.objects.filter(team=team, is_deleted=False)
    for text in ("when are releases shipped?", "how is code indented", "where do secrets go"):
        query = embedding_model.encode_one(text)
        exact = store._nearest_exact(served, [query], 4)[0]
        indexed = store._nearest_pgvector(served, [query], 4)[0]
        assert [n.chunk_id for n in indexed] == [n.chunk_id for n in exact]
        assert all(
            math.isclose(a.similarity, b.similarity, abs_tol=1e-4)
            for a, b in zip(indexed, exact, strict=True)
        )


def test_a_paraphrase_with_no_shared_keyword_is_found_by_meaning(memory, team):
    body = search_memory(team=team, query="when do we ship to production")
    assert body["ranking"] == "hybrid"
    first = body["results"][0]
    assert first["ref"] == f"brain:{memory['deploy'].pk}"
    assert first["matched_by"] == "meaning" and first["matched"] == []
    assert first["signals"]["meaning"]["rank"] == 1


def test_an_exact_term_matches_by_both_signals_and_ranks_first(memory, team):
    body = search_memory(team=team, query="Redis session cache")
    first = body["results"][0]
    assert first["ref"] == f"brain:{memory['cache'].pk}"
    assert first["matched_by"] == "both"
    assert set(first["signals"]) == {"keyword", "meaning"}


def test_deleted_chunks_never_come_back_by_meaning(memory, team):
    refs = [r["ref"] for r in search_memory(team=team, query="nightly backups")["results"]]
    deleted = Chunk.objects.get(team=team, is_deleted=True)
    assert f"brain:{deleted.pk}" not in refs
    assert refs[0] == f"brain:{memory['db'].pk}"


def test_another_teams_memory_is_never_a_neighbour(memory, team, other_team):
    make_chunk(other_team, "Deploys go out on Tuesdays after the release review, always.")
    brain_embed(team_id=other_team.pk)
    refs = [r["ref"] for r in search_memory(team=team, query="when do we ship")["results"]]
    own = {f"brain:{c.pk}" for c in memory.values()}
    assert refs and set(refs) <= own


def test_a_caller_vector_in_the_team_model_searches_by_meaning(memory, team, token_client):
    vector = embedding_model.encode_one("where are credentials kept").tolist()
    client = token_client(team, ["context:read"])
    response = client.post("/api/search/", {"vector": vector, "limit": 3}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["results"][0]["ref"] == f"brain:{memory['secret'].pk}"
    assert all(r["matched_by"] == "meaning" for r in body["results"])


@pytest.mark.parametrize(
    ("vector", "status", "code"),
    [
        ([0.1, 0.2], 400, "vector-dimension"),
        ([0.0] * 384, 400, "vector-invalid"),
        (["a"] * 384, 400, "vector-invalid"),
        ([True] * 384, 400, "vector-invalid"),
        ("0.1,0.2", 400, "vector-invalid"),
        ([], 400, "vector-invalid"),
    ],
)
def test_a_bad_vector_is_refused_with_a_code(memory, team, token_client, vector, status, code):
    client = token_client(team, ["context:read"])
    response = client.post("/api/search/", {"vector": vector}, format="json")
    assert response.status_code == status, response.content
    assert response.json()["error"]["code"] == code


def test_non_finite_numbers_and_bad_query_text_vectors_are_refused(memory, team, token_client):
    with pytest.raises(AgentError) as caught:
        search_memory(team=team, query=None, vector=[math.inf] + [0.1] * 383)
    assert (caught.value.status, caught.value.code) == (400, "vector-invalid")
    client = token_client(team, ["context:read"])
    response = client.get("/api/search/", {"vector": "0.1,nope"})
    assert response.status_code == 400 and response.json()["error"]["code"] == "vector-invalid"
    short = client.get("/api/search/", {"vector": "0.1,0.2"})
    assert short.status_code == 400 and short.json()["error"]["code"] == "vector-dimension"


def test_without_semantic_search_a_vector_is_refused_and_text_is_keyword_only(
    memory, team, settings
):
    settings.SEMANTIC_ENABLED = False
    with pytest.raises(AgentError) as caught:
        search_memory(team=team, query="x", vector=[0.1] * 384)
    assert (caught.value.status, caught.value.code) == (409, "vector-unavailable")
    body = search_memory(team=team, query="Redis")
    assert body["ranking"] == "keyword" and "switched off" in body["keyword_only_because"]
    assert [r["matched_by"] for r in body["results"]] == ["keyword"]


def test_the_mcp_tool_takes_a_vector(memory, team, make_token):
    from bundles.mcp import TOOLS, Caller, run_tool
    from memoryadmin.models import ApiToken

    assert TOOLS["search_memory"].schema["properties"]["vector"]["type"] == "array"
    make_token(team, ["context:read"])
    caller = Caller.of(ApiToken.objects.get(team=team))
    vector = embedding_model.encode_one("how do we indent code").tolist()
    body = run_tool(caller, "search_memory", {"vector": vector, "limit": 1})
    assert body["results"][0]["ref"] == f"brain:{memory['tabs'].pk}"
