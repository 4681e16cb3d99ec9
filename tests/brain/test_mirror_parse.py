"""The mirror's cheap check of a wanted item agrees with the chunk format's full validation:
the same hash for what it accepts, the same skip and error code for what it refuses."""

from __future__ import annotations

import pytest

from bundles.mirrored import PROVENANCE_KEY, Mirrored, MirrorResult, parse_wanted
from formats import memoryai as protocol


def _item(**changes) -> Mirrored:
    values = {
        "ref": "source:1:r1",
        "content": "Title\n\nBody ü",
        "memory_type": "fact",
        "tags": ["a", "b"],
        "zone": "standard",
        "is_pinned": False,
        "provenance": {"origin": "source", "ref": "source:1:r1", "source_id": 1, "stale": False},
    }
    return Mirrored(**{**values, **changes})


CASES = {
    "plain": _item(),
    "dna zone": _item(zone="critical", memory_type="decision"),
    "pinned": _item(is_pinned=True),
    "vendor type": _item(memory_type="x_custom"),
    "unknown type": _item(memory_type="nonsense"),
    "bad zone": _item(zone="nowhere"),
    "content too long": _item(content="x" * (protocol.MAX_CONTENT_CHARS + 1)),
    "nul in content": _item(content="a\x00b"),
    "lone surrogate in content": _item(content="a\udc80b"),
    "too many tags": _item(tags=[f"t{n}" for n in range(protocol.MAX_TAGS + 1)]),
    "tag too long": _item(tags=["t" * (protocol.MAX_NAME_CHARS + 1)]),
    "nul in a tag": _item(tags=["a\x00"]),
    "surrogate in a tag": _item(tags=["a\ud800"]),
    "nested provenance": _item(provenance={"ref": "r", "approvals": [{"by": "x", "n": 1.5}]}),
    "nan in provenance": _item(provenance={"ref": "r", "score": float("nan")}),
    "nul in provenance": _item(provenance={"ref": "r\x00"}),
    # tags and provenance are checked as one joined text (round 8): what joining may hide
    "halves of a pair in two tags": _item(tags=["a\ud83d", "\ude00b"]),
    "a pair's halves across a tag and a key": _item(
        tags=["x\ud83d"], provenance={"\ude00": "v", "ref": "r"}
    ),
    "surrogate in a provenance key": _item(provenance={"k\udc80": "v"}),
    "surrogate in a provenance value": _item(provenance={"ref": "r", "source": "s\udfff"}),
    "nul in a provenance key": _item(provenance={"k\x00": "v"}),
    "nul in the last tag": _item(tags=["a", "b\x00"]),
    "a newline in a tag": _item(tags=["a\nb"]),
    "non-ascii everywhere": _item(tags=["ü", "日本"], provenance={"ß": "é", "ref": "€"}),
    "a non-string tag": _item(tags=["a", 3]),
    "a non-string provenance key": _item(provenance={1: "v"}),
    "empty tags and provenance": _item(tags=[], provenance={}),
    "provenance not a dict": _item(provenance=["ref"]),
}


@pytest.mark.parametrize("name", CASES)
def test_it_accepts_and_refuses_what_validate_chunk_does(name):
    item = CASES[name]
    try:
        expected = protocol.validate_chunk(
            {
                "content": item.content,
                "memory_type": item.memory_type,
                "tags": item.tags,
                "zone": item.zone,
                "is_pinned": item.is_pinned,
                "metadata": {PROVENANCE_KEY: item.provenance},
            },
            embedding_dim=0,
            path=item.ref,
        )
        error = None
    except protocol.BundleError as exc:
        expected, error = None, exc.code
    result = MirrorResult()
    parsed = parse_wanted("source:1", [item], result)
    if error is not None:
        assert parsed == {}
        assert result.skipped == [f"{item.ref}: {error}"]
        return
    assert result.skipped == []
    wanted = parsed[item.ref]
    assert wanted.content_hash == expected.content_hash
    assert wanted.is_dna == expected.is_dna
    assert wanted.metadata == expected.metadata
