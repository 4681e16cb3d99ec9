"""The strict YAML front matter reader shared by OpenMemories and MemoryRail.

No Django import. A document is ``---`` on its first line, YAML, a closing ``---`` (or ``...``)
line, then the body. The YAML must be plain data: duplicate keys (at any depth), anchors and
aliases, merge keys, complex keys and any tag that is not a YAML core type are rejected, each
with a stable code and the line of the file it was found on. Timestamps stay the strings they
were written as, so each format validates them by its own rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.constructor import SafeConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import AliasEvent, CollectionStartEvent, ScalarEvent
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

CORE = "tag:yaml.org,2002:"
ALLOWED_EXPLICIT_TAGS = frozenset(
    CORE + name for name in ("str", "int", "float", "bool", "null", "seq", "map")
) | {"!"}
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


def _decode(data: bytes | str) -> str:
    if isinstance(data, str):
        return data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise FrontMatterError("not-utf8", "the file is not valid UTF-8", line) from exc
    return text


def split(text: str) -> tuple[str, str, int]:
    """Return (yaml text, body, body start line); the YAML starts on file line 2."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n") != "---":
        raise FrontMatterError("frontmatter-missing", "the file must start with a '---' line", 1)
    for index in range(1, len(lines)):
        if lines[index].rstrip("\r\n").rstrip() in ("---", "..."):
            return "".join(lines[1:index]), "".join(lines[index + 1 :]), index + 2
    raise FrontMatterError(
        "frontmatter-unterminated", "the front matter has no closing '---' line", 1
    )


def _check_events(yaml: YAML, source: str) -> None:
    for event in yaml.parse(source):
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


class _Builder:
    def __init__(self, yaml: YAML) -> None:
        self._scalars: SafeConstructor = yaml.constructor

    def build(self, node: Node, depth: int = 0) -> Any:
        line = node.start_mark.line + 2
        if depth > MAX_DEPTH:
            raise FrontMatterError("yaml-too-deep", f"nesting deeper than {MAX_DEPTH}", line)
        if isinstance(node, ScalarNode):
            return self._scalar(node, line)
        if isinstance(node, SequenceNode):
            return [self.build(item, depth + 1) for item in node.value]
        if isinstance(node, MappingNode):
            result: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                key_line = key_node.start_mark.line + 2
                if not isinstance(key_node, ScalarNode):
                    raise FrontMatterError("yaml-complex-key", "keys must be scalars", key_line)
                if key_node.tag == CORE + "merge":
                    raise FrontMatterError("yaml-merge-key", "merge keys are not allowed", key_line)
                key = self._scalar(key_node, key_line)
                if key in result:
                    raise FrontMatterError("yaml-duplicate-key", f"duplicate key '{key}'", key_line)
                result[key] = self.build(value_node, depth + 1)
            return result
        raise FrontMatterError("yaml-tag", "unsupported YAML node", line)  # pragma: no cover

    def _scalar(self, node: ScalarNode, line: int) -> Any:
        tag = node.tag
        if tag in (CORE + "str", CORE + "timestamp"):
            return node.value
        if tag == CORE + "null":
            return None
        if tag == CORE + "bool":
            return self._scalars.construct_yaml_bool(node)
        if tag == CORE + "int":
            return self._scalars.construct_yaml_int(node)
        if tag == CORE + "float":
            return self._scalars.construct_yaml_float(node)
        if tag == CORE + "merge":
            raise FrontMatterError("yaml-merge-key", "merge keys are not allowed", line)
        raise FrontMatterError("yaml-tag", f"tag '{tag}' is not a plain YAML core type", line)


def parse_yaml_mapping(source: str) -> tuple[dict[str, Any], dict[str, int]]:
    """Parse strict YAML that must be a mapping; also return each top-level key's line."""
    yaml = YAML(typ="safe", pure=True)
    try:
        _check_events(yaml, source)
        node = yaml.compose(source)
    except FrontMatterError:
        raise
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 2 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise FrontMatterError("yaml-syntax", problem, line) from exc
    except YAMLError as exc:
        raise FrontMatterError("yaml-syntax", str(exc).splitlines()[0], None) from exc
    except RecursionError as exc:
        raise FrontMatterError("yaml-too-deep", "the YAML nests too deeply", None) from exc
    if node is None or not isinstance(node, MappingNode):
        line = node.start_mark.line + 2 if node is not None else 2
        raise FrontMatterError(
            "frontmatter-not-mapping", "the front matter must be a mapping", line
        )
    meta = _Builder(yaml).build(node)
    key_lines = {
        str(key.value): key.start_mark.line + 2
        for key, _ in node.value
        if isinstance(key, ScalarNode)
    }
    for key in meta:
        if not isinstance(key, str):
            raise FrontMatterError(
                "yaml-key-not-string", f"key {key!r} must be a string", key_lines.get(str(key))
            )
    return meta, key_lines


def parse(data: bytes | str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Document:
    """Split and strictly parse a front matter document; raise FrontMatterError on any problem."""
    size = len(data.encode("utf-8")) if isinstance(data, str) else len(data)
    if size > max_bytes:
        raise FrontMatterError("too-large", f"the file is {size} bytes, over {max_bytes}")
    text = _decode(data)
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise FrontMatterError("nul-byte", "the file contains a NUL byte", line)
    source, body, body_line = split(text)
    meta, key_lines = parse_yaml_mapping(source)
    return Document(meta=meta, body=body, body_line=body_line, key_lines=key_lines)
