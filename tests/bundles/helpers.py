"""Sample bundles for the bundles tests and the MemoryAI conformance suite."""

from __future__ import annotations

import struct
from base64 import b64encode
from typing import Any

import orjson

from formats import memoryai as protocol


def embedding(values: list[float]) -> str:
    return b64encode(struct.pack(f"<{len(values)}f", *values)).decode("ascii")


def chunk(cid: int, content: str, memory_type: str = "fact", **extra: Any) -> dict[str, Any]:
    return {
        "id": cid,
        "content": content,
        "content_hash": protocol.content_hash(content),
        "memory_type": memory_type,
        "embedding": None,
        "tags": [],
        "zone": "standard",
        "importance": 0.5,
        "is_pinned": False,
        "decay_score": 1.0,
        "tier": "hot",
        "created_at": "2026-01-02T03:04:05Z",
        "accessed_at": "2026-01-03T03:04:05Z",
        "valid_until": None,
        "metadata": {},
        **extra,
    }


def make_bundle(
    *,
    chunks: list[dict[str, Any]] | None = None,
    edges: list[dict[str, Any]] | None = None,
    entities: list[dict[str, Any]] | None = None,
    model: str = "test-embed",
    dim: int = 3,
    **sections: list[dict[str, Any]],
) -> dict[str, Any]:
    return protocol.build_bundle(
        manifest={
            "tenant_id": "11111111-2222-3333-4444-555555555555",
            "tenant_name": "elsewhere",
            "tenant_plan": None,
            "scope": "full",
            "since": None,
            "embedding_model": model,
            "embedding_dim": dim,
        },
        sections={
            "chunks": chunks or [],
            "memory_edges": edges or [],
            "entities": entities or [],
            **sections,
        },
        exported_at="2026-05-28T10:00:00Z",
        generator="other-producer/1.0",
    )


def sample_bundle() -> dict[str, Any]:
    """A little of everything: DNA and ordinary chunks, embeddings, edges, entities, extras."""
    return make_bundle(
        chunks=[
            chunk(10, "Prefers tabs over spaces", "preference", embedding=embedding([1, 0, 0])),
            chunk(11, "Deploys happen on Tuesdays", "fact", embedding=embedding([0, 1, 0])),
            chunk(12, "Never force-push to main", "pitfall"),
            chunk(13, "Met the café team in Zürich 🎉", "episodic", zone="critical"),
            chunk(14, "Pinned reminder", "goal", is_pinned=True),
            chunk(15, "Temporary note", "x_scratch", zone="ephemeral"),
        ],
        edges=[
            {
                "chunk_a": 10,
                "chunk_b": 11,
                "edge_type": "co_activation",
                "weight": 0.4,
                "co_activation_count": 3,
                "created_at": "2026-01-01T00:00:00Z",
                "updated_at": "2026-01-02T00:00:00Z",
            },
            {
                "chunk_a": 11,
                "chunk_b": 12,
                "edge_type": "causal",
                "weight": 0.9,
                "co_activation_count": 1,
                "created_at": "2026-01-01T00:00:00Z",
                "updated_at": "2026-01-02T00:00:00Z",
            },
        ],
        entities=[
            {
                "name": "Zürich",
                "frequency": 2,
                "first_seen": "2026-01-01T00:00:00Z",
                "last_seen": "2026-02-01T00:00:00Z",
                "is_dna": False,
            },
            {
                "name": "Alice",
                "frequency": 5,
                "first_seen": "2025-01-01T00:00:00Z",
                "last_seen": "2026-01-01T00:00:00Z",
                "is_dna": True,
            },
        ],
        l2_sessions=[{"id": 1, "summary": "planning session", "turns": 12}],
        mood_states=[{"key": "default", "valence": 0.2, "arousal": 0.1}],
        agents=[{"id": 7, "name": "coder", "persona": "terse"}],
    )


def response_json(response: Any) -> Any:
    """The JSON body of a streamed response (the export) or a plain one (errors)."""
    if response.streaming:
        return orjson.loads(b"".join(response.streaming_content))
    return response.json()
