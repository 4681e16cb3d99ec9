"""The fast strict YAML reader: libyaml's C parser scans, every rule is checked on its events.

No Django import. PyYAML's binding of libyaml (`yaml._yaml.CParser`) turns the text into
events in C; this module builds the plain values from them and checks, event by event, what
the reference reader (`strict_yaml.reference`, pure ruamel.yaml) checks: one mapping, no
anchors or aliases, only core tags that fit their node, no merge or complex keys, string keys
without duplicates at any depth, at most MAX_DEPTH nested collections. Scalars are resolved
by ruamel.yaml's own YAML 1.2 table (libyaml knows no tags, PyYAML's resolver is YAML 1.1) and
numbers built by its constructor, so a value means what it meant before.

Whenever a document breaks a rule, fails libyaml's own checks, or holds something the two
parsers are known to read differently, `Defer` is raised: the caller lets the reference reader
decide, and its error (code, message, line) is the one reported. Refused documents are rare;
accepted ones never touch the pure-Python scanner.
"""

from __future__ import annotations

import re
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.nodes import ScalarNode

from formats.strict_yaml.errors import CORE, MAX_DEPTH, STRING_TAGS

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
except ImportError:  # pragma: no cover - PyYAML built without libyaml: the reference reads all
    CParser = None

AVAILABLE = CParser is not None

# What libyaml and ruamel.yaml's pure scanner read differently: NEL, LS and PS are line breaks
# to libyaml (YAML 1.1) only, and ruamel refuses a tab separating tokens in block context
# (`a:<tab>1`, `a: b<tab>`) where libyaml skips it. A document holding one of these characters
# goes to the reference reader (a tab inside a quoted or block string too: rare in front matter).
NEEDS_REFERENCE = re.compile("[\t\x85\u2028\u2029]")

_STR, _MAP, _SEQ = CORE + "str", CORE + "map", CORE + "seq"
_INT, _FLOAT, _BOOL, _NULL = CORE + "int", CORE + "float", CORE + "bool", CORE + "null"
_TYPED = frozenset((_INT, _FLOAT, _BOOL, _NULL))
_DECIMAL = re.compile(r"[-+]?[0-9]+")

_RUAMEL = YAML(typ="safe", pure=True)
_CONSTRUCTOR = _RUAMEL.constructor
# ruamel.yaml's YAML 1.2 implicit resolvers, by a scalar's first character ("" for empty).
_RESOLVERS: dict[str, tuple[tuple[str, re.Pattern[str]], ...]] = {
    first: tuple((str(tag), regexp) for tag, regexp in pairs)
    for first, pairs in _RUAMEL.resolver.versioned_resolver.items()
}


class Defer(Exception):
    """The fast reader is not sure: the reference reader decides (and words any error)."""


def read_mapping(source: str) -> tuple[dict[str, Any], dict[str, int]]:
    """The strict mapping `source` holds, and each top-level key's file line; or `Defer`."""
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
    _check_collection(root, _MAP, 1)
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
        if key.anchor is not None or (key.tag is None and key.implicit[0] and key.value == "<<"):
            raise Defer  # an anchor, or a merge key
        name = _scalar(key)
        if type(name) is not str or name in result:
            raise Defer  # not a string, or a duplicate
        if key_lines is not None:
            key_lines[name] = key.start_mark.line + 2
        result[name] = _value(get, get(), depth)


def _value(get: Any, event: Any, depth: int) -> Any:
    kind = type(event)
    if kind is ScalarEvent:
        if event.anchor is not None:
            raise Defer
        return _scalar(event)
    if kind is MappingStartEvent:
        _check_collection(event, _MAP, depth + 1)
        return _mapping(get, depth + 1, None)
    if kind is SequenceStartEvent:
        _check_collection(event, _SEQ, depth + 1)
        items: list[Any] = []
        append = items.append
        while True:
            item = get()
            if type(item) is SequenceEndEvent:
                return items
            append(_value(get, item, depth + 1))
    raise Defer  # an alias


# A plain scalar's tag depends on its text alone: the short ones every front matter repeats
# (its keys, `true`, `draft`) are resolved once per process, not by the regex table each time.
_RESOLVED: dict[str, str] = {}
_RESOLVED_MAX, _RESOLVED_TEXT_MAX = 4096, 64


def _resolve(value: str) -> str:
    tag = _RESOLVED.get(value)
    if tag is not None:
        return tag
    tag = _STR
    for implicit, regexp in _RESOLVERS.get(value[:1], ()):
        if regexp.match(value):
            tag = implicit
            break
    if len(value) <= _RESOLVED_TEXT_MAX and len(_RESOLVED) < _RESOLVED_MAX:
        _RESOLVED[value] = tag
    return tag


def _scalar(event: Any) -> Any:
    value = event.value
    if "\x00" in value:
        raise Defer  # an escaped NUL: the reference finds its line
    tag = event.tag
    if tag is None:
        if not event.implicit[0]:
            return value  # quoted or a block: a string
        tag = _resolve(value)
        if tag in STRING_TAGS:
            return value
    elif tag == _STR:
        return value
    elif tag not in _TYPED:
        raise Defer  # a foreign tag, or !!seq / !!map on a scalar
    else:
        implicit = _resolve(value)  # an explicit tag must fit the text
        if not (implicit == tag or (tag == _FLOAT and implicit == _INT)):
            raise Defer
    if tag == _NULL:
        return None
    try:
        if tag == _INT:
            if _DECIMAL.fullmatch(value):
                return int(value)
            return _CONSTRUCTOR.construct_yaml_int(ScalarNode(tag, value))
        if tag == _BOOL:
            return _CONSTRUCTOR.construct_yaml_bool(ScalarNode(tag, value))
        if tag == _FLOAT:
            return float(_CONSTRUCTOR.construct_yaml_float(ScalarNode(tag, value)))
    except ValueError as exc:  # e.g. an integer past Python's 4300-digit limit
        raise Defer from exc
    raise Defer  # pragma: no cover - every tag of _resolve is handled above
