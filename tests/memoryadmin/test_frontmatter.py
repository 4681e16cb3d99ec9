"""The strict front matter reader: a table of good and bad documents, then properties."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from formats.frontmatter import MAX_DEPTH, Document, FrontMatterError, parse, split

ROOT = Path(__file__).resolve().parents[2]

# --- good documents ----------------------------------------------------------------------


GOOD = [
    ("plain", "---\ntitle: x\n---\nbody\n", {"title": "x"}, "body\n", 4),
    ("dots close", "---\na: 1\n...\nbody\n", {"a": 1}, "body\n", 4),
    ("crlf", "---\r\na: 1\r\nb: [x]\r\n---\r\nbody\r\n", {"a": 1, "b": ["x"]}, "body\r\n", 5),
    ("cr only", "---\ra: 1\r---\rbody", {"a": 1}, "body", 4),
    ("bom", "\ufeff---\na: 1\n---\n", {"a": 1}, "", 4),
    ("bom bytes", b"\xef\xbb\xbf---\na: 1\n---\nb\n", {"a": 1}, "b\n", 4),
    ("no final newline", "---\na: 1\n---", {"a": 1}, "", 4),
    ("trailing blanks on delimiters", "--- \na: 1\n---\t\nbody", {"a": 1}, "body", 4),
    (
        "timestamps stay strings",
        "---\nd: 2024-01-01\nt: 2024-01-01T10:00:00Z\n---\n",
        {"d": "2024-01-01", "t": "2024-01-01T10:00:00Z"},
        "",
        5,
    ),
    (
        "YAML 1.2 scalars",
        "---\na: yes\nb: on\nc: True\nd: 017\ne: 0x1F\nf: ~\ng: 1.5\nh: '1'\n---\n",
        {"a": "yes", "b": "on", "c": True, "d": 17, "e": 31, "f": None, "g": 1.5, "h": "1"},
        "",
        11,
    ),
    (
        "core tags that fit",
        "---\na: !!str 12\nb: !!int '7'\nc: !!float 1\n---\n",
        {"a": "12", "b": 7, "c": 1.0},
        "",
        6,
    ),
    ("quoted merge key", '---\n"<<": 1\n---\n', {"<<": 1}, "", 4),
    ("plain = and << as values", "---\na: =\nb: <<\n---\n", {"a": "=", "b": "<<"}, "", 5),
    (
        "nested",
        "---\na:\n  b:\n    - c: 1\n      d: [1, {e: f}]\n---\n",
        {"a": {"b": [{"c": 1, "d": [1, {"e": "f"}]}]}},
        "",
        7,
    ),
    (
        "JSON front matter",
        '---\n{"id": "m1", "tags": ["db"], "n": null, "ok": false}\n---\n# Body\n',
        {"id": "m1", "tags": ["db"], "n": None, "ok": False},
        "# Body\n",
        4,
    ),
    (
        "JSON surrogate pair escape",
        '---\n{"e": "\\ud83d\\ude00"}\n---\n',
        {"e": "\U0001f600"},
        "",
        4,
    ),
    ("indented --- is content", "---\na: |\n  x\n  ---\n---\nbody", {"a": "x\n---\n"}, "body", 6),
    ("later --- belongs to the body", "---\na: 1\n---\n---\nb: 2\n", {"a": 1}, "---\nb: 2\n", 4),
    (
        "unicode separators are not line breaks",
        "---\na: x\u2028y\n---\nz\x0cw",
        {"a": "x\u2028y"},
        "z\x0cw",
        4,
    ),
    (
        f"{MAX_DEPTH} nested collections",
        "---\na: " + "[" * (MAX_DEPTH - 1) + "1" + "]" * (MAX_DEPTH - 1) + "\n---\n",
        None,
        "",
        4,
    ),
]


@pytest.mark.parametrize(
    ("name", "document", "meta", "body", "body_line"), GOOD, ids=[g[0] for g in GOOD]
)
def test_it_reads_good_documents(name, document, meta, body, body_line):
    doc = parse(document)
    assert isinstance(doc, Document)
    if meta is not None:
        assert doc.meta == meta
    assert doc.body == body
    assert doc.body_line == body_line


def test_it_reports_the_line_of_each_top_level_key():
    doc = parse("---\n# comment\ntitle: x\n\nnested:\n  inner: 1\nlast: [1,\n  2]\n---\nbody")
    assert doc.key_lines == {"title": 3, "nested": 5, "last": 7}
    assert doc.body_line == 10


def test_it_accepts_a_document_exactly_at_the_size_limit():
    document = "---\na: x\n---\n"
    assert parse(document, max_bytes=len(document)).meta == {"a": "x"}


# --- bad documents -----------------------------------------------------------------------

BILLION_LAUGHS = "---\na: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\nd: [*c, *c]\n---\n"
NESTED_BOMB = "---\na: " + "[" * 50_000 + "]" * 50_000 + "\n---\n"
DEEP_BLOCK = "---\n" + "".join("  " * i + f"k{i}:\n" for i in range(40)) + "  " * 40 + "v: 1\n---\n"

BAD = [
    # duplicates, at every depth
    ("duplicate top-level key", "---\na: 1\nb: 2\na: 3\n---\n", "yaml-duplicate-key", 4),
    ("duplicate nested key", "---\na:\n  b: 1\n  b: 2\n---\n", "yaml-duplicate-key", 4),
    (
        "duplicate key in a list of maps",
        "---\nitems:\n  - x: 1\n  - x: 1\n    x: 2\n---\n",
        "yaml-duplicate-key",
        5,
    ),
    ("duplicate key in a flow map", "---\na: {b: 1, b: 2}\n---\n", "yaml-duplicate-key", 2),
    ("duplicate key spelled two ways", "---\na: 1\n'a': 2\n---\n", "yaml-duplicate-key", 3),
    # anchors, aliases, merge keys and bombs
    ("anchor", "---\na: &x 1\n---\n", "yaml-alias", 2),
    ("anchor on a collection", "---\na: 1\nb: &x [1]\n---\n", "yaml-alias", 3),
    ("alias without anchor", "---\na: 1\nb: *x\n---\n", "yaml-alias", 3),
    ("merge key", "---\nbase: {a: 1}\nc:\n  <<: {a: 2}\n---\n", "yaml-merge-key", 4),
    ("billion laughs", BILLION_LAUGHS, "yaml-alias", 2),
    ("nesting bomb", NESTED_BOMB, "yaml-too-deep", 2),
    ("deep block nesting", DEEP_BLOCK, "yaml-too-deep", 2 + MAX_DEPTH),
    (
        f"{MAX_DEPTH + 1} nested collections",
        "---\na: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "\n---\n",
        "yaml-too-deep",
        2,
    ),
    # tags
    ("!!binary", "---\na: !!binary aGVsbG8=\n---\n", "yaml-tag", 2),
    ("!!timestamp", "---\na: !!timestamp 2024-01-01\n---\n", "yaml-tag", 2),
    ("!!set", "---\na: 1\nb: !!set {x, y}\n---\n", "yaml-tag", 3),
    ("!!omap", "---\na: !!omap [x: 1]\n---\n", "yaml-tag", 2),
    ("!!python/object", "---\na: !!python/object/apply:os.system [ls]\n---\n", "yaml-tag", 2),
    ("!!python/name", "---\na: !!python/name:os.system ''\n---\n", "yaml-tag", 2),
    ("custom !tag", "---\na: !memory x\n---\n", "yaml-tag", 2),
    ("verbatim tag", "---\na: !<tag:example.com,2000:x> y\n---\n", "yaml-tag", 2),
    ("non-specific !", "---\na: ! 12\n---\n", "yaml-tag", 2),
    ("tag on the whole mapping", "--- \n!custom\na: 1\n---\n", "yaml-tag", 2),
    ("!!int that is not", "---\na: !!int abc\n---\n", "yaml-tag", 2),
    ("!!float that is not", "---\na: !!float abc\n---\n", "yaml-tag", 2),
    ("!!bool yes (YAML 1.1)", "---\na: !!bool yes\n---\n", "yaml-tag", 2),
    ("!!null with text", "---\na: !!null text\n---\n", "yaml-tag", 2),
    ("!!int on a float", "---\na: !!int 1.5\n---\n", "yaml-tag", 2),
    ("!!seq on a mapping", "---\na: !!seq {x: 1}\n---\n", "yaml-tag", 2),
    ("!!map on a list", "---\na: !!map [1]\n---\n", "yaml-tag", 2),
    ("!!str on a list", "---\na: !!str [1]\n---\n", "yaml-tag", 2),
    # keys
    ("complex key: list", "---\n? [a, b]\n: 1\n---\n", "yaml-complex-key", 2),
    ("complex key: map", "---\na: 1\n? {b: 1}\n: 1\n---\n", "yaml-complex-key", 3),
    ("int key", "---\n1: a\n---\n", "yaml-key-not-string", 2),
    ("null key", "---\na: 1\n~: a\n---\n", "yaml-key-not-string", 3),
    ("bool key", "---\ntrue: a\n---\n", "yaml-key-not-string", 2),
    ("float key", "---\n1.5: a\n---\n", "yaml-key-not-string", 2),
    ("nested int key", "---\na:\n  1: x\n---\n", "yaml-key-not-string", 3),
    ("int key in a list of maps", "---\na:\n  - b: 1\n    2: c\n---\n", "yaml-key-not-string", 4),
    # not a mapping
    ("list", "---\n- a\n- b\n---\n", "frontmatter-not-mapping", 2),
    ("scalar", "---\nhello\n---\n", "frontmatter-not-mapping", 2),
    ("empty", "---\n---\nbody\n", "frontmatter-not-mapping", 2),
    ("only a comment", "---\n# nothing\n---\n", "frontmatter-not-mapping", 2),
    ("null", "---\n\n~\n---\n", "frontmatter-not-mapping", 3),
    # delimiters
    ("no opening delimiter", "title: x\n---\n", "frontmatter-missing", 1),
    ("empty file", "", "frontmatter-missing", 1),
    ("blank line first", "\n---\na: 1\n---\n", "frontmatter-missing", 1),
    ("four dashes", "----\na: 1\n---\n", "frontmatter-missing", 1),
    ("opening hidden after a form feed", "x\x0c---\na: 1\n---\n", "frontmatter-missing", 1),
    ("unterminated", "---\na: 1\n", "frontmatter-unterminated", 1),
    ("only the opening line", "---", "frontmatter-unterminated", 1),
    (
        "closing hidden after a line separator",
        "---\na: 1\u2028---\n",
        "frontmatter-unterminated",
        1,
    ),
    # syntax
    ("unclosed flow list", "---\na: [1, 2\nb: 3\n---\n", "yaml-syntax", 3),
    ("mapping in a plain scalar", "---\na: b: c\n---\n", "yaml-syntax", 2),
    ("tab indentation", "---\na:\n\t- 1\n---\n", "yaml-syntax", 3),
    ("directive", "---\n%YAML 1.1\n---\na: 1\n---\n", "yaml-syntax", 3),
    ("control character", "---\na: 1\nb: x\x07y\n---\n", "yaml-syntax", 3),
    ("raw NEL", "---\na: 1\nb: x\x85y\n---\n", "yaml-syntax", 3),
    ("half a surrogate pair", '---\na: 1\nb: "\\ud83d"\n---\n', "yaml-syntax", 3),
    ("integer past 4300 digits", "---\na: " + "9" * 5000 + "\n---\n", "yaml-syntax", 2),
    # bytes
    ("NUL in the body", "---\na: 1\n---\nb\x00\n", "nul-byte", 4),
    ("NUL in the YAML", b"---\na: \x00\n---\n", "nul-byte", 2),
    ("escaped NUL in a value", '---\na: 1\nb: "x\\0y"\n---\n', "nul-byte", 3),
    ("invalid UTF-8", b"---\na: 1\nb: \xff\n---\n", "not-utf8", 3),
    ("truncated UTF-8", b"---\na: \xc3\n---\n", "not-utf8", 2),
    ("UTF-16", "---\na: 1\n---\n".encode("utf-16"), "not-utf8", 1),
    ("lone surrogate in text", "---\na: 1\nb: \ud800\n---\n", "not-utf8", 3),
    ("too large", "---\na: " + "x" * 300_000 + "\n---\n", "too-large", None),
    (
        "too large in bytes, not characters",
        "---\na: " + "é" * 140_000 + "\n---\n",
        "too-large",
        None,
    ),
]


@pytest.mark.parametrize(("name", "document", "code", "line"), BAD, ids=[b[0] for b in BAD])
def test_it_refuses_bad_documents_with_a_code_and_line(name, document, code, line):
    with pytest.raises(FrontMatterError) as caught:
        parse(document)
    assert (caught.value.code, caught.value.line) == (code, line), str(caught.value)
    assert caught.value.message
    assert code in str(caught.value)


def test_it_honours_a_smaller_size_limit():
    with pytest.raises(FrontMatterError) as caught:
        parse(b"---\na: 1\n---\n", max_bytes=8)
    assert caught.value.code == "too-large"


def test_it_splits_without_parsing():
    assert split("---\na: 1\n---\nbody") == ("a: 1\n", "body", 4)


# --- properties --------------------------------------------------------------------------


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2000))
def test_it_raises_only_front_matter_errors_on_arbitrary_bytes(data):
    with contextlib.suppress(FrontMatterError):
        parse(data)


YAMLISH = st.sampled_from(
    [
        "---",
        "...",
        "\n",
        "\r\n",
        "\r",
        ":",
        " ",
        "-",
        "[",
        "]",
        "{",
        "}",
        ",",
        "&a",
        "*a",
        "!",
        "!!",
        "<<",
        "?",
        "#",
        "'",
        '"',
        "|",
        ">",
        "\t",
        "a",
        "1",
        "~",
        "\\",
        "%",
        "@",
        "\x00",
        "\x85",
        "\ufeff",
    ]
)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(YAMLISH, st.text(max_size=5)), max_size=80).map("".join))
def test_it_raises_only_front_matter_errors_on_arbitrary_text(text):
    for document in (text, "---\n" + text, "---\n" + text + "\n---\n"):
        try:
            doc = parse(document)
        except FrontMatterError:
            continue
        assert isinstance(doc.meta, dict)
        assert all(isinstance(key, str) for key in doc.meta)


# Strings YAML can carry raw: printable characters, minus NUL and the NEL that ruamel folds.
RAW_SAFE = st.characters(
    blacklist_categories=("Cs",),
    blacklist_characters="\x00\x85\ufeff\ufffe\uffff",
).filter(lambda c: c in "\t\n\r" or " " <= c <= "~" or c >= "\xa0")
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(RAW_SAFE, max_size=30),
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(RAW_SAFE, max_size=10), children, max_size=4),
    ),
    max_leaves=20,
)
META = st.dictionaries(st.text(RAW_SAFE, max_size=12), JSON_VALUES, max_size=8)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(META, st.booleans(), st.booleans(), st.text(max_size=50).filter(lambda t: "\x00" not in t))
def test_it_reads_back_json_front_matter_equal(meta, ensure_ascii, indent, body):
    dumped = json.dumps(meta, ensure_ascii=ensure_ascii, indent=2 if indent else None)
    document = f"---\n{dumped}\n---\n{body}"
    doc = parse(document)
    assert doc.meta == meta
    assert doc.body == body
