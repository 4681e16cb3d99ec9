"""The reference strict YAML reader: pure ruamel.yaml (YAML 1.2), checked as it composes.

No Django import. Duplicate keys (at any depth), anchors and aliases, merge keys, complex keys
and any tag that is not a YAML core type are refused, each with a stable code and the file
line. It is the rule book the libyaml fast path (`strict_yaml.fast`) is tested against, and it
reads every document the fast path defers (all refused ones among them), so an error's code,
message and line are this reader's.
"""

from __future__ import annotations

import re
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.constructor import SafeConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import AliasEvent, CollectionEndEvent, CollectionStartEvent, ScalarEvent
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from ruamel.yaml.reader import ReaderError

from formats.strict_yaml.errors import (
    ALLOWED_EXPLICIT_TAGS,
    CORE,
    LINE_BREAK,
    MAX_DEPTH,
    SCALAR_TAGS,
    STRING_TAGS,
    FrontMatterError,
    line_of,
)

_SURROGATE = re.compile("[\ud800-\udfff]")
# One escape of a double-quoted YAML scalar; matched in sequence, so "\\\\u0000" is a
# backslash and the text "u0000", not a NUL.
_ESCAPE = re.compile(r"\\(?:x([0-9A-Fa-f]{2})|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))", re.S)


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
        if tag in STRING_TAGS:
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
        return len(LINE_BREAK.findall(source[:position])) + 2
    return None


def read_mapping(source: str) -> tuple[dict[str, Any], dict[str, int]]:
    """Parse strict YAML that must be a mapping; also return each top-level key's line."""
    if "\x85" in source:  # ruamel reads a raw NEL as a line break (YAML 1.1), changing values
        line = len(LINE_BREAK.findall(source[: source.index("\x85")])) + 2
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
