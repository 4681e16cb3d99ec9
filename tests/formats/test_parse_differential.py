"""The fast paths of the strict parse against the paths they stand in for, on many generated
and mutated front matters: libyaml's composer against its event stream and the ruamel.yaml
reference, a whole record read with libyaml against one read by the reference alone (the same
record, or the same rejection: code, message and line), the LF-only split against the CRLF one
and the usual timestamp shape against the pattern.
"""

from __future__ import annotations

from datetime import datetime

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from formats import frontmatter
from formats.openmemories.model import Rejection
from formats.openmemories.records import parse_record
from formats.openmemories.text import _timestamp_by_pattern, parse_timestamp
from formats.strict_yaml import fast, lines, reference
from formats.strict_yaml.errors import FrontMatterError
from tests.formats.test_strict_yaml_fast import TOKENS, _typed

RECORD = (
    "---\nopenmemories: '0.1'\nid: 'rec-1'\ntitle: Plain title\nkind: fact\nscope: user\n"
    "created: '2026-01-01T00:00:00Z'\nupdated: 2026-01-02T00:00:00Z\n"
    "tags:\n  - bench\n  - group-1\nprovenance:\n  source: https://example.com/a\n"
    "  author: me\nsupersedes: [rec-0]\nx-team: {n: 1, ok: true}\n---\n\nThe body.\n"
)

# What a mutation inserts or writes over: YAML's indicators, the record's own words, numbers,
# keys that break a rule (duplicates, unknown, merge), and characters that send a document
# down another path (tabs, escapes, CR, non-ASCII).
PIECES = st.one_of(
    TOKENS,
    st.sampled_from(
        [
            *("id: ", "kind: ", "title: ", "x-a: ", "bogus: ", "<<: ", "tags: ", "- ", "\n  - "),
            *("'0.1'", "0.1", "fact", "project", "user", "file:///x", "https://e.org/#f"),
            *("2026-01-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-01-01T00:00:00.5Z"),
            *("2026-01-01t00:00:00z", "\u0662026-01-01T00:00:00Z", "''", '""', "[]", "{}"),
            *("rec-1", "rec-2", "\n\n", "\n---\n", "\n...\n", "é", "\\n", "\\0", "\\ud800"),
        ]
    ),
)


def _mutate(data: st.DataObject, text: str, first: int = 4) -> str:
    """`text` with a few insertions, overwrites and deletions at drawn places from `first` on
    (by default after the opening '---' line, which the split test mutates too)."""
    for _ in range(data.draw(st.integers(1, 4))):
        start = data.draw(st.integers(first, len(text)))
        end = min(len(text), start + data.draw(st.integers(0, 6)))
        action = data.draw(st.sampled_from(["insert", "replace", "delete"]))
        piece = "" if action == "delete" else data.draw(PIECES)
        text = text[:start] + piece + text[start if action == "insert" else end :]
    return text


def _outcome(read, source: str):
    try:
        meta, lines = read(source)
    except fast.Defer:
        return "defer"
    return _typed(meta), lines


def _composed_agrees(source: str) -> None:
    """The composer reads what the event stream reads (or both defer), and the reference
    accepts whatever they accept, with the same values and key lines."""
    if not fast._composable(source) or fast.needs_reference(source):
        return
    composed = _outcome(fast._read_composed, source)
    assert composed == _outcome(fast._read_events, source), source
    if composed != "defer":
        meta, lines = reference.read_mapping(source)
        assert composed == (_typed(meta), lines), source


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(TOKENS, st.text(max_size=4)), max_size=60).map("".join))
@example("\ufeff\ufeffa: ")  # libyaml skipped both marks, the reference only the first
def test_it_composes_what_the_event_stream_reads(source):
    _composed_agrees(source)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_it_composes_mutated_records_as_the_event_stream_reads_them(data):
    text = _mutate(data, RECORD)
    try:
        source = frontmatter.split(text)[0]
    except FrontMatterError:
        return
    _composed_agrees(source)


def test_it_composes_the_usual_shapes():
    for source in [RECORD[4 : RECORD.index("\n---\n") + 1], "a: 1\nb: [x, {c: d}]\n"]:
        assert fast._composable(source)
        assert _outcome(fast._read_composed, source) != "defer"
        _composed_agrees(source)


@pytest.mark.parametrize(
    "source",
    [
        "a: 1\na: 2\n",  # a duplicate
        "1: a\n",  # a key that is not a string
        "<<: {a: 1}\n",  # a merge key
        "? [a]\n: b\n",  # a complex key
        "a: 1\n---\nb: 2\n",  # a second document
        "- a\n",  # not a mapping
        "",  # empty
        "a: " + "[" * 40 + "]" * 40 + "\n",  # deeper than MAX_DEPTH
    ],
)
def test_it_defers_from_the_composer_what_the_event_stream_defers(source):
    assert fast._composable(source)
    assert _outcome(fast._read_composed, source) == "defer"
    assert _outcome(fast._read_events, source) == "defer"


@pytest.mark.parametrize(
    "source",
    ["a: !!str 1\n", "a: &x 1\nb: *x\n", "a: '\\x'\n", "%YAML 1.2\n---\na: 1\n", "a: 1\r%x\n"],
)
def test_it_leaves_tags_anchors_escapes_and_directives_to_the_event_stream(source):
    assert not fast._composable(source)


def _record_outcome(raw: bytes):
    try:
        return parse_record(raw, expected_id="rec-1", path="records/rec-1.md")
    except Rejection as exc:
        return ("rejected", exc.code, exc.message, exc.line, exc.path, exc.id)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_it_reads_a_mutated_record_as_the_reference_reader_does(data):
    raw = _mutate(data, RECORD).encode("utf-8", "surrogatepass")
    read = _record_outcome(raw)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(fast, "AVAILABLE", False)  # every front matter to ruamel.yaml
        expected = _record_outcome(raw)
    assert read == expected, raw


def test_it_reads_the_template_record_on_the_composer_path():
    source = frontmatter.split(RECORD)[0]
    assert fast._composable(source) and not fast.needs_reference(source)
    record = parse_record(RECORD.encode(), expected_id="rec-1")
    assert (record.kind, record.tags, record.supersedes) == (
        "fact",
        ("bench", "group-1"),
        ("rec-0",),
    )
    assert record.extensions == {"x-team": {"n": 1, "ok": True}}
    assert record.provenance == {"source": "https://example.com/a", "author": "me"}


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_it_splits_lf_files_as_their_crlf_twins(data):
    text = _mutate(data, RECORD, first=0).replace("\r", "")
    try:
        lf = frontmatter.split(text)
    except FrontMatterError as exc:
        with pytest.raises(FrontMatterError) as crlf:
            frontmatter.split(text.replace("\n", "\r\n"))
        assert (crlf.value.code, crlf.value.line) == (exc.code, exc.line)
        return
    source, body, line = frontmatter.split(text.replace("\n", "\r\n"))
    assert (source.replace("\r\n", "\n"), body.replace("\r\n", "\n"), line) == lf


DIGITS = st.sampled_from([*"0123456789", *"0159", "\u0661", "\uff11", "a", " ", "+", "-", ":"])


@settings(max_examples=2000, deadline=None)
@given(
    st.lists(DIGITS, min_size=14, max_size=14),
    st.lists(
        st.sampled_from(["-", "-", "T", ":", "Z", "t", "z", " ", "/"]), min_size=6, max_size=6
    ),
    st.booleans(),
)
def test_it_reads_the_usual_timestamp_shape_as_the_pattern_does(digits, separators, usual):
    if usual:
        separators = ["-", "-", "T", ":", ":", "Z"]
    parts = ["".join(digits[0:4]), "".join(digits[4:6]), "".join(digits[6:8])]
    parts += ["".join(digits[8:10]), "".join(digits[10:12]), "".join(digits[12:14])]
    value = "".join(part + separator for part, separator in zip(parts, separators, strict=True))
    parsed = parse_timestamp(value)
    assert parsed == _timestamp_by_pattern(value), value
    if parsed is not None:
        assert isinstance(parsed, datetime) and parsed.tzinfo is not None
        assert parsed.utcoffset().total_seconds() == 0


@pytest.mark.parametrize(
    "value",
    [
        "2026-01-01T00:00:00Z",
        "2024-02-29T23:59:59Z",
        "2026-02-29T00:00:00Z",
        "2026-01-01T24:00:00Z",
        "2026-01-01T23:59:60Z",
        "0000-01-01T00:00:00Z",
        "2026-01-01T00:00:00+00:00",
        "2026-01-01 00:00:00Z",
        "2026-01-01T00:00:00.123Z",
    ],
)
def test_it_reads_edge_timestamps_as_the_pattern_does(value):
    assert parse_timestamp(value) == _timestamp_by_pattern(value)


# --- the line grammar (`strict_yaml.lines`) --------------------------------------------------

LINE_KEYS = st.sampled_from(["x-a", "A1", "e1", "1e3", "true", "null", "yes", "on", "NULL", "~"])
LINE_SEPARATORS = st.sampled_from([*[": "] * 30, ":  ", ":", " : ", ":\t", "::", ": : "])
LINE_TEXT = st.one_of(
    st.text(st.sampled_from([*"abcXYZ019 -_./:"]), max_size=10),
    st.text(st.sampled_from([*"aZ09 _-.:/#'\"\\~=+(<>!&*%@`?,[]{}|"]), max_size=6),
)
LINE_VALUES = st.one_of(
    LINE_TEXT,
    LINE_TEXT.map(lambda text: f"'{text}'"),
    LINE_TEXT.map(lambda text: f'"{text}"'),
    st.sampled_from(
        [
            *("1", "-1", "0x1F", "0o17", "1_000", "1.5", "-.inf", ".nan", "~", "null", "true"),
            *("yes", "<<", "=", "-", "- a", "--", "---", "...", "a: b", "a:b", "a #b", "a#b"),
            *("2026-01-01", "2026-01-01T00:00:00Z", "'it''s'", "it's", '"a\\"b"', "'a", ""),
            *("a  b", "a ", " a", "é", "\x01", "\x7f", "\u00a0", "1" * 5000),
        ]
    ),
)
LINE_ENDS = st.sampled_from([*["\n"] * 30, " \n", "  \n", " # c\n", "\r\n", "\t\n"])
LINE_ITEMS = st.lists(
    st.tuples(st.sampled_from(["", " ", "  ", "  ", "   "]), st.sampled_from(["- ", "- ", "-"])),
    min_size=1,
    max_size=4,
)


NAMES = st.from_regex(r"[a-z][a-z0-9_-]{0,6}", fullmatch=True)
LINE_NAMES = st.one_of(NAMES, NAMES, NAMES, LINE_KEYS)


@st.composite
def line_sources(draw) -> str:
    """Front matter of `key: value` lines and block lists, most in the grammar, some not."""
    keys = draw(st.lists(LINE_NAMES, max_size=6, unique=True))
    if keys and draw(st.integers(0, 9)) == 0:
        keys.append(keys[0])  # a duplicate
    lines = []
    for key in keys:
        if draw(st.integers(0, 3)) == 0:
            lines.append(key + ":" + draw(LINE_ENDS))
            for indent, dash in draw(LINE_ITEMS):
                lines.append(indent + dash + draw(LINE_VALUES) + draw(LINE_ENDS))
        else:
            lines.append(key + draw(LINE_SEPARATORS) + draw(LINE_VALUES) + draw(LINE_ENDS))
    if draw(st.integers(0, 9)) == 0:
        lines.append(draw(st.sampled_from(["  x\n", "- x\n", "---\n", "...\n", "\n", "# c\n"])))
    return "".join(lines)


def _lines_agree(source: str) -> bool:
    """Whatever the grammar reads, the event stream and the reference read the same."""
    found = lines.read_mapping(source)
    if found is None:
        return False
    meta, key_lines = found
    assert (_typed(meta), key_lines) == _outcome(fast._read_events, source), source
    expected_meta, expected_lines = reference.read_mapping(source)
    assert (_typed(meta), key_lines) == (_typed(expected_meta), expected_lines), source
    return True


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(line_sources())
def test_it_reads_by_the_line_grammar_what_the_event_stream_reads(source):
    _lines_agree(source)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_it_reads_mutated_records_by_the_line_grammar_as_the_event_stream_does(data):
    text = _mutate(data, RECORD_LINES)
    try:
        source = frontmatter.split(text)[0]
    except FrontMatterError:
        return
    _lines_agree(source)


RECORD_LINES = (
    "---\nopenmemories: '0.1'\nid: \"rec-1\"\ntitle: Plain title (v2) / notes\nkind: fact\n"
    "scope: user\ncreated: '2026-01-01T00:00:00Z'\nupdated: 2026-01-02T00:00:00Z\n"
    "tags:\n  - bench\n  - 'group 1'\nsupersedes:\n- rec-0\nx-n: 12\nx-none:\n---\n\nBody.\n"
)


def test_it_reads_a_plain_record_and_the_bench_record_by_the_line_grammar():
    bench = (
        "openmemories: '0.1'\nid: 'bench-000001'\ntitle: 'Benchmark record 1'\nkind: 'fact'\n"
        "scope: 'user'\ncreated: '2026-01-01T00:00:00Z'\nupdated: '2026-01-02T00:00:00Z'\n"
        "tags:\n  - bench\n  - group-1\n"
    )
    for source in [frontmatter.split(RECORD_LINES)[0], bench]:
        assert _lines_agree(source), source
    meta, key_lines = lines.read_mapping(frontmatter.split(RECORD_LINES)[0])
    assert meta["tags"] == ["bench", "group 1"] and meta["supersedes"] == ["rec-0"]
    assert (meta["x-n"], meta["x-none"], key_lines["x-none"]) == (12, None, 15)


@pytest.mark.parametrize(
    "source",
    [
        "a: 1\na: 2\n",  # a duplicate: the reference words it
        "true: 1\n",  # a key that reads as a bool
        "a: b # c\n",  # a comment
        "a: x\n  y\n",  # a plain scalar on two lines
        "a:\n  - x\n - y\n",  # a list at two indents
        "a: 'x\n  y'\n",  # a quoted scalar on two lines
        "a: é\n",  # not ASCII
        "a:\tb\n",  # a tab
        "a: b\r\n",  # CR
        "",  # nothing
        "a:\n- 1" + "1" * 5000 + "\n  x\n",  # a long number that a second line makes text
        "a: 1" + "1" * 5000 + "\n",  # a number Python will not read: the reference decides
    ],
)
def test_it_leaves_what_is_outside_the_line_grammar_to_libyaml(source):
    assert lines.read_mapping(source) is None
