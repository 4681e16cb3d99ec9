"""The strict YAML front matter reader shared by OpenMemories and MemoryRail.

No Django import. A document is ``---`` on its first line, YAML, a closing ``---`` (or ``...``)
line, then the body. The YAML must be plain data: duplicate keys (at any depth), anchors and
aliases, merge keys, complex keys and any tag that is not a YAML core type are rejected, each
with a stable code and the line of the file it was found on. Timestamps stay the strings they
were written as, so each format validates them by its own rules.

libyaml's C parser does the scanning (`formats.strict_yaml.fast`, the rules checked on its
events); a document it is not sure of, every refused one among them, is read again by the pure
ruamel.yaml reference (`formats.strict_yaml.reference`), whose error is the one raised.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from formats.strict_yaml import fast, reference
from formats.strict_yaml.errors import LINE_BREAK, MAX_DEPTH, FrontMatterError, line_of

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MAX_DEPTH",
    "Document",
    "FrontMatterError",
    "line_of",
    "parse",
    "parse_yaml_mapping",
    "split",
]

DEFAULT_MAX_BYTES = 256 * 1024


@dataclass(frozen=True)
class Document:
    meta: dict[str, Any]
    body: str
    body_line: int  # the file line the body starts on
    # each top-level key's file line, for error messages that name a field
    key_lines: dict[str, int]


# The opening line, and a closing one: '---' (or '...') and blanks between YAML's line breaks
# (LF, CRLF, CR) only. `str.splitlines` would also split on form feeds and Unicode separators,
# making a '---' hidden after one look like a line of its own and shifting every line number.
_OPENING = re.compile(r"---[ \t]*(?=\r|\n|\Z)")
_CLOSING = re.compile(r"(\r\n|\r|\n)(?:---|\.\.\.)[ \t]*(?:\r\n|\r|\n|\Z)")
# The same closing line in a text without CR: a pattern led by one literal is searched for by
# that character, where the alternatives above are tried at every position (~8x slower).
_CLOSING_LF = re.compile(r"\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)")


def _decode(data: bytes | str) -> str:
    if isinstance(data, str):
        try:
            data.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate: no UTF-8 file can hold it
            line = line_of(data, exc.start)
            raise FrontMatterError("not-utf8", "the text is not valid Unicode", line) from exc
        return data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:  # e.g. b"\xed\xa0\x80": a surrogate encoded as if UTF-8
        valid = data[: exc.start].decode("utf-8")
        line = line_of(valid, len(valid))
        raise FrontMatterError("not-utf8", "the file is not valid UTF-8", line) from exc
    return text


def split(text: str) -> tuple[str, str, int]:
    """Return (yaml text, body, body start line); the YAML starts on file line 2."""
    if text.startswith("\ufeff"):
        text = text[1:]
    opening = _OPENING.match(text)
    if opening is None:
        raise FrontMatterError("frontmatter-missing", "the file must start with a '---' line", 1)
    lf_only = "\r" not in text  # as most files are: the same cuts, counted by str methods
    closing = (_CLOSING_LF if lf_only else _CLOSING).search(text, opening.end())
    if closing is None:
        raise FrontMatterError(
            "frontmatter-unterminated", "the front matter has no closing '---' line", 1
        )
    if lf_only:
        yaml_end = closing.start() + 1
        body_line = text.count("\n", 0, yaml_end) + 2
        return text[opening.end() + 1 : yaml_end], text[closing.end() :], body_line
    # The YAML runs from the line after the opening one to the break before the closing one.
    yaml_start = LINE_BREAK.match(text, opening.end()).end()
    yaml_end = closing.end(1)
    body_line = len(LINE_BREAK.findall(text, 0, yaml_end)) + 2
    return text[yaml_start:yaml_end], text[closing.end() :], body_line


def parse_yaml_mapping(source: str) -> tuple[dict[str, Any], dict[str, int]]:
    """Parse strict YAML that must be a mapping; also return each top-level key's line."""
    if fast.AVAILABLE and not fast.needs_reference(source):
        try:
            return fast.read_mapping(source)
        except fast.Defer:
            pass  # the reference reader decides, and words the error
    return reference.read_mapping(source)


def parse(data: bytes | str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Document:
    """Split and strictly parse a front matter document; raise FrontMatterError on any problem."""
    size = len(data.encode("utf-8", "surrogatepass")) if isinstance(data, str) else len(data)
    if size > max_bytes:
        raise FrontMatterError("too-large", f"the file is {size} bytes, over {max_bytes}")
    text = _decode(data)
    if "\x00" in text:
        line = line_of(text, text.index("\x00"))
        raise FrontMatterError("nul-byte", "the file contains a NUL byte", line)
    source, body, body_line = split(text)
    meta, key_lines = parse_yaml_mapping(source)
    return Document(meta=meta, body=body, body_line=body_line, key_lines=key_lines)
