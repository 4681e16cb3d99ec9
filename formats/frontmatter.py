"""The strict YAML front matter reader shared by OpenMemories and MemoryRail.

No Django import. A document is ``---`` on its first line, YAML, a closing ``---`` (or ``...``)
line, then the body. The YAML must be plain data: duplicate keys (at any depth), anchors and
aliases, merge keys, complex keys and any tag that is not a YAML core type are rejected, each
with a stable code and the line of the file it was found on. Timestamps stay the strings they
were written as, so each format validates them by its own rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.constructor import SafeConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import AliasEvent, CollectionEndEvent, CollectionStartEvent, ScalarEvent
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from ruamel.yaml.reader import ReaderError

CORE = "tag:yaml.org,2002:"
# The non-specific "!" is refused too: it would make `! 12` a string, a rarely meant subtlety.
ALLOWED_EXPLICIT_TAGS = frozenset(
    CORE + name for name in ("str", "int", "float", "bool", "null", "seq", "map")
)
SCALAR_TAGS = frozenset(
    CORE + name for name in ("str", "int", "float", "bool", "null", "timestamp", "merge", "value")
)
MAX_DEPTH = 32
DEFAULT_MAX_BYTES = 256 * 1024


@dataclass(frozen=True)
class FrontMatterError(Exception):
    """A document the strict reader refuses: `code` is stable, `line` is 1-based in the file."""

    code: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f" (line {self.line})" if self.line else ""
        return f"{self.code}: {self.message}{where}"


@dataclass(frozen=True)
class Document:
    meta: dict[str, Any]
    body: str
    body_line: int  # the file line the body starts on
    # each top-level key's file line, for error messages that name a field
    key_lines: dict[str, int]


_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_SURROGATE = re.compile("[\ud800-\udfff]")
# One escape of a double-quoted YAML scalar; matched in sequence, so "\\\\u0000" is a
# backslash and the text "u0000", not a NUL.
_ESCAPE = re.compile(r"\\(?:x([0-9A-Fa-f]{2})|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))", re.S)


def line_of(text: str, position: int, first: int = 1) -> int:
    """The line `position` of `text` is on, counting YAML's line breaks from `first`."""
    return len(_LINE_BREAK.findall(text, 0, position)) + first


def _lines(text: str) -> list[str]:
    """Split after YAML's line breaks only (LF, CRLF, CR), keeping them.

    `str.splitlines` also splits on form feeds and Unicode separators, which would make a
    '---' hidden after one look like a line of its own and shift every line number.
    """
    lines: list[str] = []
    start = 0
    for match in _LINE_BREAK.finditer(text):
        lines.append(text[start : match.end()])
        start = match.end()
    if start < len(text):
        lines.append(text[start:])
    return lines


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


def _is_delimiter(line: str, *marks: str) -> bool:
    return line.rstrip("\r\n").rstrip(" \t") in marks


def split(text: str) -> tuple[str, str, int]:
    """Return (yaml text, body, body start line); the YAML starts on file line 2."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = _lines(text)
    if not lines or not _is_delimiter(lines[0], "---"):
        raise FrontMatterError("frontmatter-missing", "the file must start with a '---' line", 1)
    for index in range(1, len(lines)):
        if _is_delimiter(lines[index], "---", "..."):
            return "".join(lines[1:index]), "".join(lines[index + 1 :]), index + 2
    raise FrontMatterError(
        "frontmatter-unterminated", "the front matter has no closing '---' line", 1
    )


def _check_events(yaml: YAML) -> None:
    """Refuse aliases, anchors, foreign tags and deep nesting as the composer reads each event,
    before it builds anything from it: one parsing pass (checking the events in a pass of their
    own before composing parsed every document twice)."""
    parser = yaml.parser
    read = parser.get_event
    depth = 0

    def get_event() -> Any:
        nonlocal depth
        event = read()
        line = event.start_mark.line + 2
        if isinstance(event, AliasEvent):
            raise FrontMatterError("yaml-alias", f"alias '*{event.anchor}' is not allowed", line)
        if isinstance(event, ScalarEvent | CollectionStartEvent):
            if event.anchor is not None:
                raise FrontMatterError(
                    "yaml-alias", f"anchor '&{event.anchor}' is not allowed", line
                )
            if event.tag is not None and event.tag not in ALLOWED_EXPLICIT_TAGS:
                raise FrontMatterError(
                    "yaml-tag", f"tag '{event.tag}' is not a plain YAML core type", line
                )
        if isinstance(event, CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise FrontMatterError("yaml-too-deep", f"nesting deeper than {MAX_DEPTH}", line)
        elif isinstance(event, CollectionEndEvent):
            depth -= 1
        return event

    parser.get_event = get_event  # the composer takes every event through get_event


class _Builder:
    def __init__(self, yaml: YAML, source: str) -> None:
        self._scalars: SafeConstructor = yaml.constructor
        self._resolver = yaml.resolver
        self._source = source
        self.key_lines: dict[str, int] = {}

    def build(self, node: Node, depth: int = 0) -> Any:
        line = node.start_mark.line + 2
        if depth > MAX_DEPTH:
            raise FrontMatterError("yaml-too-deep", f"nesting deeper than {MAX_DEPTH}", line)
        if isinstance(node, ScalarNode):
            if node.tag not in SCALAR_TAGS:
                raise FrontMatterError("yaml-tag", f"tag '{node.tag}' does not fit a scalar", line)
            return self._scalar(node, line)
        if isinstance(node, SequenceNode):
            if node.tag != CORE + "seq":
                raise FrontMatterError("yaml-tag", f"tag '{node.tag}' does not fit a list", line)
            return [self.build(item, depth + 1) for item in node.value]
        if isinstance(node, MappingNode):
            if node.tag != CORE + "map":
                raise FrontMatterError("yaml-tag", f"tag '{node.tag}' does not fit a mapping", line)
            return self._mapping(node, depth)
        raise FrontMatterError("yaml-tag", "unsupported YAML node", line)  # pragma: no cover

    def _mapping(self, node: MappingNode, depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key_line = key_node.start_mark.line + 2
            if not isinstance(key_node, ScalarNode):
                raise FrontMatterError("yaml-complex-key", "keys must be scalars", key_line)
            if key_node.tag == CORE + "merge":
                raise FrontMatterError("yaml-merge-key", "merge keys are not allowed", key_line)
            key = self.build(key_node, depth + 1)
            if not isinstance(key, str):
                raise FrontMatterError(
                    "yaml-key-not-string", f"key {key_node.value!r} must be a string", key_line
                )
            if key in result:
                raise FrontMatterError("yaml-duplicate-key", f"duplicate key '{key}'", key_line)
            if depth == 0:
                self.key_lines[key] = key_line
            result[key] = self.build(value_node, depth + 1)
        return result

    def _scalar(self, node: ScalarNode, line: int) -> Any:
        tag, value = node.tag, node.value
        # Only escapes of a double-quoted scalar (keys too) can write these: the raw text was
        # checked whole. PostgreSQL text and JSON columns refuse both, and UTF-8 cannot hold
        # half a surrogate pair.
        if "\x00" in value:
            line = self._escape_line(node, "nul") or line
            raise FrontMatterError("nul-byte", "a key or value writes a NUL character", line)
        if _SURROGATE.search(value):
            value = _join_surrogates(value, self._escape_line(node, "surrogate") or line)
        # Implicit timestamps, '<<' as a value and YAML 1.1's '=' stay the strings written.
        if tag in (CORE + "str", CORE + "timestamp", CORE + "merge", CORE + "value"):
            return value
        # An explicit tag must fit the text: `!!int abc` or `!!null x` are refused, not coerced.
        implicit = self._resolver.resolve(ScalarNode, value, (True, False))
        fits = implicit == tag or (tag == CORE + "float" and implicit == CORE + "int")
        if not fits:
            name = tag.removeprefix(CORE)
            raise FrontMatterError("yaml-tag", f"'{value}' is not a valid {name}", line)
        try:
            if tag == CORE + "null":
                return None
            if tag == CORE + "bool":
                return self._scalars.construct_yaml_bool(node)
            if tag == CORE + "int":
                return self._scalars.construct_yaml_int(node)
            return float(self._scalars.construct_yaml_float(node))
        except ValueError as exc:  # e.g. an integer past Python's 4300-digit limit
            raise FrontMatterError("yaml-syntax", f"cannot read number: {exc}", line) from exc

    def _escape_line(self, node: ScalarNode, kind: str) -> int | None:
        """The file line of the first escape in `node`'s text writing a NUL (kind "nul") or
        half a surrogate pair ("surrogate"): a quoted value can span many lines."""
        start, end = node.start_mark.index, node.end_mark.index
        text = self._source[start:end]
        high: int | None = None  # where a high surrogate waits for its low half
        previous_end = -1
        for match in _ESCAPE.finditer(text):
            digits = match[1] or match[2] or match[3]
            point = int(digits, 16) if digits else (0 if match[4] == "0" else -1)
            if high is not None and not (
                0xDC00 <= point <= 0xDFFF and match.start() == previous_end
            ):
                break  # the waiting high surrogate stays alone
            if high is not None:
                high = None
            elif kind == "nul" and point == 0:
                return line_of(text, match.start(), node.start_mark.line + 2)
            elif kind == "surrogate" and 0xD800 <= point <= 0xDBFF:
                high = match.start()
            elif kind == "surrogate" and 0xDC00 <= point <= 0xDFFF:
                return line_of(text, match.start(), node.start_mark.line + 2)
            previous_end = match.end()
        if high is not None:
            return line_of(text, high, node.start_mark.line + 2)
        return None


def _join_surrogates(value: str, line: int) -> str:
    """JSON writers escape astral characters as pairs ("\\ud83d\\ude00"); YAML keeps two halves.
    Half a pair alone is refused: no UTF-8 file or PostgreSQL column can hold it."""
    try:
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError as exc:
        raise FrontMatterError(
            "yaml-syntax",
            "a \\u escape writes a lone surrogate (half a surrogate pair)",
            line,
        ) from exc


def _reader_error_line(exc: ReaderError, source: str) -> int | None:
    position = getattr(exc, "position", None)
    if isinstance(position, int) and 0 <= position <= len(source):
        return len(_LINE_BREAK.findall(source[:position])) + 2
    return None


def parse_yaml_mapping(source: str) -> tuple[dict[str, Any], dict[str, int]]:
    """Parse strict YAML that must be a mapping; also return each top-level key's line."""
    if "\x85" in source:  # ruamel reads a raw NEL as a line break (YAML 1.1), changing values
        line = len(_LINE_BREAK.findall(source[: source.index("\x85")])) + 2
        raise FrontMatterError("yaml-syntax", "write U+0085 (NEL) as the escape \\x85", line)
    yaml = YAML(typ="safe", pure=True)
    try:
        _check_events(yaml)
        node = yaml.compose(source)
    except FrontMatterError:
        raise
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 2 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise FrontMatterError("yaml-syntax", problem, line) from exc
    except ReaderError as exc:
        raise FrontMatterError(
            "yaml-syntax",
            f"unacceptable character #x{exc.character:04x}",
            _reader_error_line(exc, source),
        ) from exc
    except YAMLError as exc:
        message = (str(exc).splitlines() or ["invalid YAML"])[0]
        raise FrontMatterError("yaml-syntax", message, None) from exc
    except RecursionError as exc:  # pragma: no cover - the event check limits depth first
        raise FrontMatterError("yaml-too-deep", "the YAML nests too deeply", None) from exc
    if node is None or not isinstance(node, MappingNode):
        line = node.start_mark.line + 2 if node is not None else 2
        raise FrontMatterError(
            "frontmatter-not-mapping", "the front matter must be a mapping", line
        )
    builder = _Builder(yaml, source)
    meta = builder.build(node)
    return meta, builder.key_lines


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
