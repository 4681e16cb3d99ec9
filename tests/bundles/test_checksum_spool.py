"""The file import's checksum. With the head known before the pass (the manifest closes the
file: our own exports) a section is hashed as it is read when its turn has come; otherwise
its records are spooled and hashed at the end, an all-ASCII section a block at a time
without being split into records. Whatever the order and the block size, the verdict is the
one the whole bundle's checksum gives, in both forms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bundles.imports import bundle_import_file, files
from formats import memoryai as protocol
from formats.memoryai import SECTIONS
from memoryadmin.audit import Actor
from tests.bundles.helpers import chunk, make_bundle

pytestmark = pytest.mark.django_db

BLOCKS = [1, 7, 64, 1 << 20]
HEAD = ["format", "version", "generator", "exported_at"]
ORDERS = {
    "head first": None,  # build_bundle's: the head, then the sections
    "manifest last": [*HEAD, *SECTIONS, "manifest"],  # hashed as read
    "manifest last, entities first": [*HEAD, "entities", *SECTIONS[:2], *SECTIONS[3:], "manifest"],
    "head first, sections in their own order": [*HEAD, "manifest", *reversed(SECTIONS)],
    "head first, a key after the sections": ["format", "version", "manifest", *SECTIONS, *HEAD[2:]],
}


def _bundle(content: str) -> dict:
    chunks = [chunk(i, f"Fact number {i}") for i in range(1, 9)]
    chunks.insert(4, chunk(50, content))
    edges = [{"chunk_a": i, "chunk_b": i + 1, "edge_type": "x"} for i in range(1, 8)]
    entities = [{"name": f"entity {i}", "frequency": i} for i in range(1, 5)]
    return make_bundle(chunks=chunks, edges=edges, entities=entities)


def _import(
    team, tmp_path: Path, bundle: dict, checksum: str | None, order: str = "head first"
) -> list[str]:
    bundle = {**bundle, "manifest": {**bundle["manifest"], "checksum": checksum}}
    if ORDERS[order] is not None:
        bundle = {key: bundle[key] for key in ORDERS[order]}
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(bundle, ensure_ascii=False), encoding="utf-8")
    report = bundle_import_file(team=team, actor=Actor.system(), path=path)["report"]
    return [w for w in report["warnings"] if "checksum" in w]


@pytest.mark.parametrize("order", list(ORDERS))
@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize("content", ["plain ASCII text", "Met the café team in Zürich 🎉"])
def test_the_verdict_is_the_whole_bundles_at_any_block_size(
    tmp_path, team, monkeypatch, block, content, order
):
    monkeypatch.setattr(files, "SPOOL_READ", block)
    bundle = _bundle(content)
    utf8 = protocol.bundle_checksum(bundle)
    ascii_form = protocol.bundle_checksum(bundle, ascii_escaped=True)
    assert _import(team, tmp_path, bundle, utf8, order) == []
    assert _import(team, tmp_path, bundle, ascii_form, order) == []  # a re-import: all held
    wrong = _import(team, tmp_path, bundle, "0" * 64, order)
    assert len(wrong) == 1
    assert f"content hashes to {utf8}" in wrong[0]


@pytest.mark.parametrize("order", list(ORDERS))
@pytest.mark.parametrize("block", BLOCKS)
def test_a_section_of_ascii_records_with_one_that_is_not(tmp_path, team, monkeypatch, block, order):
    """The non-ASCII record comes last: the section was all ASCII until then."""
    monkeypatch.setattr(files, "SPOOL_READ", block)
    bundle = _bundle("plain")
    bundle["chunks"].append(chunk(99, "naïve"))
    bundle = {**bundle, "manifest": {**bundle["manifest"], "checksum": None}}
    utf8 = protocol.bundle_checksum(bundle)
    for form in (utf8, protocol.bundle_checksum(bundle, ascii_escaped=True)):
        assert _import(team, tmp_path, bundle, form, order) == []
    wrong = _import(team, tmp_path, bundle, "0" * 64, order)
    assert len(wrong) == 1 and f"content hashes to {utf8}" in wrong[0]


def _records() -> list[bytes]:
    return [protocol.encode_record({"n": n, "text": "x" * n})[1] for n in range(12)]


def test_joined_records_hash_as_the_records_one_by_one():
    head = {"format": "memoryai-bundle", "version": 1, "manifest": {}}
    present = {"chunks": "array", "entities": "array"}
    one_by_one = protocol.StreamingChecksum(head, present)
    for data in _records():
        one_by_one.feed_encoded("chunks", data)
    one_by_one.feed_encoded("entities", b'{"name":"a"}')
    joined = protocol.StreamingChecksum(head, present)
    text = b",".join(_records())
    joined.feed_joined("chunks", [text[:5], b"", text[5:40], text[40:]])
    joined.feed_joined("entities", [b'{"name":"a"}'])
    assert joined.hexdigests() == one_by_one.hexdigests()


def test_joined_records_must_be_ascii():
    checksum = protocol.StreamingChecksum({"manifest": {}}, {"chunks": "array"})
    with pytest.raises(ValueError, match="ASCII"):
        checksum.feed_joined("chunks", ['{"text":"é"}'.encode()])


@pytest.mark.parametrize("order", list(ORDERS))
def test_a_section_counted_empty_that_has_records(tmp_path, team, order):
    """The manifest counts no agents, and the agents come after the chunks with a record: the
    chunks hashed in their turn are hashed again in a pass of the checksum's own."""
    bundle = _bundle("plain")
    bundle["agents"] = [{"key": "agent-1", "data": {"name": "one"}}]
    bundle["manifest"]["counts"]["agents"] = 0
    bundle = {**bundle, "manifest": {**bundle["manifest"], "checksum": None}}
    if ORDERS[order] is None:  # the agents after the chunks
        bundle = {**{k: v for k, v in bundle.items() if k != "agents"}, "agents": bundle["agents"]}
    utf8 = protocol.bundle_checksum(bundle)
    assert _import(team, tmp_path, bundle, utf8, order) == []
    wrong = _import(team, tmp_path, bundle, "0" * 64, order)
    assert len(wrong) == 1 and f"content hashes to {utf8}" in wrong[0]
