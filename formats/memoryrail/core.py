"""MemoryRail 1: read a project's memory files, validate them, check their references.

No Django import. Every problem carries a stable code, the repo-relative path and a line.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import posixpath
import re
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from formats.frontmatter import Document, FrontMatterError, parse
from formats.memoryrail.config import ConfigError, _inside, load_config, read_open
from formats.memoryrail.fields import _text, _text_list, check_link, parse_timestamp
from formats.memoryrail.model import (
    ERROR,
    MAX_MEMORY_BYTES,
    MEMORIES_DIR,
    REQUIRED_FIELDS,
    STATUSES,
    TEXT_FIELDS,
    TYPE_PREFIXES,
    WARNING,
    Config,
    Memory,
    Problem,
    Project,
)

_SURROGATE = re.compile("[\ud800-\udfff]")


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
    entries = _memory_entries(directory)
    if entries and not _inside(directory, root):
        message = "the memories folder is a symlink; nothing in it is read"
        project.problems.append(Problem("file-not-regular", MEMORIES_DIR, None, message))
        entries = []
    folder = _open_folder(directory) if entries else None
    try:
        for name, regular in entries:
            if not_utf8_name(project, name):
                continue
            data = _read_regular(folder, name) if regular and folder is not None else None
            add_memory_file(project, f"{MEMORIES_DIR}/{name}", data, known)
    finally:
        if folder is not None:
            os.close(folder)
    project.problems.extend(check_references(project.memories))
    return project


def not_utf8_name(project: Project, name: str) -> bool:
    """Report a file name that is not UTF-8 (bytes decoded by surrogateescape): nothing in it
    is read."""
    if not _SURROGATE.search(name):
        return False
    shown = os.fsencode(name).decode("utf-8", "backslashreplace")
    message = "the file name is not valid UTF-8; nothing in it is read"
    project.problems.append(Problem("not-utf8", f"{MEMORIES_DIR}/{shown}", None, message))
    return True


def add_memory_file(
    project: Project,
    rel: str,
    data: bytes | None,
    known: Mapping[str, tuple[str, dict[str, Any]]] | None,
) -> None:
    """Parse one memory file's bytes (None: not a regular file) into `project`."""
    if data is None:
        project.problems.append(Problem("file-not-regular", rel, None, "not a regular file"))
        return
    blob, known_meta = (known or {}).get(rel, ("", None))
    if known_meta is not None and git_blob_sha(data) != blob:
        known_meta = None
    memory, problems = parse_memory(data, path=rel, known_meta=known_meta)
    if problems:
        project.problems.extend(problems)
    if memory is not None:
        project.memories.append(memory)
        project.data[rel] = data


def _memory_entries(directory: Path) -> list[tuple[str, bool]]:
    """(name, regular) of the folder's `*.md` entries by name, as `glob("*.md")` finds them
    (hidden names too, case-sensitive), from one directory listing: `regular` comes from the
    entry's type (no symlink followed), where a glob and an lstat per file cost a system call
    and two path objects each."""
    try:
        with os.scandir(directory) as listing:
            found = [
                (entry.name, entry.is_file(follow_symlinks=False))
                for entry in listing
                if entry.name.endswith(".md")
            ]
    except (OSError, ValueError):  # no folder (or not one): nothing to read, as glob() finds
        return []
    found.sort()
    return found


def _open_folder(directory: Path) -> int | None:
    try:
        return os.open(directory, _FOLDER_FLAGS)
    except OSError:
        return None


_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# no symlink is followed, and a special file swapped in since the listing cannot block the open
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NOT_REGULAR = (errno.ELOOP, errno.ENXIO, errno.ENOENT, errno.ENOTDIR, errno.EISDIR)


def _read_regular(folder: int, name: str) -> bytes | None:
    """At most MAX_MEMORY_BYTES + 1 bytes of the regular file `name` in the open `folder`
    (read_limited's reads); None when it is not a regular file (anymore)."""
    try:
        handle = os.open(name, _FILE_FLAGS, dir_fd=folder)
    except OSError as exc:
        if exc.errno in _NOT_REGULAR:
            return None  # a symlink, a device without a reader, or gone since the listing
        raise
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):
            return None
        return read_open(handle, info.st_size, MAX_MEMORY_BYTES)
    finally:
        os.close(handle)


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
