"""OpenMemories 0.1 record files: front matter and body, validated field by field.

No Django import. Every rejection carries a stable machine-readable `code`, a human message
naming the field, and the file line. Timestamps come out of the strict front matter reader as
the strings they were written as and are validated here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from formats.frontmatter import FrontMatterError
from formats.frontmatter import parse as parse_frontmatter
from formats.openmemories.model import (
    DEFAULT_MAX_RECORD_BYTES,
    KINDS,
    KNOWN_FIELDS,
    MAX_TITLE_CHARS,
    PROVENANCE_KEYS,
    REQUIRED_FIELDS,
    VERSION,
    Record,
    Rejection,
    content_hash,
)
from formats.openmemories.text import (
    STRING_FAULTS,
    _clean,
    is_absolute_uri,
    mapping_problem,
    parse_timestamp,
    string_fault,
)

# ----------------------------------------------------------------------------- records

_REQUIRED = frozenset(REQUIRED_FIELDS)


def _line(key_lines: Mapping[str, int], key: str) -> int | None:
    return key_lines.get(key)


def _string_field(meta: Mapping[str, Any], key: str, lines: Mapping[str, int]) -> str:
    value = meta[key]
    if not isinstance(value, str):
        hint = " (quote it)" if isinstance(value, int | float | bool) or value is None else ""
        raise Rejection("bad-type", f"'{key}' must be a string{hint}", _line(lines, key))
    if not value.strip():
        raise Rejection("empty-field", f"'{key}' must not be empty", _line(lines, key))
    return value


def _timestamp_field(meta: Mapping[str, Any], key: str, lines: Mapping[str, int]) -> datetime:
    value = meta[key]
    parsed = parse_timestamp(value) if isinstance(value, str) else None
    if parsed is None:
        raise Rejection(
            "bad-timestamp",
            f"'{key}' must be an RFC 3339 UTC timestamp ending in Z, "
            f"like 2026-11-12T12:00:00Z, not {value!r}",
            _line(lines, key),
        )
    return parsed


def _string_list(
    meta: Mapping[str, Any], key: str, lines: Mapping[str, int], code: str
) -> tuple[str, ...]:
    value = meta[key]
    if isinstance(value, list):
        for item in value:
            if not isinstance(item, str) or not item:
                break
        else:
            return tuple(value)
    raise Rejection(code, f"'{key}' must be an array of non-empty strings", _line(lines, key))


def _provenance(meta: Mapping[str, Any], lines: Mapping[str, int]) -> dict[str, Any]:
    value = meta["provenance"]
    line = _line(lines, "provenance")
    if not isinstance(value, dict):
        raise Rejection("bad-provenance", "'provenance' must be an object", line)
    for key, item in value.items():
        if key in PROVENANCE_KEYS:
            if not isinstance(item, str) or not item:
                raise Rejection(
                    "bad-provenance", f"'provenance.{key}' must be a non-empty string", line
                )
        elif not str(key).startswith("x-"):
            raise Rejection(
                "bad-provenance",
                f"'provenance.{key}' is not a known key (source, author) or an x- extension",
                line,
            )
    source = value.get("source")
    if source is not None and not is_absolute_uri(source):
        raise Rejection("bad-provenance", "'provenance.source' must be an absolute URI", line)
    return dict(value)


def parse_record(
    data: bytes | str,
    *,
    expected_id: str | None = None,
    path: str | None = None,
    max_bytes: int = DEFAULT_MAX_RECORD_BYTES,
) -> Record:
    """Parse one record file; raise `Rejection` (with path and id filled in) when it is invalid."""
    try:
        raw = data.encode("utf-8") if isinstance(data, str) else data
    except UnicodeEncodeError as exc:
        raise Rejection(
            "lone-surrogate", "the text contains half of a surrogate pair", None, path, expected_id
        ) from exc
    try:
        return _parse_record(raw, expected_id=expected_id, max_bytes=max_bytes)
    except FrontMatterError as exc:
        raise Rejection(exc.code, exc.message, exc.line, path, expected_id) from exc
    except Rejection as exc:
        raise Rejection(exc.code, exc.message, exc.line, path, exc.id or expected_id) from exc


def _parse_record(raw: bytes, *, expected_id: str | None, max_bytes: int) -> Record:
    document = parse_frontmatter(raw, max_bytes=max_bytes)
    meta, lines = document.meta, document.key_lines
    # Every string of the front matter and the body, before any message quotes one of them.
    # The file itself holds no NUL (the front matter reader refuses one) and, being UTF-8, no
    # surrogate: only a YAML escape (`\0`, `\ud800`) makes one, so with no backslash in the
    # file there is nothing to find and the walk is skipped.
    if b"\\" in raw:
        found = mapping_problem(meta, "the front matter")
        if found is not None:
            code, message, key = found
            raise Rejection(code, message, _line(lines, key) if _clean(key) else 2)
        code = string_fault(document.body)
        if code is not None:
            raise Rejection(
                code, f"the Markdown body contains {STRING_FAULTS[code]}", document.body_line
            )
    only_known = KNOWN_FIELDS.issuperset(meta)  # no extension, no unknown key: most records
    if not only_known:
        for key in meta:
            if key not in KNOWN_FIELDS and not key.startswith("x-"):
                raise Rejection(
                    "unknown-key",
                    f"'{key}' is not an OpenMemories 0.1 field; extension keys must start with x-",
                    _line(lines, key),
                )
    # The version comes first: fields of an unknown version are not judged by 0.1 rules.
    if "openmemories" not in meta:
        raise Rejection("missing-field", "the required field 'openmemories' is missing", 2)
    version = meta["openmemories"]
    if version != VERSION:
        hint = " (quote it: '0.1')" if isinstance(version, float) and version == 0.1 else ""
        raise Rejection(
            "unsupported-version",
            f"'openmemories' is {version!r}; this reader supports only the string '0.1'{hint}",
            _line(lines, "openmemories"),
        )
    if not meta.keys() >= _REQUIRED:
        for key in REQUIRED_FIELDS:
            if key not in meta:
                raise Rejection("missing-field", f"the required field '{key}' is missing", 2)
    record_id = _string_field(meta, "id", lines)
    if expected_id is not None and record_id != expected_id:
        raise Rejection(
            "id-mismatch",
            f"'id' is {record_id!r} but the manifest entry says {expected_id!r}",
            _line(lines, "id"),
            id=expected_id,
        )
    title = _string_field(meta, "title", lines)
    if len(title) > MAX_TITLE_CHARS or "\n" in title.strip():
        raise Rejection(
            "bad-title",
            f"'title' must be a short single line (at most {MAX_TITLE_CHARS} characters)",
            _line(lines, "title"),
        )
    kind = meta["kind"]
    if kind not in KINDS:
        raise Rejection(
            "bad-kind", f"'kind' must be one of {', '.join(KINDS)}, not {kind!r}", lines.get("kind")
        )
    scope = meta["scope"]
    if not isinstance(scope, str) or not (scope == "user" or is_absolute_uri(scope)):
        raise Rejection(
            "bad-scope",
            f"'scope' must be 'user' or an absolute URI, not {scope!r}",
            _line(lines, "scope"),
        )
    created = _timestamp_field(meta, "created", lines)
    updated = _timestamp_field(meta, "updated", lines)
    if updated < created:
        raise Rejection(
            "updated-before-created",
            f"'updated' ({meta['updated']}) is before 'created' ({meta['created']})",
            _line(lines, "updated"),
        )
    expires = _timestamp_field(meta, "expires", lines) if "expires" in meta else None
    tags = _string_list(meta, "tags", lines, "bad-tags") if "tags" in meta else ()
    supersedes = (
        _string_list(meta, "supersedes", lines, "bad-supersedes") if "supersedes" in meta else ()
    )
    provenance = _provenance(meta, lines) if "provenance" in meta else None
    if not document.body.strip():
        raise Rejection("empty-body", "the Markdown body is empty", document.body_line)
    extensions = {} if only_known else {k: v for k, v in meta.items() if k.startswith("x-")}
    if extensions:  # most records have none: no JSON encoder for an empty object
        try:
            json.dumps(extensions, allow_nan=False)
        except ValueError as exc:
            raise Rejection("bad-extension", "extension values must be plain JSON data", 2) from exc
    return Record(
        id=record_id,
        title=title,
        kind=kind,
        scope=scope,
        created=created,
        updated=updated,
        body=document.body,
        tags=tags,
        provenance=provenance,
        expires=expires,
        supersedes=supersedes,
        extensions=extensions,
        content_hash=content_hash(raw),
    )
