"""The chunks' id map moves to a temporary table past its size (flat import memory at 1M
chunks): the edges resolve, warn and accumulate exactly as with the map in memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bundles.imports import bundle_import, bundle_import_file, idmap
from bundles.imports.idmap import ChunkIdMap
from bundles.models import Chunk, MemoryEdge
from memoryadmin.audit import Actor
from tests.bundles.helpers import chunk, make_bundle

pytestmark = pytest.mark.django_db


def _bundle() -> dict:
    chunks = [chunk(i, f"Fact number {i}") for i in range(1, 13)]
    chunks.append(chunk(1, "Fact number 12"))  # an id given twice: the last chunk wins
    edges = [
        {"chunk_a": i, "chunk_b": i + 1, "edge_type": "x", "co_activation_count": i}
        for i in range(1, 12)
    ]
    edges.append({"chunk_a": 3, "chunk_b": 99, "edge_type": "x"})  # not a chunk of the bundle
    edges.append({"chunk_a": 2, "chunk_b": 3, "edge_type": "x", "co_activation_count": 5})
    return make_bundle(chunks=chunks, edges=edges)


def _edges(team) -> set[tuple[str, str, int]]:
    return {
        (e.source.content, e.target.content, e.co_activation_count)
        for e in MemoryEdge.objects.filter(team=team).select_related("source", "target")
    }


def _import_twice(team, path: Path) -> list[dict]:
    return [
        bundle_import_file(team=team, actor=Actor.system(), path=path)["report"] for _ in range(2)
    ]


def test_edges_resolve_the_same_through_the_table_as_through_memory(
    tmp_path, team, other_team, monkeypatch
):
    path = tmp_path / "b.json"
    path.write_text(json.dumps(_bundle()), encoding="utf-8")
    in_memory = _import_twice(team, path)
    monkeypatch.setattr(idmap, "SPILL_AFTER", 4)
    spilled = _import_twice(other_team, path)
    assert spilled == in_memory
    assert spilled[0]["memory_edges"] == {"upserted": 12, "skipped": 1}
    assert any("chunk 99 is not a chunk of this bundle" in w for w in spilled[0]["warnings"])
    assert _edges(other_team) == _edges(team)
    # counts accumulate over the two imports (§3.8); chunk 1 is "Fact number 12" by then
    assert ("Fact number 2", "Fact number 3", 2 * (2 + 5)) in _edges(other_team)
    assert ("Fact number 12", "Fact number 2", 2 * 1) in _edges(other_team)
    assert Chunk.objects.filter(team=other_team).count() == 12


def test_an_in_memory_bundle_spills_too(team, monkeypatch):
    monkeypatch.setattr(idmap, "SPILL_AFTER", 2)
    report = bundle_import(team=team, actor=Actor.system(), bundle=_bundle())["report"]
    assert report["memory_edges"] == {"upserted": 12, "skipped": 1}
    assert MemoryEdge.objects.filter(team=team).count() == 11


def test_the_map_answers_the_same_in_memory_and_spilled():
    ids = {i: 1000 + i for i in range(50)}
    held, spilled = ChunkIdMap(spill_after=100), ChunkIdMap(spill_after=10)
    for start in range(0, 50, 7):
        part = {i: ids[i] for i in range(start, min(start + 7, 50))}
        held.update(part)
        spilled.update(part)
    spilled.update({3: 7})  # updated after the spill: the last value wins
    held.update({3: 7})
    assert spilled.spilled and not held.spilled and not spilled.held
    wanted = [*range(-5, 60), 3, 3]
    assert spilled.look_up(wanted) == held.look_up(wanted)
    assert spilled.get(3) == 7 and spilled.get(999) is None
    assert len(spilled) == len(held) == 50
    spilled.close()
    held.close()
    assert spilled.look_up([1]) == {}
