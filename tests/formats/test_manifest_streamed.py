"""The manifest's entries are read one at a time (formats/openmemories/manifest.py `_streamed`);
anything irregular is parsed whole as before. Both ways give the same manifest or error."""

from __future__ import annotations

from typing import Any

import pytest

from formats import openmemories as om
from formats.openmemories import manifest as module

E = '{"id": "a", "path": "a.md"}'
CASES = [
    '{"openmemories": "0.1", "name": "N", "memories": [' + E + "]}",
    ' \n\t{ "openmemories" : "0.1" ,\r\n "name":"N","memories" : [ ' + E + " , " + E + " ] } \n",
    '\ufeff{"openmemories": "0.1", "name": "N", "memories": []}',
    '{"openmemories": "0.1", "name": "N", "memories": [ ]}',
    '{"openmemories": "0.1", "name": "N", "memories": [' + E + ",]}",
    '{"openmemories": "0.1", "name": "N", "memories": [' + E + "]} x",
    '{"openmemories": "0.1", "name": "N", "memories": [' + E + "]",
    '{"openmemories": "0.1", "name": "N", "name": "M", "memories": []}',
    '{"openmemories": "0.1", "name": "N", "memories": [{"id": "a", "id": "b", "path": "a.md"}]}',
    '{"openmemories": "0.1", "name": "N", "memories": [{"id": "a", "path": "a.md", "x-n": NaN}]}',
    '{"openmemories": "0.1", "name": "N", "memories": {"id": "a"}}',
    '{"openmemories": "0.1", "name": "N", "memories": "a.md"}',
    '{"openmemories": "0.1", "name": "N"}',
    '{"openmemories": "0.1", "name": "N", "memories": [], "extra": 1}',
    '{"openmemories": "0.1", "name": "N", "x-e": {"id": "a", "path": "a.md"}, "memories": []}',
    '{"openmemories": 0.1, "name": "N", "memories": []}',
    '{"memories": [' + E + '], "openmemories": "0.1", "name": "N"}',
    '{"openmemories": "0.1", "name": "N", "memories": [1, "x", null, [], ' + E + "]}",
    '{"openmemories": "0.1", "name": "N", "memories": [' + E + ", " + E + "]}",
    '{"openmemories": "0.1", "name": "N", "memories": [{"id": "a\\u0000", "path": "b.md"}]}',
    '{"openmemories": "0.1", "name": "N", "memories": [{"id": "b", "path": "../b.md"}]}',
    '{"openmemories": "0.1", "name": "N", "memories": [{"id": "c", "path": "c.md", "k": 1}]}',
    '{"openmemories": "0.1", "name": "N", "memories": [' + E + ', {"id": "a", "path": "z.md"}]}',
    '{"openmemories": "0.1", "name": "N", "memories": [[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]}',
    '["openmemories"]',
    "{}",
    "",
    '{"openmemories": "0.1", "name": "N", "memories": [' + ", ".join([E] * 4) + "]}",
]


def _outcome(data: bytes) -> Any:
    try:
        manifest = om.parse_manifest(data, max_entries=3)
    except om.ManifestError as exc:
        return ("error", exc.code, exc.message)
    rejected = [(r.code, r.message, r.line, r.path, r.id) for r in manifest.rejected]
    return ("manifest", manifest.name, manifest.entries, rejected, manifest.extensions)


@pytest.mark.parametrize("text", CASES)
def test_the_streamed_read_gives_what_the_whole_parse_gives(text, monkeypatch):  # type: ignore[no-untyped-def]
    data = text.encode("utf-8")
    streamed = _outcome(data)

    def whole(*args: Any, **kwargs: Any) -> Any:
        raise module._Irregular

    monkeypatch.setattr(module, "_streamed", whole)
    assert streamed == _outcome(data)
