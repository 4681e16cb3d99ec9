"""The one-pass bundle file reader (formats.memoryai.reader): no database, any read block size."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formats.memoryai import SECTIONS, BundleError
from formats.memoryai import reader as bundlefile
from formats.memoryai.reader import BundleFile


def _read(data: bytes, *, block: int | None = None, monkeypatch=None) -> dict:
    if block is not None:
        monkeypatch.setattr(bundlefile, "BLOCK_CHARS", block)
    return {
        key: list(value) if is_array else value
        for key, is_array, value in BundleFile(io.BytesIO(data), frozenset(SECTIONS)).items()
    }


DOCUMENT = {
    "format": "memoryai-bundle",
    "version": 1,
    "manifest": {"scope": "full", "counts": {"chunks": 3}, "list": [1, 2.5, -1e-7, True, None]},
    "chunks": [
        {"content": 'caf\u00e9 "quoted" \\ \u2603 \U0001f600', "n": 12345678901234567890},
        {"content": "", "tags": [], "metadata": {"deep": {"er": [[], {}]}}},
        {"content": "x" * 5000},
    ],
    "memory_edges": [],
    "entities": [{"name": "\u00e9" * 40, "frequency": 3}] * 4,
    "x_vendor": {"kept": "as a plain value"},
}


@pytest.mark.parametrize("block", [1, 2, 3, 7, 64, 4096, 1 << 20])
@pytest.mark.parametrize("indent", [None, 2])
def test_it_reads_every_value_whatever_the_block_size(block, indent, monkeypatch):
    data = json.dumps(DOCUMENT, indent=indent, ensure_ascii=indent is None).encode("utf-8")
    assert _read(data, block=block, monkeypatch=monkeypatch) == DOCUMENT


def test_it_hands_record_sections_over_as_iterators_in_file_order():
    data = json.dumps(DOCUMENT).encode()
    seen = [
        (key, is_array)
        for key, is_array, _ in BundleFile(io.BytesIO(data), frozenset(SECTIONS)).items()
    ]
    assert seen == [
        ("format", False),
        ("version", False),
        ("manifest", False),
        ("chunks", True),
        ("memory_edges", True),
        ("entities", True),
        ("x_vendor", False),
    ]


def test_it_skips_what_the_caller_leaves_unread():
    data = json.dumps(DOCUMENT).encode()
    values = {}
    for key, is_array, value in BundleFile(io.BytesIO(data), frozenset(SECTIONS)).items():
        if is_array:
            values[key] = next(value, None)  # one record, then on to the next key
        else:
            values[key] = value
    assert values["chunks"] == DOCUMENT["chunks"][0]
    assert values["entities"] == DOCUMENT["entities"][0]
    assert values["x_vendor"] == DOCUMENT["x_vendor"]


def test_it_reads_a_section_that_is_not_an_array_as_a_plain_value():
    data = b'{"chunks": {"not": "an array"}, "format": "memoryai-bundle"}'
    assert _read(data) == {"chunks": {"not": "an array"}, "format": "memoryai-bundle"}


@pytest.mark.parametrize(
    ("data", "code", "fragment"),
    [
        (b"", "not-object", "JSON object"),
        (b"[1]", "not-object", "JSON object"),
        (b'{"a": 1,}', "malformed-json", "expected a key (character 8)"),
        (b'{"chunks": [1,]}', "malformed-json", "Expecting value"),
        (b'{"chunks": [1 2]}', "malformed-json", "expected ',' or ']' (character 14)"),
        (b'{"a": 1 "b": 2}', "malformed-json", "expected ',' or '}'"),
        (b'{"a": NaN}', "malformed-json", "NaN is not JSON"),
        (b'{"a": -Infinity}', "malformed-json", "-Infinity is not JSON"),
        (b'{"a": 1} trailing', "malformed-json", "content after the bundle (character 9)"),
        (b'{"a": 1, "a": 2}', "duplicate-key", "'a' repeats"),
        (b'{"chunks": [{"a": "\xff"}]}', "malformed-json", "not valid UTF-8"),
        (b'{"chunks": [', "malformed-json", "ends inside an array"),
        (b'{"a": "never closed', "malformed-json", "Unterminated string"),
        (b'{"a": tru}', "malformed-json", "Expecting value"),
        (b'{"a": "\x01"}', "malformed-json", "Invalid control character"),
        (b'{"a": 1', "malformed-json", "the end of the file"),
        (b'{"a": ', "malformed-json", "ends inside a value"),
        (b'{"chunks": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}", "malformed-json", "deeply"),
    ],
)
@pytest.mark.parametrize("block", [1, 5, 1 << 20])
def test_it_rejects_what_is_not_one_json_object(data, code, fragment, block, monkeypatch):
    with pytest.raises(BundleError) as caught:
        _read(data, block=block, monkeypatch=monkeypatch)
    assert caught.value.code == code
    assert fragment in caught.value.message


def test_it_fails_at_an_early_error_without_reading_the_rest(monkeypatch):
    """A syntax error in the first record is reported at once, not after the whole file."""
    reads = []

    class Counting(io.BytesIO):
        def read(self, size: int = -1) -> bytes:
            reads.append(size)
            return super().read(size)

    monkeypatch.setattr(bundlefile, "BLOCK_CHARS", 64)
    data = b'{"chunks": [{"a": 1 "b": 2}, ' + b'{"ok": true}, ' * 10_000 + b"{}]}"
    with pytest.raises(BundleError, match="delimiter"):
        list(_read_lazily(Counting(data)))
    assert len(reads) < 5


def _read_lazily(stream):
    for _, is_array, value in BundleFile(stream, frozenset(SECTIONS)).items():
        if is_array:
            yield from value


def test_it_refuses_a_value_past_the_size_limit(monkeypatch):
    monkeypatch.setattr(bundlefile, "MAX_VALUE_CHARS", 1000)
    monkeypatch.setattr(bundlefile, "BLOCK_CHARS", 100)
    data = b'{"chunks": [{"content": "' + b"x" * 5000 + b'"}]}'
    with pytest.raises(BundleError, match="longer than 1000 characters"):
        _read(data)


text = st.text(alphabet=st.characters(exclude_categories=("Cs",)))  # UTF-8 has no lone surrogates
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(
    head=st.dictionaries(text.filter(lambda k: k not in SECTIONS), json_values, max_size=4),
    records=st.lists(json_values, max_size=6),
    block=st.integers(min_value=1, max_value=64),
    indent=st.sampled_from([None, 1]),
)
def test_it_round_trips_any_json_bundle(head, records, block, indent):
    document = {**head, "chunks": records}
    data = json.dumps(document, indent=indent, ensure_ascii=False).encode("utf-8")
    original = bundlefile.BLOCK_CHARS
    bundlefile.BLOCK_CHARS = block
    try:
        assert _read(data) == document
    finally:
        bundlefile.BLOCK_CHARS = original


@pytest.mark.parametrize("block", range(1, 24))
def test_it_reads_numbers_cut_at_any_block_boundary(block, monkeypatch):
    data = b'{"version": 1, "chunks": [1.5e-3, 12, -0.25, 1E+2, 0], "n": -7.0}'
    assert _read(data, block=block, monkeypatch=monkeypatch) == {
        "version": 1,
        "chunks": [0.0015, 12, -0.25, 100.0, 0],
        "n": -7.0,
    }
