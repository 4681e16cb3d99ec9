"""MemoryRail 1: the spec's constants, the result types (problems, memories, projects) and
short refs. No Django import."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

CONFIG_PATH = ".memoryrail/config.json"
MEMORIES_DIR = ".memoryrail/memories"
MAX_MEMORY_BYTES = 256 * 1024
# git's modes of a tree entry, as a commit read from its objects gives them (`read_entries`)
REGULAR_MODES = frozenset({"100644", "100755"})  # a file, or an executable one
SYMLINK_MODE = "120000"

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
REQUIRED_FIELDS = ("id", "type", "title", "status", "created", "updated")
TEXT_FIELDS = ("id", "type", "title", "status", "supersedes", "superseded_by")
REF_RE = re.compile(r"^(DEC|CON|GOT|ATT|THR|SES)-([0-9a-f]{4})$")

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

    @cached_property
    def ref(self) -> str:  # read by the ref index and each index row: hashed once
        return short_ref(self.id, self.type)


@dataclass
class Project:
    root: Path
    config: Config | None
    memories: list[Memory] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    # path -> the bytes each memory was read from, so a caller scanning the files (the index's
    # secret scan) does not read them a second time
    data: dict[str, bytes] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not any(p.level == ERROR for p in self.problems)


def short_ref(memory_id: str, memory_type: str) -> str:
    digest = hashlib.sha1(memory_id.encode("utf-8"), usedforsecurity=False).hexdigest()
    return f"{TYPE_PREFIXES[memory_type]}-{digest[:4]}"


def is_ref(text: str) -> bool:
    return REF_RE.match(text) is not None


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
