"""OpenMemories 0.1 conformance: one fixture on disk per MUST / MUST NOT of the spec.

records/valid/*.md must be accepted; records/invalid/<code>[--case].md must be rejected with
<code>. sources/<case>/ is a whole source with expected.json (its outcome as a reader sees it).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from formats import openmemories as om
from sources.fetchers import FetchPolicy, SourceError
from sources.fetchers.local import LocalFetcher
from sources.fetchers.read import read_source

HERE = Path(__file__).resolve().parent
VALID = sorted((HERE / "records" / "valid").glob("*.md"))
INVALID = sorted((HERE / "records" / "invalid").glob("*.md"))
SOURCES = sorted(p for p in (HERE / "sources").iterdir() if p.is_dir())
NOW = datetime(2026, 12, 1, tzinfo=UTC)


def test_it_has_fixtures_for_every_rule():
    assert len(VALID) >= 10 and len(INVALID) >= 40 and len(SOURCES) >= 30


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_it_accepts_valid_record(path: Path):
    record = om.parse_record(path.read_bytes(), expected_id="r", path=path.name)
    assert record.id == "r"
    assert record.body.strip()
    assert record.created.tzinfo is not None


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.stem)
def test_it_rejects_invalid_record_with_its_code(path: Path):
    expected = path.stem.split("--", 1)[0]
    with pytest.raises(om.Rejection) as caught:
        om.parse_record(path.read_bytes(), expected_id="r", path=path.name)
    assert caught.value.code == expected, str(caught.value)
    assert caught.value.message
    assert caught.value.path == path.name


@pytest.mark.parametrize("root", SOURCES, ids=lambda p: p.name)
def test_it_reads_source_as_specified(root: Path):
    expected = json.loads((root / "expected.json").read_text())
    fetcher = LocalFetcher(str(root), policy=FetchPolicy())
    if expected["error"]:
        with pytest.raises(SourceError) as caught:
            read_source(fetcher, now=NOW)
        assert caught.value.code == expected["error"], str(caught.value)
        return
    result = read_source(fetcher, now=NOW)
    assert sorted(result.selection.active) == expected["active"]
    assert result.selection.inactive == expected["inactive"]
    if "rejected" in expected:
        got = {r.id: r.code for r in result.rejections}
        assert got == expected["rejected"], result.rejections
    else:
        assert sorted(r.code for r in result.rejections) == sorted(expected["rejected_codes"])
    assert [[p.code, list(p.ids)] for p in result.selection.problems] == [
        [code, ids] for code, ids in expected["problems"]
    ]
    for rejection in result.rejections:
        assert rejection.message


def test_it_keeps_matching_ids_of_two_sources_apart():
    """The same id in two sources stays two records; no winner is chosen by timestamp."""
    root = HERE / "sources" / "valid-basic"
    first = read_source(LocalFetcher(str(root), policy=FetchPolicy()), now=NOW)
    other = HERE / "sources" / "record-file-missing"
    second = read_source(LocalFetcher(str(other), policy=FetchPolicy()), now=NOW)
    assert first.identity != second.identity
    assert "a" in first.selection.active and "a" in second.selection.active
