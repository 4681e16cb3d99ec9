"""OpenMemories 0.1: the spec's constants and the library's result types (records, manifests,
rejections, selections). No Django import."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

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


@dataclass(frozen=True, slots=True)
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
