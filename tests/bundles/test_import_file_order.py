"""File import in one streamed pass: whatever order the file's top-level keys come in, the
report, the rows and the checksum verdict equal those of the in-memory import."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bundles.imports import bundle_import, bundle_import_file
from bundles.models import Chunk, Entity, ImportRun, MemoryEdge
from formats.memoryai import SECTIONS
from memoryadmin.audit import Actor
from memoryadmin.models import Team
from tests.bundles.helpers import chunk, sample_bundle

pytestmark = pytest.mark.django_db

HEAD = ("format", "version", "generator", "exported_at", "manifest")
ORDERS = {
    "canonical": sorted(HEAD + SECTIONS),
    "head first, edges before chunks": [
        *HEAD,
        "memory_edges",
        "agents",
        "chunks",
        "entities",
        "mood_states",
        "l2_sessions",
    ],
    "manifest last (our exports)": [k for k in HEAD if k != "manifest"] + [*SECTIONS, "manifest"],
    "version after the records": [
        "manifest",
        "format",
        *reversed(SECTIONS),
        "generator",
        "exported_at",
        "version",
    ],
}


def _bundle() -> dict:
    bundle = sample_bundle()
    bundle["chunks"].append({"id": 99, "content": 5, "memory_type": "fact"})  # invalid
    bundle["chunks"].append(chunk(16, "Prefers tabs over spaces"))  # a duplicate
    bundle["memory_edges"].append({"chunk_a": 10, "chunk_b": 404})  # names no chunk
    return bundle


def _write(path: Path, bundle: dict, order: list[str]) -> Path:
    assert sorted(order) == sorted(bundle)
    path.write_text(json.dumps({key: bundle[key] for key in order}), encoding="utf-8")
    return path


def _state(team: Team) -> tuple:
    return (
        sorted(Chunk.objects.filter(team=team).values_list("content_hash", "memory_type")),
        sorted(
            MemoryEdge.objects.filter(team=team).values_list(
                "source__content_hash", "target__content_hash", "co_activation_count"
            )
        ),
        sorted(Entity.objects.filter(team=team).values_list("name", "frequency")),
    )


@pytest.mark.parametrize("order", list(ORDERS))
def test_it_imports_a_file_the_same_whatever_its_key_order(tmp_path, team, other_team, order):
    bundle = _bundle()
    # the checksum as build_bundle made it (before our additions): a mismatch either way
    expected = bundle_import(team=other_team, actor=Actor.system(), bundle=bundle)
    path = _write(tmp_path / "bundle.json", bundle, ORDERS[order])
    result = bundle_import_file(team=team, actor=Actor.system(), path=path)
    assert result == expected
    assert result["report"]["chunks"] == {
        "inserted": 6,
        "skipped_duplicate": 1,
        "skipped_invalid": 1,
    }
    assert _state(team) == _state(other_team)
    again = bundle_import_file(team=team, actor=Actor.system(), path=path)
    assert again["report"]["chunks"] == {
        "inserted": 0,
        "skipped_duplicate": 7,
        "skipped_invalid": 1,
    }
    assert again["report"]["memory_edges"] == result["report"]["memory_edges"]


@pytest.mark.parametrize("order", list(ORDERS))
def test_it_verifies_the_checksum_in_any_key_order(tmp_path, team, order):
    path = _write(tmp_path / "bundle.json", sample_bundle(), ORDERS[order])
    result = bundle_import_file(team=team, actor=Actor.system(), path=path)
    assert not [w for w in result["report"]["warnings"] if "checksum" in w]


def test_it_refuses_a_repeated_section_key(tmp_path, team):
    from formats.memoryai import BundleError

    text = json.dumps(sample_bundle())[:-1] + ', "chunks": []}'
    path = tmp_path / "bundle.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BundleError) as caught:
        bundle_import_file(team=team, actor=Actor.system(), path=path)
    assert caught.value.code == "duplicate-key"
    assert not Chunk.objects.filter(team=team).exists()


def test_it_takes_the_manifest_that_closes_the_file_from_its_tail(tmp_path, team, other_team):
    """Our own exports: one pass over the records, no pass of its own for the head."""
    from bundles.imports import files

    bundle = _bundle()
    expected = bundle_import(team=other_team, actor=Actor.system(), bundle=bundle)
    path = _write(tmp_path / "bundle.json", bundle, ORDERS["manifest last (our exports)"])
    heads = []
    real = files.read_head
    files.read_head = lambda stream: heads.append(1) or real(stream)
    try:
        result = bundle_import_file(team=team, actor=Actor.system(), path=path)
    finally:
        files.read_head = real
    assert heads == [] and result == expected
    assert _state(team) == _state(other_team)


@pytest.mark.parametrize(
    "order",
    [
        # a section missing: the tail's guess (every section) is not what the pass reads
        [k for k in HEAD if k != "manifest"] + [s for s in SECTIONS if s != "agents"],
        # a head value between the sections
        ["format", "version", "exported_at", "chunks", "generator", "memory_edges"],
    ],
    ids=["a section missing", "generator between sections"],
)
def test_it_reads_the_head_in_a_pass_of_its_own_when_the_tail_guessed_wrong(
    tmp_path, team, other_team, order
):
    from bundles.imports import files

    bundle = {key: value for key, value in _bundle().items() if key in order or key == "manifest"}
    order = [*order, "manifest"] if order[-1] != "manifest" else order
    expected = bundle_import(team=other_team, actor=Actor.system(), bundle=bundle)
    path = _write(tmp_path / "bundle.json", bundle, order)
    heads = []
    real = files.read_head
    files.read_head = lambda stream: heads.append(1) or real(stream)
    try:
        result = bundle_import_file(team=team, actor=Actor.system(), path=path)
    finally:
        files.read_head = real
    assert heads == [1] and result == expected
    assert _state(team) == _state(other_team)
    assert ImportRun.objects.filter(team=team).count() == 1  # the guess left nothing behind
