"""MemoryRail 1: find a project, read its config and memory files, validate, derive short refs.

No Django import. Every problem carries a stable code, the repo-relative path and a line.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from formats.frontmatter import Document, FrontMatterError, line_of, parse

CONFIG_PATH = ".memoryrail/config.json"
MEMORIES_DIR = ".memoryrail/memories"
MAX_MEMORY_BYTES = 256 * 1024
MAX_CONFIG_BYTES = 64 * 1024

TYPE_PREFIXES: dict[str, str] = {
    "decision": "DEC",
    "constraint": "CON",
    "gotcha": "GOT",
    "attempt": "ATT",
    "thread": "THR",
    "session": "SES",
}
PREFIX_TYPES = {prefix: kind for kind, prefix in TYPE_PREFIXES.items()}
STATUSES = ("active", "proposed", "superseded", "archived", "resolved")
DURABLE_TYPES = ("decision", "constraint", "gotcha", "attempt")
REVIEW_MODES = ("off", "agents")
REQUIRED_FIELDS = ("id", "type", "title", "status", "created", "updated")
TEXT_FIELDS = ("id", "type", "title", "status", "supersedes", "superseded_by")
REF_RE = re.compile(r"^(DEC|CON|GOT|ATT|THR|SES)-([0-9a-f]{4})$")
_TIMESTAMP_RE = re.compile(
    r"^\d{4}-\d{2}-\d{2}"
    r"(?:[Tt ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:[Zz]|[+-]\d{2}(?::?\d{2})?)?)?$"
)

_SURROGATE = re.compile("[\ud800-\udfff]")

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True)
class Problem:
    code: str
    path: str
    line: int | None
    message: str
    level: str = ERROR

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "path": self.path, "line": self.line, "message": self.message}


class ConfigError(Exception):
    """The project config is missing or not MemoryRail version 1."""

    def __init__(self, code: str, message: str, line: int | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.line = line

    def as_problem(self) -> Problem:
        return Problem(self.code, CONFIG_PATH, self.line, self.message)


@dataclass(frozen=True)
class Config:
    version: int
    review: str
    raw: dict[str, Any]


@dataclass(frozen=True)
class Memory:
    id: str
    type: str
    title: str
    status: str
    created: str
    updated: str
    path: str  # repo-relative POSIX path of the file
    meta: dict[str, Any]  # every front matter field as read, unknown ones included
    body: str
    body_line: int
    tags: tuple[str, ...] = ()
    links: tuple[str, ...] = ()
    pinned: bool = False
    supersedes: str | None = None
    superseded_by: str | None = None

    @property
    def ref(self) -> str:
        return short_ref(self.id, self.type)


@dataclass
class Project:
    root: Path
    config: Config | None
    memories: list[Memory] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(p.level == ERROR for p in self.problems)


def short_ref(memory_id: str, memory_type: str) -> str:
    digest = hashlib.sha1(memory_id.encode("utf-8"), usedforsecurity=False).hexdigest()
    return f"{TYPE_PREFIXES[memory_type]}-{digest[:4]}"


def is_ref(text: str) -> bool:
    return REF_RE.match(text) is not None


def parse_timestamp(value: str) -> datetime | None:
    """ISO 8601 date or date-time; naive values are read as UTC. None when not ISO 8601."""
    if not isinstance(value, str) or not _TIMESTAMP_RE.match(value):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace(",", "."))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def format_timestamp(moment: datetime) -> str:
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def find_root(start: Path) -> Path | None:
    """The nearest directory at or above `start` that holds .memoryrail/config.json."""
    current = start.resolve()
    for candidate in (current, *current.parents):
        if (candidate / CONFIG_PATH).is_file():
            return candidate
    return None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ConfigError("config-invalid-json", f"config.json repeats the key {key!r}")
        result[key] = value
    return result


def read_limited(path: Path, limit: int) -> bytes:
    """At most limit + 1 bytes of a file: enough to tell it is too large without reading it all."""
    with path.open("rb") as handle:
        return handle.read(limit + 1)


def _inside(path: Path, root: Path) -> bool:
    """True when `path` is no symlink and resolves inside `root` (git can commit symlinks)."""
    return not path.is_symlink() and path.resolve().is_relative_to(root.resolve())


# One escape of a JSON string, matched in sequence (valid JSON: every backslash starts one).
_JSON_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|.)")


def _json_unsafe_escape(text: str) -> ConfigError | None:
    """A NUL or half a surrogate pair written as a \\u escape in valid JSON text (a raw NUL
    or control character is already a JSON syntax error): refused with its line."""
    high: int | None = None
    previous_end = -1
    for match in _JSON_ESCAPE.finditer(text):
        point = int(match[1], 16) if match[1] else -1
        if high is not None:
            if 0xDC00 <= point <= 0xDFFF and match.start() == previous_end:
                high = None
                previous_end = match.end()
                continue
            break
        if point == 0:
            return ConfigError(
                "config-nul", "config.json writes a NUL character", line_of(text, match.start())
            )
        if 0xD800 <= point <= 0xDBFF:
            high = match.start()
        elif 0xDC00 <= point <= 0xDFFF:
            high = match.start()
            break
        previous_end = match.end()
    if high is not None:
        message = "config.json writes half a surrogate pair"
        return ConfigError("config-lone-surrogate", message, line_of(text, high))
    return None


def parse_config(data: bytes) -> Config:
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError("config-too-large", f"config.json is over {MAX_CONFIG_BYTES} bytes")
    try:
        text = data.decode("utf-8")
        raw = json.loads(text, object_pairs_hook=_unique_keys)
    except UnicodeDecodeError as exc:
        raise ConfigError("config-not-utf8", "config.json is not valid UTF-8") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError("config-invalid-json", f"config.json: {exc.msg}", exc.lineno) from exc
    except RecursionError as exc:
        raise ConfigError("config-invalid-json", "config.json nests too deeply") from exc
    unsafe = _json_unsafe_escape(text) if "\\" in text else None
    if unsafe is not None:
        raise unsafe
    if not isinstance(raw, dict):
        raise ConfigError("config-not-object", "config.json must hold a JSON object", 1)
    version = raw.get("version")
    if version != 1 or isinstance(version, bool):
        raise ConfigError(
            "config-version",
            f"config.json version must be 1 (MemoryRail 1), not {json.dumps(version)}",
        )
    review = raw.get("review", "off")
    if review not in REVIEW_MODES:
        raise ConfigError(
            "config-review", f"config.json review must be 'off' or 'agents', not {review!r}"
        )
    return Config(version=1, review=review, raw=raw)


def load_config(root: Path) -> Config:
    path = root / CONFIG_PATH
    if not path.is_file():
        raise ConfigError("config-missing", f"{CONFIG_PATH} does not exist")
    if not (_inside(path.parent, root) and _inside(path, root)):
        raise ConfigError("config-missing", f"{CONFIG_PATH} is a symlink, not a regular file")
    return parse_config(read_limited(path, MAX_CONFIG_BYTES))


def _text(value: Any) -> str | None:
    """Any YAML scalar read as text (the spec accepts any scalar); None for null or collections."""
    if value is None or isinstance(value, list | dict):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _text_list(value: Any) -> list[str] | None:
    if value is None:
        return []
    if isinstance(value, list):
        items = [_text(item) for item in value]
        return None if any(item is None for item in items) else items  # type: ignore[return-value]
    single = _text(value)
    return None if single is None else [single]


def check_link(link: str) -> str | None:
    """A problem code for a link that is not a safe repo-relative POSIX path, else None."""
    if not link or "\\" in link or "\x00" in link:
        return "link-invalid"
    if link.startswith("/") or re.match(r"^[A-Za-z]:", link):
        return "link-outside-repo"
    normalized = posixpath.normpath(link)
    if normalized == ".." or normalized.startswith("../"):
        return "link-outside-repo"
    if normalized == ".git" or normalized.startswith(".git/"):
        return "link-invalid"
    return None


# A front matter line as our writer writes it: a plain or JSON-quoted key, then a JSON value.
_WRITTEN_LINE = re.compile(r'([A-Za-z_][A-Za-z0-9_\-]*|"(?:[^"\\]|\\.)*"): (.*)')


def _reject_constant(name: str) -> Any:
    raise ValueError(name)


def read_written(data: bytes, *, known_meta: dict[str, Any]) -> Document | None:
    """The document of a file as our writer writes it (`---`, one `key: <JSON>` line per
    field, `---`, the body) whose front matter equals `known_meta`: what the strict reader
    read from these very bytes before (the index stores it). Reading it back as JSON lines
    keeps its order at a fraction of a YAML parse; any other shape, or any difference from
    `known_meta`, gives None and the caller parses strictly."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text.startswith("---\n") or len(data) > MAX_MEMORY_BYTES:
        return None
    end = text.find("\n---\n", 3)
    if end < 0:
        return None
    meta: dict[str, Any] = {}
    key_lines: dict[str, int] = {}
    header = text[4:end]
    for number, line in enumerate(header.split("\n") if header else [], start=2):
        match = _WRITTEN_LINE.fullmatch(line)
        if match is None:
            return None
        try:
            key = json.loads(match[1]) if match[1].startswith('"') else match[1]
            value = json.loads(match[2], parse_constant=_reject_constant)
        except ValueError:
            return None
        if key in meta:
            return None
        meta[key] = value
        key_lines[key] = number
    if meta != known_meta:
        return None
    body_line = header.count("\n") + 4 if header else 3
    return Document(meta=meta, body=text[end + 5 :], body_line=body_line, key_lines=key_lines)


def parse_memory(
    data: bytes | str, *, path: str, known_meta: dict[str, Any] | None = None
) -> tuple[Memory | None, list[Problem]]:
    """Read one memory file. Returns the memory (None if unusable) and every problem found.

    `known_meta`: the front matter the index read from these very bytes (see read_written)."""
    document = None
    if known_meta is not None and isinstance(data, bytes):
        document = read_written(data, known_meta=known_meta)
    if document is None:
        try:
            document = parse(data, max_bytes=MAX_MEMORY_BYTES)
        except FrontMatterError as exc:
            return None, [Problem(exc.code, path, exc.line, exc.message)]
    meta, lines = document.meta, document.key_lines
    problems: list[Problem] = []

    def add(code: str, key: str | None, message: str, level: str = ERROR) -> None:
        problems.append(Problem(code, path, lines.get(key, 2) if key else 2, message, level))

    values: dict[str, Any] = {}
    for key in REQUIRED_FIELDS:
        if key not in meta or meta[key] is None or meta[key] == "":
            add("field-missing", key if key in meta else None, f"required field '{key}' is missing")
    for key in TEXT_FIELDS:
        if key in meta and meta[key] is not None:
            text = _text(meta[key])
            if text is None:
                add("field-type", key, f"'{key}' must be a scalar")
            else:
                values[key] = text
    if "type" in values and values["type"] not in TYPE_PREFIXES:
        add("type-invalid", "type", f"type must be one of {', '.join(TYPE_PREFIXES)}")
    if "status" in values and values["status"] not in STATUSES:
        add("status-invalid", "status", f"status must be one of {', '.join(STATUSES)}")
    if "title" in values and ("\n" in values["title"] or "\r" in values["title"]):
        add("title-multiline", "title", "title must be one line")
    stem = posixpath.basename(path)
    stem = stem[:-3] if stem.endswith(".md") else stem
    if "id" in values and values["id"] != stem:
        add("id-mismatch", "id", f"id '{values['id']}' does not equal the file name '{stem}'")
    for key in ("created", "updated"):
        if key in meta and meta[key] is not None:
            text = _text(meta[key])
            if text is None or parse_timestamp(text) is None:
                add("timestamp-invalid", key, f"'{key}' must be an ISO 8601 timestamp")
            else:
                values[key] = text
    lists: dict[str, list[str]] = {}
    for key in ("tags", "links"):
        items = _text_list(meta.get(key))
        if items is None:
            add("field-type", key, f"'{key}' must be a scalar or a sequence of scalars")
        else:
            lists[key] = items
    for link in lists.get("links", []):
        # A link escaping the repository is an error of the memory's staleness report
        # (check_staleness), not of the file: the memory stays listed and says why it is suspect.
        code = check_link(link)
        if code is not None and code != "link-outside-repo":
            add(code, "links", f"link '{link}' is not a repo-relative POSIX path")
    pinned = meta.get("pinned", False)
    if isinstance(pinned, str) and pinned.lower() in ("true", "false"):
        pinned = pinned.lower() == "true"
    if pinned is None:
        pinned = False
    if not isinstance(pinned, bool):
        add("field-type", "pinned", "'pinned' must be true or false")
        pinned = False
    if any(p.level == ERROR for p in problems):
        return None, problems
    memory = Memory(
        id=values["id"],
        type=values["type"],
        title=values["title"],
        status=values["status"],
        created=values["created"],
        updated=values["updated"],
        path=path,
        meta=meta,
        body=document.body,
        body_line=document.body_line,
        tags=tuple(lists.get("tags", [])),
        links=tuple(lists.get("links", [])),
        pinned=pinned,
        supersedes=values.get("supersedes"),
        superseded_by=values.get("superseded_by"),
    )
    return memory, problems


def git_blob_sha(data: bytes) -> str:
    """The id git gives a file with these bytes (no filters)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def read_project(
    root: Path, *, known: Mapping[str, tuple[str, dict[str, Any]]] | None = None
) -> Project:
    """Read config and every memory file under `root`; never raises for content problems.

    `known`: path -> (git blob, front matter) of files read strictly before (an index): a file
    with the same blob is read back through `read_written`, not parsed as YAML again."""
    try:
        config: Config | None = load_config(root)
    except ConfigError as exc:
        return Project(root=root, config=None, problems=[exc.as_problem()])
    project = Project(root=root, config=config)
    directory = root / MEMORIES_DIR
    files = sorted(directory.glob("*.md")) if directory.is_dir() else []
    if files and not _inside(directory, root):
        message = "the memories folder is a symlink; nothing in it is read"
        project.problems.append(Problem("file-not-regular", MEMORIES_DIR, None, message))
        files = []
    for file in files:
        rel = f"{MEMORIES_DIR}/{file.name}"
        if _SURROGATE.search(file.name):  # bytes that are not UTF-8, decoded by surrogateescape
            name = os.fsencode(file.name).decode("utf-8", "backslashreplace")
            message = "the file name is not valid UTF-8; nothing in it is read"
            project.problems.append(Problem("not-utf8", f"{MEMORIES_DIR}/{name}", None, message))
            continue
        if file.is_symlink() or not file.is_file():
            project.problems.append(Problem("file-not-regular", rel, None, "not a regular file"))
            continue
        data = read_limited(file, MAX_MEMORY_BYTES)
        blob, known_meta = (known or {}).get(rel, ("", None))
        if known_meta is not None and git_blob_sha(data) != blob:
            known_meta = None
        memory, problems = parse_memory(data, path=rel, known_meta=known_meta)
        project.problems.extend(problems)
        if memory is not None:
            project.memories.append(memory)
    project.problems.extend(check_references(project.memories))
    return project


def check_references(memories: Iterable[Memory]) -> list[Problem]:
    memories = list(memories)
    by_id = {m.id: m for m in memories}
    problems = []
    for memory in memories:
        if memory.supersedes and memory.supersedes not in by_id:
            problems.append(
                Problem(
                    "supersedes-unknown",
                    memory.path,
                    None,
                    f"supersedes '{memory.supersedes}', which does not exist",
                    WARNING,
                )
            )
    return problems


class RefError(LookupError):
    def __init__(self, code: str, message: str, ids: list[str] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.ids = ids or []


class RefIndex:
    """Resolve an id or a short ref; two memories sharing a ref are ambiguous, never guessed."""

    def __init__(self, memories: Iterable[Memory]) -> None:
        self.by_id: dict[str, Memory] = {}
        self.by_ref: dict[str, list[Memory]] = {}
        for memory in memories:
            self.by_id[memory.id] = memory
            self.by_ref.setdefault(memory.ref, []).append(memory)

    def resolve(self, key: str) -> Memory:
        if key in self.by_id:
            return self.by_id[key]
        if is_ref(key):
            found = self.by_ref.get(key, [])
            if len(found) == 1:
                return found[0]
            if len(found) > 1:
                ids = sorted(m.id for m in found)
                raise RefError("ref-ambiguous", f"{key} is shared by {', '.join(ids)}", ids)
        raise RefError("not-found", f"no memory with id or ref {key!r}")

    def ambiguous(self) -> dict[str, list[str]]:
        return {
            ref: sorted(m.id for m in found)
            for ref, found in sorted(self.by_ref.items())
            if len(found) > 1
        }
