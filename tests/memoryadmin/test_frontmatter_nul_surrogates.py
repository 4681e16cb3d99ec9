"""NUL and lone surrogates anywhere in front matter (keys, values, nested) or the body are a
precise error with the line they are written on, never a value that reaches a database."""

from __future__ import annotations

import pytest

from formats.frontmatter import FrontMatterError, parse

REFUSED = [
    ("raw NUL in a value", b'---\na: 1\nb: "x\x00y"\n---\n', "nul-byte", 3),
    ("raw NUL in a key", b"---\na: 1\nb\x00c: 1\n---\n", "nul-byte", 3),
    ("raw NUL in the body", b"---\na: 1\n---\none\ntw\x00o\n", "nul-byte", 5),
    ("escaped NUL in a key", b'---\na: 1\n"b\\0": 1\n---\n', "nul-byte", 3),
    ("escaped NUL nested in a list", b'---\na:\n  - [1, "\\x00"]\n---\n', "nul-byte", 3),
    ("escaped NUL as a nested key", b'---\na: {"\\u0000": 1}\n---\n', "nul-byte", 2),
    (
        "escaped NUL on a later line of a value",
        b'---\na: "one\n  two\n  \\0"\n---\n',
        "nul-byte",
        4,
    ),
    ("NUL with CR line breaks", b"---\ra: 1\r---\rone\rtw\x00o\r", "nul-byte", 5),
    ("NUL with CRLF line breaks", b"---\r\na: 1\r\n---\r\nb\x00\r\n", "nul-byte", 4),
    ("surrogate bytes in a value", b"---\na: 1\nb: x\xed\xa0\x80\n---\n", "not-utf8", 3),
    ("surrogate bytes in a key", b"---\nb\xed\xb0\x80: 1\n---\n", "not-utf8", 2),
    ("surrogate bytes in the body", b"---\na: 1\n---\n\nx\xed\xa0\x80\n", "not-utf8", 5),
    ("surrogate bytes after CR line breaks", b"---\ra: 1\rb: \xed\xa0\x80\r---\r", "not-utf8", 3),
    ("escaped lone high surrogate", b'---\na: "\\ud800"\n---\n', "yaml-syntax", 2),
    ("escaped lone low surrogate in a key", b'---\n"\\udc00": 1\n---\n', "yaml-syntax", 2),
    (
        "escaped lone surrogate nested",
        b'---\na: {b: [{c: "\\U0000d800"}]}\n---\n',
        "yaml-syntax",
        2,
    ),
    ("pair reversed", b'---\na: "\\ude00\\ud83d"\n---\n', "yaml-syntax", 2),
    (
        "lone surrogate after a pair, later line",
        b'---\na: "\\ud83d\\ude00\n  \\ud800"\n---\n',
        "yaml-syntax",
        3,
    ),
]


@pytest.mark.parametrize(("name", "data", "code", "line"), REFUSED, ids=[r[0] for r in REFUSED])
def test_it_refuses_nul_and_lone_surrogates_with_their_line(name, data, code, line):
    with pytest.raises(FrontMatterError) as caught:
        parse(data)
    assert (caught.value.code, caught.value.line) == (code, line), str(caught.value)


def test_it_reads_escaped_pairs_and_escaped_backslashes():
    document = parse(b'---\na: "\\ud83d\\ude00"\nb: "\\\\0 \\\\ud800 \\\\x00"\n---\n')
    assert document.meta == {"a": "\U0001f600", "b": "\\0 \\ud800 \\x00"}
