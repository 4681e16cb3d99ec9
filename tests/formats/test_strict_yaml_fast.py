"""The libyaml fast path reads what the ruamel.yaml reference reads, or defers to it.

Whatever the fast path accepts, the reference accepts with the same values (types included)
and key lines; whatever breaks a rule, the fast path hands to the reference, so the error,
its code and its line are the reference's. The documents a source or repository usually holds
never defer, or the speed would be the pure parser's.
"""

from __future__ import annotations

import json
import math

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from formats.frontmatter import parse_yaml_mapping, split
from formats.strict_yaml import fast, reference
from formats.strict_yaml.errors import FrontMatterError
from tests.memoryadmin.test_frontmatter import BAD, GOOD


def _typed(value):
    """A value with each scalar's type spelled out: 1, 1.0 and True compare equal in Python."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__, value)


def _same_as_reference(source: str) -> bool:
    """True when the fast path accepted `source` (and then the reference agrees)."""
    try:
        meta, key_lines = fast.read_mapping(source)
    except fast.Defer:
        return False
    try:
        expected_meta, expected_lines = reference.read_mapping(source)
    except FrontMatterError as exc:  # pragma: no cover - reported by the assertion
        pytest.fail(f"the fast path accepted {source!r}, the reference refuses it: {exc}")
    assert _typed(meta) == _typed(expected_meta), source
    assert key_lines == expected_lines, source
    return True


def test_it_runs_on_libyaml_here():
    assert yaml.__with_libyaml__
    assert fast.AVAILABLE


TYPICAL = [
    # an OpenMemories record and a MemoryRail memory as the bench writes them
    "openmemories: '0.1'\nid: 'bench-000001'\ntitle: 'Benchmark record 1'\nkind: 'fact'\n"
    "scope: 'user'\ncreated: '2026-01-01T00:00:00Z'\nupdated: '2026-01-02T00:00:00Z'\n"
    "tags:\n  - bench\n  - group-1\n",
    'id: "20260101-x"\ntype: "decision"\ntitle: "A memory"\nstatus: "proposed"\n'
    'created: "2026-01-01T00:00:00.000Z"\nupdated: "2026-01-01T00:00:00.000Z"\n',
    "a: yes\nb: on\nc: True\nd: 017\ne: 0x1F\nf: ~\ng: 1.5\nh: '1'\ni: 0o17\nj: -.inf\nk: 1_000\n",
    'a: !!str 12\nb: !!int "7"\nc: !!float 1\nd: !!bool true\ne: !!null ~\nf: !!map {}\n',
    "nested:\n  b:\n    - c: 1\n      d: [1, {e: f}]\n  when: 2024-01-01\n",
    '{"id": "m1", "tags": ["db"], "n": null, "ok": false, "x": 1e3}\n',
    'a: |\n  block\n  text\nb: >-\n  folded\n  text\n"<<": quoted merge key\nc: <<\nd: =\n',
]


@pytest.mark.parametrize("source", TYPICAL)
def test_it_reads_typical_front_matter_without_deferring(source):
    assert _same_as_reference(source)


@pytest.mark.parametrize("document", [g[1] for g in GOOD], ids=[g[0] for g in GOOD])
def test_it_agrees_with_the_reference_on_every_good_document(document):
    text = document.decode("utf-8-sig") if isinstance(document, bytes) else document
    source = split(text)[0]
    if fast.NEEDS_REFERENCE.search(source):  # the separators case: the reference alone reads it
        assert parse_yaml_mapping(source) == reference.read_mapping(source)
        return
    if "\\ud83d" in source:
        with pytest.raises(fast.Defer):  # libyaml refuses escaped surrogate pairs
            fast.read_mapping(source)
        return
    assert _same_as_reference(source)


def _yaml_source(document: str | bytes) -> str | None:
    """The front matter of a bad document, if what is bad about it is in its YAML."""
    text = document.decode("utf-8", "replace") if isinstance(document, bytes) else document
    try:
        source = split(text)[0]
    except FrontMatterError:
        return None
    return source if "\x00" not in source and len(source) < 250_000 else None


BAD_YAML = [
    (name, source)
    for name, document, code, _line in BAD
    if code.startswith(("yaml-", "frontmatter-not-mapping", "nul-byte"))
    and (source := _yaml_source(document)) is not None
    and not fast.NEEDS_REFERENCE.search(source)
    and (code != "nul-byte" or "\\" in source)  # a NUL written as an escape
]


@pytest.mark.parametrize("source", [b[1] for b in BAD_YAML], ids=[b[0] for b in BAD_YAML])
def test_it_defers_every_bad_yaml_document_to_the_reference(source):
    with pytest.raises(FrontMatterError):
        reference.read_mapping(source)
    with pytest.raises(fast.Defer):
        fast.read_mapping(source)


TOKENS = st.sampled_from(
    [
        *("---", "...", "\n", "\r\n", "\r", ":", " ", "  ", "-", "[", "]", "{", "}", ",", "?"),
        *("&a", "*a", "!", "!!", "!!int", "!!str", "!!float", "!!bool", "!!null", "!!map"),
        *("!!seq", "!<tag:yaml.org,2002:int>", "<<", "=", "#", "'", '"', "|", ">", "|-", ">+"),
        *("a", "1", "0x1F", "0o17", "017", "09", "1_000", "1__0", "_", "1.5e3", "1e3", "+1"),
        *("-0", "0.", ".5", ".inf", "-.inf", ".NaN", "0b101", "1:20", "2024-01-01", "~"),
        *("null", "Null", "NULL", "true", "True", "FALSE", "yes", "on"),
        *("\\", "\\u0041", "\\U0001F600", "\\0", "\\x00", "\\N", "\\_", "\\/", "\\ud83d", "%"),
        *("@", "`", "\x00", "\x01", "\x7f", "\x80", "\x9f", "\xa0", "\ufeff", "\x0c", "\t"),
        *("\u00e9", "\ud7ff", "\ue000", "\ufffd", "\U0001f600", "\n  ", "\n- ", "\nb: "),
        *("a: ", "- a: ", "? "),
    ]
)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(TOKENS, st.text(max_size=4)), max_size=60).map("".join))
def test_it_never_accepts_what_the_reference_refuses_or_reads_otherwise(source):
    if not fast.NEEDS_REFERENCE.search(source):
        _same_as_reference(source)


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=20),
)
VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.text(max_size=8), VALUES, max_size=6), st.booleans())
def test_it_agrees_on_json_and_block_yaml_of_any_data(meta, as_json):
    if as_json:
        source = json.dumps(meta, indent=2) + "\n"
    else:
        source = yaml.safe_dump(meta, allow_unicode=True, sort_keys=False)
    if not fast.NEEDS_REFERENCE.search(source):
        _same_as_reference(source)
