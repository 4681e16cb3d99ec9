"""MemoryAI Protocol v1 §5 conformance, Levels 1 (producer), 2 (consumer), 3 (bidirectional)."""

from __future__ import annotations

import base64

import orjson
import pytest

from bundles.models import Chunk, MemoryEdge
from formats import memoryai as protocol
from tests.bundles.helpers import chunk, embedding, make_bundle, response_json, sample_bundle

BOTH = ["bundles:import", "bundles:export"]


def call(client, path, body):
    return client.generic("POST", path, orjson.dumps(body), content_type="application/json")


@pytest.fixture
def source(team, token_client):
    client = token_client(team, BOTH)
    assert call(client, "/v1/brain/import", sample_bundle()).status_code == 200
    return client


# Level 1 — Producer


def test_it_emits_a_bundle_that_passes_the_envelope_check(source):
    bundle = response_json(call(source, "/v1/brain/export", {"scope": "full"}))
    envelope = protocol.validate_envelope(bundle)
    assert envelope.format == "memoryai-bundle" and envelope.version == 1
    assert {"scope", "embedding_model", "embedding_dim"} <= set(bundle["manifest"])


def test_it_encodes_embeddings_as_little_endian_float32(source):
    bundle = response_json(call(source, "/v1/brain/export", {}))
    dim = bundle["manifest"]["embedding_dim"]
    encoded = [c["embedding"] for c in bundle["chunks"] if c["embedding"]]
    assert encoded, "the sample has embeddings of the team's model"
    for text in encoded:
        raw = base64.b64decode(text, validate=True)
        assert len(raw) == dim * 4
    assert protocol.decode_embedding(encoded[0]) == (1.0, 0.0, 0.0)


def test_it_includes_a_valid_checksum_and_accurate_counts(source):
    for scope in ("full", "dna_only"):
        bundle = response_json(call(source, "/v1/brain/export", {"scope": scope}))
        assert protocol.verify_checksum(bundle).form == "utf-8"
        assert bundle["manifest"]["counts"] == {s: len(bundle[s]) for s in protocol.SECTIONS}


# Level 2 — Consumer


def test_it_inserts_nothing_the_second_time_but_accumulates_edges(team, token_client):
    client = token_client(team, BOTH)
    first = call(client, "/v1/brain/import", sample_bundle()).json()["report"]
    second = call(client, "/v1/brain/import", sample_bundle()).json()["report"]
    assert first["chunks"]["inserted"] == 6
    assert second["chunks"] == {"inserted": 0, "skipped_duplicate": 6, "skipped_invalid": 0}
    assert second["l2_sessions"] == {"inserted": 0}
    edge = MemoryEdge.objects.get(team=team, edge_type="co_activation")
    assert edge.co_activation_count == 6 and edge.weight == 0.4
    assert Chunk.objects.filter(team=team).count() == 6


def test_it_maps_two_producers_ids_to_one_edge(team, token_client):
    client = token_client(team, BOTH)
    edge = {"edge_type": "co_activation", "weight": 0.5, "co_activation_count": 1}
    one = make_bundle(
        chunks=[chunk(1, "alpha"), chunk(2, "beta")], edges=[{"chunk_a": 1, "chunk_b": 2, **edge}]
    )
    two = make_bundle(
        chunks=[chunk(700, "alpha"), chunk(900, "beta")],
        edges=[{"chunk_a": 700, "chunk_b": 900, **edge, "weight": 0.7}],
    )
    call(client, "/v1/brain/import", one)
    call(client, "/v1/brain/import", two)
    edge_row = MemoryEdge.objects.get(team=team)
    assert (edge_row.co_activation_count, edge_row.weight) == (2, 0.7)


def test_it_keeps_the_existing_row_of_a_duplicate_chunk(team, token_client):
    client = token_client(team, BOTH)
    call(client, "/v1/brain/import", make_bundle(chunks=[chunk(1, "same", "preference")]))
    call(
        client, "/v1/brain/import", make_bundle(chunks=[chunk(1, "same", "fact", zone="ephemeral")])
    )
    row = Chunk.objects.get(team=team)
    assert (row.memory_type, row.zone, row.is_dna) == ("preference", "standard", True)


def test_it_handles_an_embedding_model_mismatch(team, token_client):
    client = token_client(team, BOTH)
    call(
        client,
        "/v1/brain/import",
        make_bundle(chunks=[chunk(1, "a", embedding=embedding([1, 2, 3]))]),
    )
    foreign = make_bundle(
        chunks=[chunk(2, "b", embedding=embedding([1.0] * 4))], model="bigger", dim=4
    )
    report = call(client, "/v1/brain/import", foreign).json()["report"]
    assert report["embedding_model_match"] is False
    assert Chunk.objects.get(team=team, content="b").embedding is None


# Level 3 — Bidirectional


def test_it_round_trips_export_import_reexport(source, other_team, token_client):
    exported = response_json(call(source, "/v1/brain/export", {"scope": "full"}))
    target = token_client(other_team, BOTH)
    report = call(target, "/v1/brain/import", exported).json()["report"]
    assert report["warnings"] == ["this team had no embedding model; adopted 'test-embed' (dim 3)"]
    again = response_json(call(target, "/v1/brain/export", {"scope": "full"}))
    assert {c["content_hash"] for c in again["chunks"]} == {
        c["content_hash"] for c in exported["chunks"]
    }
    assert {e["name"] for e in again["entities"]} == {e["name"] for e in exported["entities"]}
    assert len(again["memory_edges"]) == len(exported["memory_edges"])
    by_hash = {c["content_hash"]: c for c in exported["chunks"]}
    for record in again["chunks"]:
        original = by_hash[record["content_hash"]]
        for field in ("content", "memory_type", "zone", "is_pinned", "embedding", "tags"):
            assert record[field] == original[field]
