"""OpenMemories 0.1: parse and validate records and manifests, and select the active records.

No Django import. Every rejection carries a stable machine-readable `code`, a human message
naming the field, and (for records) the file line. Timestamps come out of the strict front
matter reader as the strings they were written as and are validated here.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from formats.frontmatter import FrontMatterError
from formats.frontmatter import parse as parse_frontmatter

VERSION = "0.1"
KINDS = ("preference", "project", "fact", "procedure")
REQUIRED_FIELDS = ("openmemories", "id", "title", "kind", "scope", "created", "updated")
OPTIONAL_FIELDS = ("tags", "provenance", "expires", "supersedes")
KNOWN_FIELDS = frozenset(REQUIRED_FIELDS + OPTIONAL_FIELDS)
MANIFEST_KEYS = frozenset({"openmemories", "name", "memories"})
ENTRY_KEYS = frozenset({"id", "path"})
PROVENANCE_KEYS = frozenset({"source", "author"})
MAX_TITLE_CHARS = 200
DEFAULT_MAX_RECORD_BYTES = 256 * 1024
DEFAULT_MAX_MANIFEST_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_ENTRIES = 20_000

# RFC 3339 date-time in UTC, upper-case T and Z, optional fraction.
TIMESTAMP_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?Z$")
# RFC 3986 absolute-URI: scheme ":" hier-part [ "?" query ] (no fragment), printable ASCII.
SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
ABSOLUTE_URI_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:[!$&'()*+,;=:@/?A-Za-z0-9\-._~%]+$")
# A surrogate code point left in a decoded string is half of a pair: no UTF-8 text can hold it.
SURROGATE_RE = re.compile("[\ud800-\udfff]")


@dataclass(eq=False)
class Rejection(Exception):
    """Why a record or manifest entry was refused."""

    code: str
    message: str
    line: int | None = None
    path: str | None = None
    id: str | None = None

    def __str__(self) -> str:
        where = f" (line {self.line})" if self.line else ""
        return f"{self.code}: {self.message}{where}"


@dataclass(eq=False)
class ManifestError(Exception):
    """The manifest as a whole is unusable, so the source as a whole failed."""

    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


@dataclass(frozen=True)
class Problem:
    """A source-level finding that is not a rejection: a missing supersedes target, a cycle."""

    code: str
    ids: tuple[str, ...]
    message: str


@dataclass(frozen=True)
class Entry:
    id: str
    path: str


@dataclass(frozen=True)
class Manifest:
    name: str
    entries: tuple[Entry, ...]
    rejected: tuple[Rejection, ...] = ()
    extensions: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Record:
    id: str
    title: str
    kind: str
    scope: str
    created: datetime
    updated: datetime
    body: str
    tags: tuple[str, ...] = ()
    provenance: dict[str, Any] | None = None
    expires: datetime | None = None
    supersedes: tuple[str, ...] = ()
    extensions: dict[str, Any] = field(default_factory=dict)
    content_hash: str = ""

    def is_expired(self, now: datetime) -> bool:
        return self.expires is not None and self.expires <= now


@dataclass(frozen=True)
class Selection:
    """Which records are active, why the others are not, and what was found wrong."""

    active: frozenset[str]
    inactive: dict[str, str]  # id -> "expired" | "superseded"
    problems: tuple[Problem, ...]


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ----------------------------------------------------------------------------- strings


STRING_FAULTS = {
    "nul-byte": "a NUL character (\\u0000)",
    "lone-surrogate": "half of a surrogate pair (like \\ud800)",
}


def _label(value: Any) -> str:
    """A key as ASCII text that is safe to put in a message (escapes shown)."""
    return json.dumps(str(value))[1:-1]


def string_fault(text: str) -> str | None:
    """Why no text column or JSON document can hold `text`: a NUL character (JSON's \\u0000,
    YAML's \\0) or an unpaired surrogate (a lone \\ud800 escape); None when it can."""
    if "\x00" in text:
        return "nul-byte"
    if SURROGATE_RE.search(text):
        return "lone-surrogate"
    return None


def string_problem(value: Any, where: str) -> tuple[str, str] | None:
    """(code, message) for the first string in `value` (a string, or the keys and values of
    nested objects and arrays) that `string_fault` refuses. `where` names `value` in the
    message, like `name` or `memories[3]`; a key is named by where it is, never quoted."""
    stack: list[tuple[Any, str]] = [(value, f"'{where}'")]
    while stack:
        item, at = stack.pop()
        if isinstance(item, str):
            code = string_fault(item)
            if code is not None:
                return code, f"{at} contains {STRING_FAULTS[code]}"
        elif isinstance(item, dict):
            for key, sub in item.items():
                stack.append((sub, f"{at[:-1]}.{_label(key)}'"))
                stack.append((key, f"a key in {at}"))
        elif isinstance(item, list | tuple):
            stack.extend((sub, f"{at[:-1]}[{index}]'") for index, sub in enumerate(item))
    return None


def mapping_problem(mapping: Mapping[Any, Any], what: str) -> tuple[str, str, Any] | None:
    """string_problem over a top-level mapping: (code, message, the key it concerns)."""
    for key, value in mapping.items():
        code = string_fault(key) if isinstance(key, str) else None
        if code is not None:
            return code, f"a key of {what} contains {STRING_FAULTS[code]}", key
        problem = string_problem(value, _label(key))
        if problem is not None:
            return problem[0], f"{what}: {problem[1]}", key
    return None


def _clean(value: Any) -> str | None:
    """`value` when it is a string that is safe to keep on a rejection, else None."""
    return value if isinstance(value, str) and string_fault(value) is None else None


# ----------------------------------------------------------------------------- timestamps


def parse_timestamp(value: str) -> datetime | None:
    """An RFC 3339 UTC timestamp ending in Z, or None when it is not one."""
    match = TIMESTAMP_RE.match(value)
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(part) for part in match.groups()[:6])
    fraction = match.group(7)
    micro = int((fraction[1:] + "000000")[:6]) if fraction else 0
    try:
        return datetime(year, month, day, hour, minute, second, micro, tzinfo=UTC)
    except ValueError:
        return None


def format_timestamp(value: datetime) -> str:
    value = value.astimezone(UTC)
    text = value.strftime("%Y-%m-%dT%H:%M:%S")
    if value.microsecond:
        text += f".{value.microsecond:06d}".rstrip("0")
    return text + "Z"


def is_absolute_uri(value: str) -> bool:
    return bool(ABSOLUTE_URI_RE.match(value)) and "#" not in value


# ----------------------------------------------------------------------------- records


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
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise Rejection(code, f"'{key}' must be an array of non-empty strings", _line(lines, key))
    return tuple(value)


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
    found = mapping_problem(meta, "the front matter")
    if found is not None:
        code, message, key = found
        raise Rejection(code, message, _line(lines, key) if _clean(key) else 2)
    code = string_fault(document.body)
    if code is not None:
        raise Rejection(
            code, f"the Markdown body contains {STRING_FAULTS[code]}", document.body_line
        )
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
    extensions = {key: value for key, value in meta.items() if key.startswith("x-")}
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


def load_manifest_json(data: bytes, *, max_bytes: int = DEFAULT_MAX_MANIFEST_BYTES) -> Any:
    """Strict JSON: UTF-8, a size limit, no duplicate keys, no NaN or Infinity."""
    if len(data) > max_bytes:
        raise ManifestError("too-large", f"the manifest is {len(data)} bytes, over {max_bytes}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ManifestError("not-utf8", "the manifest is not valid UTF-8") from exc
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ManifestError(
            "json-syntax", f"the manifest is not valid JSON: {exc.msg} (line {exc.lineno})"
        ) from exc
    except RecursionError as exc:
        raise ManifestError("json-syntax", "the manifest nests too deeply") from exc


def parse_manifest(
    data: bytes,
    *,
    max_bytes: int = DEFAULT_MAX_MANIFEST_BYTES,
    max_entries: int = DEFAULT_MAX_ENTRIES,
) -> Manifest:
    """Validate memories.json. Whole-manifest faults raise ManifestError; a bad entry is only
    rejected (with a code) and the other entries stay usable."""
    document = load_manifest_json(data, max_bytes=max_bytes)
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
    candidates: list[Entry] = []
    rejected: list[Rejection] = []
    for index, item in enumerate(memories):
        where = f"memories[{index}]"
        if not isinstance(item, dict):
            rejected.append(Rejection("bad-entry", f"{where} must be an object"))
            continue
        entry_id, path = item.get("id"), item.get("path")
        problem = string_problem(item, where)  # id, path and x- keys alike
        if problem is not None:
            rejected.append(Rejection(*problem, None, _clean(path), _clean(entry_id)))
            continue
        unknown = [k for k in item if k not in ENTRY_KEYS and not str(k).startswith("x-")]
        if unknown:
            rejected.append(
                Rejection("unknown-key", f"{where} has unknown key '{unknown[0]}'", None)
            )
            continue
        if not isinstance(entry_id, str) or not entry_id:
            rejected.append(
                Rejection("bad-entry", f"{where}.id must be a non-empty string", path=_s(path))
            )
            continue
        if not isinstance(path, str) or not path:
            rejected.append(
                Rejection("bad-entry", f"{where}.path must be a non-empty string", id=entry_id)
            )
            continue
        reason = path_problem(path)
        if reason is not None:
            rejected.append(Rejection("bad-path", f"{where}.path: {reason}", None, path, entry_id))
            continue
        candidates.append(Entry(entry_id, path))
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


def _s(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _counts(values: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return counts


# ----------------------------------------------------------------------------- selection


def select(records: Iterable[Record], *, now: datetime) -> Selection:
    """Apply expiry and replacement inside one source.

    A record replaced by another one of this source is inactive ("superseded"), even when the
    replacement has itself expired. Targets that are not among the valid records, and every
    replacement inside a cycle, are reported as problems and do not apply. Records of different
    sources never meet here, so no winner is ever chosen across sources by timestamp.
    """
    by_id = {record.id: record for record in records}
    problems: list[Problem] = []
    edges: dict[str, list[str]] = {record_id: [] for record_id in by_id}
    for record in by_id.values():
        for target in record.supersedes:
            if target not in by_id:
                problems.append(
                    Problem(
                        "supersedes-missing",
                        (record.id, target),
                        f"{record.id!r} supersedes {target!r}, which is not a valid record "
                        "of this source; the replacement does not apply",
                    )
                )
            else:
                edges[record.id].append(target)
    in_cycle: dict[str, int] = {}
    for number, component in enumerate(_cycles(edges)):
        for record_id in component:
            in_cycle[record_id] = number
        problems.append(
            Problem(
                "supersedes-cycle",
                tuple(sorted(component)),
                "these records supersede each other in a cycle; none of these replacements "
                "apply: " + ", ".join(sorted(component)),
            )
        )
    superseded: set[str] = set()
    for source_id, targets in edges.items():
        for target in targets:
            same_cycle = source_id in in_cycle and in_cycle.get(target) == in_cycle[source_id]
            if not same_cycle:
                superseded.add(target)
    inactive: dict[str, str] = {}
    for record in by_id.values():
        if record.is_expired(now):
            inactive[record.id] = "expired"
        elif record.id in superseded:
            inactive[record.id] = "superseded"
    active = frozenset(record_id for record_id in by_id if record_id not in inactive)
    return Selection(active, inactive, tuple(problems))


def _cycles(edges: Mapping[str, list[str]]) -> list[list[str]]:
    """Strongly connected components that contain a cycle (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    result: list[list[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            targets = edges[node]
            if child < len(targets):
                work.append((node, child + 1))
                target = targets[child]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges[node]:
                    result.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return result
