"""The fast strict YAML reader: libyaml's C parser scans, every rule is checked on its events.

No Django import. PyYAML's binding of libyaml (`yaml._yaml.CParser`) turns the text into
events in C; this module builds the plain values from them and checks, event by event, what
the reference reader (`strict_yaml.reference`, pure ruamel.yaml) checks: one mapping, no
anchors or aliases, only core tags that fit their node, no merge or complex keys, string keys
without duplicates at any depth, at most MAX_DEPTH nested collections. Scalars are resolved
by ruamel.yaml's own YAML 1.2 table (libyaml knows no tags, PyYAML's resolver is YAML 1.1) and
numbers built by its constructor, so a value means what it meant before (`scalars`).

Three ways in, cheapest first: a source whose every line is in `lines`' narrow grammar
(`key: scalar` and block lists of one-line scalars, ASCII) is read by regular expressions; one
that cannot hold a tag, anchor, alias, escape or directive is composed by libyaml in C and
its nodes walked once (no event objects); any other takes the event walk. Each defers where
the next would (tests/formats/test_parse_differential.py compares them).

Whenever a document breaks a rule, fails libyaml's own checks, or holds something the two
parsers are known to read differently, `Defer` is raised: the caller lets the reference reader
decide, and its error (code, message, line) is the one reported. Refused documents are rare;
accepted ones never touch the pure-Python scanner.
"""

from __future__ import annotations

import re
from typing import Any

from formats.strict_yaml import lines
from formats.strict_yaml.errors import MAX_DEPTH
from formats.strict_yaml.scalars import (
    FLOAT,
    INT,
    MAP,
    SEQ,
    STR,
    STRING_KEYS,
    TYPED,
    Defer,
    is_string_key,
    plain_value,
    resolve,
    typed_value,
)

try:
    from yaml import YAMLError as LibyamlError
    from yaml._yaml import CParser
    from yaml.events import (
        DocumentEndEvent,
        DocumentStartEvent,
        MappingEndEvent,
        MappingStartEvent,
        ScalarEvent,
        SequenceEndEvent,
        SequenceStartEvent,
        StreamEndEvent,
    )
    from yaml.nodes import MappingNode
    from yaml.nodes import ScalarNode as LibyamlScalarNode
except ImportError:  # pragma: no cover - PyYAML built without libyaml: the reference reads all
    CParser = None

AVAILABLE = CParser is not None

# What libyaml and ruamel.yaml's pure scanner read differently: NEL, LS and PS are line breaks
# to libyaml (YAML 1.1) only, and ruamel refuses a tab separating tokens in block context
# (`a:<tab>1`, `a: b<tab>`) where libyaml skips it. A document holding one of these characters
# goes to the reference reader (a tab inside a quoted or block string too: rare in front matter).
# So does a byte order mark: libyaml skips every one at the stream's start, ruamel.yaml only the
# first (`\ufeff\ufeffa: 1` is `a` to one and `\ufeffa` to the other).
NEEDS_REFERENCE = re.compile("[\t\x85\u2028\u2029\ufeff]")


def needs_reference(source: str) -> bool:
    """NEEDS_REFERENCE.search(source), by str's own scans (a character class is ~10x slower);
    `isascii` is O(1), and an ASCII text holds none of the four."""
    return "\t" in source or (
        not source.isascii()
        and ("\x85" in source or "\u2028" in source or "\u2029" in source or "\ufeff" in source)
    )


# A source the composer path may read: no tag ('!'), anchor ('&') or alias ('*') can be in
# it, no escape ('\\': so no NUL), no directive ('%' opening a line); and short, so that
# libyaml's composer, which recurses in C, nests at most a few thousand levels even where
# libyaml is built without its nesting limit.
_COMPOSED_MAX_CHARS = 4096
_DIRECTIVE = re.compile("(?:\\A|[\r\n\x85\u2028\u2029])%")  # '%' opening a line, to libyaml


def _composable(source: str) -> bool:
    return (
        len(source) <= _COMPOSED_MAX_CHARS
        and "!" not in source
        and "&" not in source
        and "*" not in source
        and "\\" not in source
        and ("%" not in source or _DIRECTIVE.search(source) is None)
    )


def read_mapping(source: str) -> tuple[dict[str, Any], dict[str, int]]:
    """The strict mapping `source` holds, and each top-level key's file line; or `Defer`."""
    found = lines.read_mapping(source)  # the plainest sources, by regular expressions
    if found is not None:
        return found
    if _composable(source):
        return _read_composed(source)
    return _read_events(source)


def _read_events(source: str) -> tuple[dict[str, Any], dict[str, int]]:
    """`read_mapping` on libyaml's event stream: any source (tags and anchors are refused)."""
    parser = CParser(source)
    try:
        return _document(parser.get_event)
    except LibyamlError as exc:
        raise Defer from exc
    finally:
        parser.dispose()


def _document(get: Any) -> tuple[dict[str, Any], dict[str, int]]:
    get()  # the stream start
    start = get()
    if type(start) is not DocumentStartEvent or start.version is not None or start.tags:
        raise Defer  # empty, or directives: the reference words it
    root = get()
    if type(root) is not MappingStartEvent:
        raise Defer  # not a mapping
    _check_collection(root, MAP, 1)
    key_lines: dict[str, int] = {}
    meta = _mapping(get, 1, key_lines)
    if type(get()) is not DocumentEndEvent or type(get()) is not StreamEndEvent:
        raise Defer  # a second document
    return meta, key_lines


def _check_collection(event: Any, tag: str, depth: int) -> None:
    if event.anchor is not None or (event.tag is not None and event.tag != tag):
        raise Defer
    if depth > MAX_DEPTH:
        raise Defer


def _mapping(get: Any, depth: int, key_lines: dict[str, int] | None) -> dict[str, Any]:
    result: dict[str, Any] = {}
    while True:
        key = get()
        if type(key) is not ScalarEvent:
            if type(key) is MappingEndEvent:
                return result
            raise Defer  # a complex key, or an alias
        name = key.value
        if key.anchor is not None or "\x00" in name or name in result:
            raise Defer  # an anchor, an escaped NUL, or a duplicate
        tag = key.tag
        if tag is None:
            if key.implicit[0] and (name == "<<" or type(plain_value(name)) is not str):
                raise Defer  # a merge key, or a plain key that reads as a number, bool or null
        elif tag != STR:
            raise Defer  # a key that is not a string
        if key_lines is not None:
            key_lines[name] = key.start_mark.line + 2
        value = get()
        # The usual value, an untagged scalar, read here rather than through `_value`.
        if type(value) is ScalarEvent and value.tag is None and value.anchor is None:
            text = value.value
            if "\x00" in text:
                raise Defer  # an escaped NUL: the reference finds its line
            result[name] = plain_value(text) if value.implicit[0] else text
        else:
            result[name] = _value(get, value, depth)


def _value(get: Any, event: Any, depth: int) -> Any:
    kind = type(event)
    if kind is ScalarEvent:
        if event.anchor is not None:
            raise Defer
        return _scalar(event)
    if kind is MappingStartEvent:
        _check_collection(event, MAP, depth + 1)
        return _mapping(get, depth + 1, None)
    if kind is SequenceStartEvent:
        _check_collection(event, SEQ, depth + 1)
        items: list[Any] = []
        append = items.append
        while True:
            item = get()
            if type(item) is SequenceEndEvent:
                return items
            append(_value(get, item, depth + 1))
    raise Defer  # an alias


class _Composer(CParser if AVAILABLE else object):  # type: ignore[misc]
    """libyaml's composer (nodes built in C, no event objects, no end events) for a
    `_composable` source: with no tag written, a scalar is plain exactly when its style is
    '' and its value is `plain_value`'s reading; the resolver is never asked."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> None:
        return None

    def descend_resolver(self, parent: Any, index: Any) -> None:
        return None

    def ascend_resolver(self) -> None:
        return None


def _read_composed(source: str) -> tuple[dict[str, Any], dict[str, int]]:
    """`read_mapping` by libyaml's composer; the same rules, the same `Defer`s."""
    composer = _Composer(source)
    try:
        root = composer.get_single_node()  # a second document is libyaml's error
    except LibyamlError as exc:
        raise Defer from exc
    finally:
        composer.dispose()
    if type(root) is not MappingNode:
        raise Defer  # empty, or not a mapping
    key_lines: dict[str, int] = {}
    return _node_mapping(root, 1, key_lines), key_lines


def _node_mapping(node: Any, depth: int, key_lines: dict[str, int] | None) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in node.value:
        if type(key) is not LibyamlScalarNode:
            raise Defer  # a complex key
        name = key.value
        if name in result:
            raise Defer  # a duplicate
        if key.style == "" and name not in STRING_KEYS and not is_string_key(name):
            raise Defer  # a merge key, or a plain key that reads as a number, bool or null
        if key_lines is not None:
            key_lines[name] = key.start_mark.line + 2
        if type(value) is LibyamlScalarNode:
            result[name] = plain_value(value.value) if value.style == "" else value.value
        else:
            result[name] = _node_collection(value, depth + 1)
    return result


def _node_collection(node: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise Defer
    if type(node) is MappingNode:
        return _node_mapping(node, depth, None)
    items: list[Any] = []
    append = items.append
    for item in node.value:
        if type(item) is LibyamlScalarNode:
            append(plain_value(item.value) if item.style == "" else item.value)
        else:
            append(_node_collection(item, depth + 1))
    return items


def _scalar(event: Any) -> Any:
    value = event.value
    if "\x00" in value:
        raise Defer  # an escaped NUL: the reference finds its line
    tag = event.tag
    if tag is None:
        return plain_value(value) if event.implicit[0] else value  # else quoted or a block
    if tag == STR:
        return value
    if tag not in TYPED:
        raise Defer  # a foreign tag, or !!seq / !!map on a scalar
    implicit = resolve(value)  # an explicit tag must fit the text
    if not (implicit == tag or (tag == FLOAT and implicit == INT)):
        raise Defer
    return typed_value(value, tag)
