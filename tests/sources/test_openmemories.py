"""The pure format library: no Django, timestamps, path rules, selection."""

from __future__ import annotations

import ast
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from formats import openmemories as om
from sources import fetchers
from tests.sources.helpers import record_text

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def test_it_keeps_the_fetchers_free_of_django():
    """The fetchers import no Django module at the top (the format library's own check is
    tests/formats/test_no_django.py)."""
    names = []
    for module in Path(fetchers.__file__).parent.glob("*.py"):
        tree = ast.parse(module.read_text())
        names += [
            alias.name for node in tree.body if isinstance(node, ast.Import) for alias in node.names
        ]
        names += [node.module or "" for node in tree.body if isinstance(node, ast.ImportFrom)]
    assert not [name for name in names if name.split(".")[0] == "django"]


@given(st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9999, 1, 1)))
def test_it_round_trips_timestamps(value: datetime):
    value = value.replace(tzinfo=UTC)
    assert om.parse_timestamp(om.format_timestamp(value)) == value


@given(st.lists(st.from_regex(r"[a-z0-9_-]{1,8}", fullmatch=True), min_size=1, max_size=4))
def test_it_accepts_plain_relative_paths(segments: list[str]):
    assert om.path_problem("/".join(segments) + ".md") is None


@given(st.text(max_size=30))
def test_it_never_accepts_a_path_that_escapes(path: str):
    if om.path_problem(path) is None:
        parts = path.split("/")
        assert ".." not in parts and not path.startswith("/") and path.endswith(".md")
        assert not any(c in path for c in "\\%?#:")


def test_it_names_the_field_and_line_in_rejections():
    with pytest.raises(om.Rejection) as caught:
        om.parse_record(record_text("a", kind="opinion"), expected_id="a", path="a.md")
    assert caught.value.code == "bad-kind" and caught.value.line == 5
    assert "'kind'" in caught.value.message and caught.value.path == "a.md"


def test_it_keeps_extension_keys():
    record = om.parse_record(record_text("a", extra="x-team: {lead: 'Ann'}\n"))
    assert record.extensions == {"x-team": {"lead": "Ann"}}


def test_it_rejects_a_manifest_that_is_too_large():
    with pytest.raises(om.ManifestError) as caught:
        om.parse_manifest(b"{}" + b" " * 100, max_bytes=50)
    assert caught.value.code == "too-large"


def _rec(record_id: str, **kwargs) -> om.Record:  # type: ignore[no-untyped-def]
    return om.Record(
        id=record_id,
        title="t",
        kind="fact",
        scope="user",
        created=NOW,
        updated=NOW,
        body="b",
        **kwargs,
    )


def test_it_keeps_a_record_superseded_by_an_expired_replacement_inactive():
    expired = _rec("new", supersedes=("old",), expires=NOW - timedelta(days=1))
    selection = om.select([expired, _rec("old")], now=NOW)
    assert selection.inactive == {"new": "expired", "old": "superseded"}


def test_it_applies_replacements_pointing_out_of_a_cycle():
    records = [
        _rec("a", supersedes=("b", "c")),
        _rec("b", supersedes=("a",)),
        _rec("c"),
    ]
    selection = om.select(records, now=NOW)
    assert selection.active == {"a", "b"}
    assert selection.inactive == {"c": "superseded"}
    assert [(p.code, p.ids) for p in selection.problems] == [("supersedes-cycle", ("a", "b"))]
