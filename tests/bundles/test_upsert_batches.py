"""Edges and entities are upserted several chunk batches at a time (sections.UPSERT_BATCHES):
the same edge or entity in one batch or spread over several ends the same (§3.8: counts add
up, the larger weight stays), and so do the report's counts and warnings."""

from __future__ import annotations

import json

import pytest

from bundles.imports import bundle_import_file, context, sections
from bundles.models import Entity, MemoryEdge
from memoryadmin.audit import Actor
from tests.bundles.helpers import chunk, make_bundle

pytestmark = pytest.mark.django_db


def _bundle() -> dict:
    chunks = [chunk(i, f"Fact number {i}") for i in range(1, 7)]
    edges = []
    for n in range(24):  # each pair four times over the section, weights and counts varied
        a, b = n % 5 + 1, n % 5 + 2
        edges.append(
            {
                "chunk_a": a,
                "chunk_b": b,
                "edge_type": "x",
                "weight": n / 30,
                "co_activation_count": n,
            }
        )
    edges.append({"chunk_a": 1, "chunk_b": 404, "edge_type": "x"})  # names no chunk
    entities = [{"name": f"entity {n % 3}", "frequency": n + 1} for n in range(10)]
    return make_bundle(chunks=chunks, edges=edges, entities=entities)


def _state(team) -> tuple:
    edges = MemoryEdge.objects.filter(team=team).values_list(
        "source__content", "target__content", "co_activation_count", "weight"
    )
    return sorted(edges), sorted(Entity.objects.filter(team=team).values_list("name", "frequency"))


def _import_twice(team, path) -> list[dict]:
    return [
        bundle_import_file(team=team, actor=Actor.system(), path=path)["report"] for _ in range(2)
    ]


def test_one_batch_or_many_end_the_same(tmp_path, team, other_team, monkeypatch):
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(_bundle()), encoding="utf-8")
    whole = _import_twice(team, path)
    monkeypatch.setattr(context, "BATCH", 2)
    monkeypatch.setattr(sections, "UPSERT_BATCHES", 1)
    spread = _import_twice(other_team, path)
    assert spread == whole
    assert whole[1]["memory_edges"] == {"upserted": 24, "skipped": 1}
    assert whole[1]["entities"] == {"upserted": 10}
    assert _state(other_team) == _state(team)
    edges, entities = _state(team)
    # two imports of four records each: counts add up, the largest weight stays
    assert ("Fact number 1", "Fact number 2", 2 * (0 + 5 + 10 + 15 + 20), 20 / 30) in edges
    assert ("entity 0", 2 * (1 + 4 + 7 + 10)) in entities
