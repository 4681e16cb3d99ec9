"""OpenMemories 0.1 manifests (memories.json): strict JSON, entries, and the path rules.
No Django import."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from formats.openmemories.model import (
    DEFAULT_MAX_ENTRIES,
    DEFAULT_MAX_MANIFEST_BYTES,
    ENTRY_KEYS,
    MANIFEST_KEYS,
    SCHEME_RE,
    VERSION,
    Entry,
    Manifest,
    ManifestError,
    Rejection,
)
from formats.openmemories.text import (
    _clean,
    mapping_problem,
    string_problem,
)

# ----------------------------------------------------------------------------- paths


_CONTROL_CHAR = re.compile("[\x00-\x1f\x7f]")


def path_problem(path: str) -> str | None:
    """Why a manifest path breaks the 0.1 path rules, or None when it is acceptable."""
    if not path:
        return "the path is empty"
    if _CONTROL_CHAR.search(path):
        return "the path contains a control character"
    if "\\" in path:
        return "the path contains a backslash"
    if path.startswith("//"):
        return "the path has an authority (starts with //)"
    if path.startswith("/"):
        return "the path starts with a slash"
    if SCHEME_RE.match(path) or ":" in path.split("/", 1)[0]:
        return "the path has a scheme"
    if "%" in path:
        return "the path contains a percent escape"
    if "?" in path:
        return "the path contains a query"
    if "#" in path:
        return "the path contains a fragment"
    for segment in path.split("/"):
        if segment == "":
            return "the path has an empty segment"
        if segment in (".", ".."):
            return f"the path has a '{segment}' segment"
    if not path.endswith(".md"):
        return "the path does not end in .md"
    return None


# ----------------------------------------------------------------------------- manifests


def _reject_constant(name: str) -> Any:
    raise ManifestError("json-constant", f"the manifest uses {name}, which JSON does not allow")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ManifestError("json-duplicate-key", f"the manifest repeats the key '{key}'")
        result[key] = value
    return result


def _manifest_text(data: bytes, max_bytes: int) -> str:
    if len(data) > max_bytes:
        raise ManifestError("too-large", f"the manifest is {len(data)} bytes, over {max_bytes}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ManifestError("not-utf8", "the manifest is not valid UTF-8") from exc
    return text[1:] if text.startswith("\ufeff") else text


def load_manifest_json(data: bytes, *, max_bytes: int = DEFAULT_MAX_MANIFEST_BYTES) -> Any:
    """Strict JSON: UTF-8, a size limit, no duplicate keys, no NaN or Infinity."""
    text = _manifest_text(data, max_bytes)
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ManifestError(
            "json-syntax", f"the manifest is not valid JSON: {exc.msg} (line {exc.lineno})"
        ) from exc
    except RecursionError as exc:
        raise ManifestError("json-syntax", "the manifest nests too deeply") from exc


_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_reject_constant)


class _Irregular(Exception):
    """The streamed read met something it leaves to `json.loads` (which words the error)."""


def _streamed(text: str, max_entries: int, entry: Any) -> dict[str, Any]:
    """The manifest's top-level object with `memories` read one entry at a time, each turned
    into what `entry(index, item)` returns at once: no dict per entry is held while the rest
    are read (20,000 of them were most of a refresh's memory). Plain JSON only — anything
    else (a syntax error, a duplicate key, `memories` not an array or too long) raises
    `_Irregular`, and the caller parses the whole text as before, for the same error."""
    raw, space = _DECODER.raw_decode, _SPACE.match
    try:
        at = space(text).end()
        if text[at : at + 1] != "{":
            raise _Irregular
        at = space(text, at + 1).end()
        document: dict[str, Any] = {}
        while True:
            if text[at : at + 1] != '"':
                raise _Irregular
            key, at = raw(text, at)
            at = space(text, at).end()
            if text[at : at + 1] != ":" or key in document:
                raise _Irregular
            at = space(text, at + 1).end()
            if key == "memories" and text[at : at + 1] == "[":
                results: list[Any] = []
                at = space(text, at + 1).end()
                if text[at : at + 1] == "]":
                    at += 1
                while text[at - 1 : at] != "]":
                    item, at = raw(text, at)
                    if len(results) >= max_entries:
                        raise _Irregular
                    results.append(entry(len(results), item))
                    del item
                    at = space(text, at).end()
                    if text[at : at + 1] not in (",", "]"):
                        raise _Irregular
                    at = space(text, at + 1).end() if text[at] == "," else at + 1
                document[key] = results
            else:
                document[key], at = raw(text, at)
            at = space(text, at).end()
            if text[at : at + 1] == "}":
                break
            if text[at : at + 1] != ",":
                raise _Irregular
            at = space(text, at + 1).end()
        if space(text, at + 1).end() != len(text):
            raise _Irregular
    except (ValueError, ManifestError, RecursionError) as exc:
        raise _Irregular from exc
    return document


def parse_manifest(
    data: bytes,
    *,
    max_bytes: int = DEFAULT_MAX_MANIFEST_BYTES,
    max_entries: int = DEFAULT_MAX_ENTRIES,
) -> Manifest:
    """Validate memories.json. Whole-manifest faults raise ManifestError; a bad entry is only
    rejected (with a code) and the other entries stay usable."""
    # JSON writes a NUL or a lone surrogate only as a \\u escape (a raw control character is
    # a syntax error, and valid UTF-8 holds no surrogate): with no backslash in the file, no
    # string can hold one, and the per-entry walk is skipped.
    escaped = b"\\" in data

    def entry(index: int, item: Any) -> Entry | Rejection:
        return _entry(index, item, escaped)

    text = _manifest_text(data, max_bytes)
    try:
        document: Any = _streamed(text, max_entries, entry)
        streamed = True
    except _Irregular:
        document = load_manifest_json(data, max_bytes=max_bytes)
        streamed = False
    del text
    if not isinstance(document, dict):
        raise ManifestError("manifest-not-object", "the manifest must be a JSON object")
    # Every string outside the entries (keys, version, name, extensions), before any message
    # quotes one; an entry's strings are judged with the entry below.
    found = mapping_problem(
        {key: value for key, value in document.items() if key != "memories"}, "the manifest"
    )
    if found is not None:
        raise ManifestError(found[0], found[1])
    for key in document:
        if key not in MANIFEST_KEYS and not key.startswith("x-"):
            raise ManifestError(
                "unknown-key", f"'{key}' is not a manifest field; extensions must start with x-"
            )
    if "openmemories" not in document:
        raise ManifestError("missing-field", "the manifest has no 'openmemories' version")
    if document["openmemories"] != VERSION:
        raise ManifestError(
            "unsupported-version",
            f"the manifest version is {document['openmemories']!r}; "
            f"this reader supports only '{VERSION}'",
        )
    name = document.get("name")
    if "name" not in document:
        raise ManifestError("missing-field", "the manifest has no 'name'")
    if not isinstance(name, str) or not name.strip():
        raise ManifestError("bad-name", "'name' must be a non-empty string")
    if "memories" not in document:
        raise ManifestError("missing-field", "the manifest has no 'memories' array")
    memories = document["memories"]
    if not isinstance(memories, list):
        raise ManifestError("bad-memories", "'memories' must be an array")
    if len(memories) > max_entries:
        raise ManifestError(
            "too-many-entries", f"the manifest lists {len(memories)} records, over {max_entries}"
        )
    results = memories if streamed else [entry(i, item) for i, item in enumerate(memories)]
    del memories
    document["memories"] = None
    candidates = [r for r in results if type(r) is Entry]
    rejected = [r for r in results if type(r) is not Entry]
    del results
    # Duplicates make every entry involved ambiguous, so all of them are rejected.
    id_counts = _counts(entry.id for entry in candidates)
    path_counts = _counts(entry.path for entry in candidates)
    entries: list[Entry] = []
    for entry in candidates:
        if id_counts[entry.id] > 1:
            rejected.append(
                Rejection(
                    "duplicate-id",
                    f"the id {entry.id!r} is listed more than once",
                    None,
                    entry.path,
                    entry.id,
                )
            )
        elif path_counts[entry.path] > 1:
            rejected.append(
                Rejection(
                    "duplicate-path",
                    f"the path {entry.path!r} is listed more than once",
                    None,
                    entry.path,
                    entry.id,
                )
            )
        else:
            entries.append(entry)
    extensions = {k: v for k, v in document.items() if k.startswith("x-")}
    return Manifest(name.strip(), tuple(entries), tuple(rejected), extensions)


def _entry(index: int, item: Any, escaped: bool) -> Entry | Rejection:
    """One manifest entry, checked: its Entry, or why it is rejected."""
    where = f"memories[{index}]"
    if not isinstance(item, dict):
        return Rejection("bad-entry", f"{where} must be an object")
    entry_id, path = item.get("id"), item.get("path")
    problem = string_problem(item, where) if escaped else None  # id, path and x- keys
    if problem is not None:
        return Rejection(*problem, None, _clean(path), _clean(entry_id))
    unknown = [k for k in item if k not in ENTRY_KEYS and not str(k).startswith("x-")]
    if unknown:
        return Rejection("unknown-key", f"{where} has unknown key '{unknown[0]}'", None)
    if not isinstance(entry_id, str) or not entry_id:
        return Rejection("bad-entry", f"{where}.id must be a non-empty string", path=_s(path))
    if not isinstance(path, str) or not path:
        return Rejection("bad-entry", f"{where}.path must be a non-empty string", id=entry_id)
    reason = path_problem(path)
    if reason is not None:
        return Rejection("bad-path", f"{where}.path: {reason}", None, path, entry_id)
    return Entry(entry_id, path)


def _s(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _counts(values: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return counts
