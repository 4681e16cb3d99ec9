"""Reading a scalar as ruamel.yaml (YAML 1.2) reads it, for the libyaml paths of `fast`.

No Django import. Tags are resolved by ruamel.yaml's own implicit resolver table and numbers
built by its constructor, so a value means what it means to the reference reader.
"""

from __future__ import annotations

import re
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.nodes import ScalarNode

from formats.strict_yaml.errors import CORE, STRING_TAGS

STR, MAP, SEQ = CORE + "str", CORE + "map", CORE + "seq"
INT, FLOAT, BOOL, NULL = CORE + "int", CORE + "float", CORE + "bool", CORE + "null"
TYPED = frozenset((INT, FLOAT, BOOL, NULL))
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


# A plain scalar's value depends on its text alone: the short ones every front matter repeats
# (its keys, `true`, `draft`) are read once per process, not by the resolver table each time.
_PLAIN: dict[str, Any] = {}
_PLAIN_MAX, _PLAIN_TEXT_MAX = 4096, 64
_MISSING = object()


def plain_value(text: str) -> Any:
    """The value of an untagged plain scalar (no NUL in `text`); `Defer` when unsure."""
    value = _PLAIN.get(text, _MISSING)
    if value is _MISSING:
        value = typed_value(text, resolve(text))
        if len(text) <= _PLAIN_TEXT_MAX and len(_PLAIN) < _PLAIN_MAX:
            _PLAIN[text] = value
    return value


# The plain keys known to read as strings (`is_string_key`): one set look-up per key.
STRING_KEYS: set[str] = set()


def is_string_key(text: str) -> bool:
    """Whether a plain key is a string: not '<<' (a merge key), not a number, bool or null."""
    if text == "<<" or type(plain_value(text)) is not str:
        return False
    if len(text) <= _PLAIN_TEXT_MAX and len(STRING_KEYS) < _PLAIN_MAX:
        STRING_KEYS.add(text)
    return True


def resolve(value: str) -> str:
    for implicit, regexp in _RESOLVERS.get(value[:1], ()):
        if regexp.match(value):
            return implicit
    return STR


def typed_value(value: str, tag: str) -> Any:
    """`value` read as a scalar of `tag` (one `resolve` gives, or an explicit one that fits)."""
    if tag in STRING_TAGS:
        return value
    if tag == NULL:
        return None
    try:
        if tag == INT:
            if _DECIMAL.fullmatch(value):
                return int(value)
            return _CONSTRUCTOR.construct_yaml_int(ScalarNode(tag, value))
        if tag == BOOL:
            return _CONSTRUCTOR.construct_yaml_bool(ScalarNode(tag, value))
        if tag == FLOAT:
            return float(_CONSTRUCTOR.construct_yaml_float(ScalarNode(tag, value)))
    except ValueError as exc:  # e.g. an integer past Python's 4300-digit limit
        raise Defer from exc
    raise Defer  # pragma: no cover - every tag of resolve is handled above
