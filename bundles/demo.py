"""`manage.py seed_demo`: a small sample brain, imported through the ordinary import service."""

from __future__ import annotations

from typing import Any

from bundles.imports import bundle_import
from bundles.models import Chunk
from formats import memoryai as protocol
from memoryadmin.audit import Actor
from memoryadmin.models import Team

SAMPLE_CHUNKS = [
    ("identity", "The team ships memoryadmin, a Django admin for agent memory.", "standard"),
    ("preference", "Prefer small, reviewed commits with explicit paths.", "standard"),
    ("decision", "Bundles are imported in one transaction: all or nothing.", "important"),
    ("pitfall", "A redirected POST loses its body: no slash redirects on /v1.", "standard"),
    ("procedure", "Run the tests on SQLite and on PostgreSQL before merging.", "standard"),
    ("fact", "The demo team was seeded by manage.py seed_demo.", "standard"),
    ("episodic", "Imported the first sample bundle.", "ephemeral"),
]


def sample_bundle() -> dict[str, Any]:
    chunks = [
        {
            "id": index,
            "content": content,
            "content_hash": protocol.content_hash(content),
            "memory_type": memory_type,
            "zone": zone,
            "embedding": None,
            "tags": ["demo"],
            "created_at": "2026-05-28T09:00:00Z",
            "metadata": {"demo": True},
        }
        for index, (memory_type, content, zone) in enumerate(SAMPLE_CHUNKS, start=1)
    ]
    edges = [
        {
            "chunk_a": 2,
            "chunk_b": 3,
            "edge_type": "co_activation",
            "weight": 0.6,
            "co_activation_count": 4,
        },
        {
            "chunk_a": 4,
            "chunk_b": 5,
            "edge_type": "co_activation",
            "weight": 0.3,
            "co_activation_count": 1,
        },
    ]
    entities = [
        {
            "name": "memoryadmin",
            "frequency": 3,
            "last_seen": "2026-05-28T09:00:00Z",
            "is_dna": True,
        },
        {
            "name": "PostgreSQL",
            "frequency": 1,
            "last_seen": "2026-05-28T09:00:00Z",
            "is_dna": False,
        },
    ]
    return protocol.build_bundle(
        manifest={
            "tenant_id": None,
            "tenant_name": "demo",
            "tenant_plan": None,
            "scope": "full",
            "since": None,
            "embedding_model": "",
            "embedding_dim": 0,
        },
        sections={
            "chunks": chunks,
            "memory_edges": edges,
            "entities": entities,
            "agents": [{"name": "reviewer-bot", "role": "reviews memory proposals"}],
        },
        exported_at="2026-05-28T09:00:00Z",
        generator="memoryadmin-demo/1",
    )


def seed(*, team: Team, user: Any) -> str | None:
    """Idempotent: once the sample chunks are there, nothing is imported again (edges and
    entity frequencies would otherwise accumulate on every `make run`)."""
    bundle = sample_bundle()
    hashes = [c["content_hash"] for c in bundle["chunks"]]
    if Chunk.objects.filter(team=team, content_hash__in=hashes).count() == len(hashes):
        return None
    result = bundle_import(team=team, actor=Actor(user=user), bundle=bundle)
    return f"Brain: imported {result['report']['chunks']['inserted']} sample chunks."
