"""What the brain mirrors: the wanted item and how it becomes a chunk (`parse_wanted`), the
reconcile's tally and the provenance key.

Shared by `bundles.mirror` (the desired sets) and `bundles.reconcile` (the writers), and by the
importer and export, which read `PROVENANCE_KEY`. See docs/brain.md.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from formats import memoryai as protocol

logger = logging.getLogger(__name__)

PROVENANCE_KEY = "memoryadmin"


class Mirrored(NamedTuple):
    """What one source record or repository memory should look like as a chunk (a plain
    tuple: a refresh builds one per record)."""

    ref: str
    content: str
    memory_type: str
    tags: list[str]
    zone: str
    is_pinned: bool
    provenance: dict[str, Any]
    expires_at: datetime | None = None


@dataclass
class MirrorResult:
    chunks_created: int = 0
    chunks_updated: int = 0
    origins_created: int = 0
    activated: int = 0
    deactivated: int = 0
    unchanged: int = 0
    skipped: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(
            self.chunks_created
            or self.chunks_updated
            or self.origins_created
            or self.activated
            or self.deactivated
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "chunks_created": self.chunks_created,
            "chunks_updated": self.chunks_updated,
            "origins_created": self.origins_created,
            "activated": self.activated,
            "deactivated": self.deactivated,
            "unchanged": self.unchanged,
            "skipped": self.skipped[:20],
        }


@dataclass(frozen=True, slots=True)
class Wanted:
    """A wanted item with what the chunk format makes of it: its hash, metadata and DNA flag."""

    item: Mirrored
    content_hash: str
    metadata: dict[str, Any]
    is_dna: bool


def _plain_texts(texts: list[str]) -> bool:
    """What `check_text` accepts of every one of `texts` (no NUL, no lone surrogate), tested
    as one joined text: UTF-8 refuses any surrogate code point, paired or not, so joining
    cannot hide one, and the newline between them is neither."""
    joined = "\n".join(texts)
    if "\x00" in joined:
        return False
    if joined.isascii():
        return True
    try:
        joined.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _plain_provenance(provenance: Any, texts: list[str]) -> bool:
    """A flat provenance of plain values (what the mirror builds) passes without a walk, its
    keys and strings added to `texts` for one check; any other value gets the format's full
    check, and any other shape refuses."""
    if type(provenance) is not dict:
        return False
    for key, value in provenance.items():
        if type(key) is not str:
            return False
        texts.append(key)
        kind = type(value)
        if kind is str:
            texts.append(value)
        elif kind not in (int, bool, type(None)):
            try:
                protocol.check_plain_json(value, "provenance")
            except protocol.BundleError:
                return False
    return True


def _plain_digest(item: Mirrored) -> str | None:
    """The content hash of an item `validate_chunk` would accept as it is, or None when it
    might not (that item then goes through `validate_chunk`, for its exact error).

    The texts come from readers that validated them already (OpenMemories, MemoryRail) and
    the other fields from the crosswalk's tables: only the chunk format's own limits are
    checked here, not every string again."""
    content, tags, memory_type = item.content, item.tags, item.memory_type
    if (
        type(content) is not str
        or len(content) > protocol.MAX_CONTENT_CHARS
        or "\x00" in content
        or type(memory_type) is not str
        or not memory_type
        or len(memory_type) > 64
        or not protocol.is_known_type(memory_type)
        or item.zone not in protocol.ZONES
        or type(item.is_pinned) is not bool
        or type(tags) is not list
        or len(tags) > protocol.MAX_TAGS
    ):
        return None
    for tag in tags:
        if type(tag) is not str or len(tag) > protocol.MAX_NAME_CHARS:
            return None
    texts = list(tags)
    if not _plain_provenance(item.provenance, texts) or not _plain_texts(texts):
        return None
    try:
        return hashlib.sha256(content.encode("utf-8")).hexdigest()
    except UnicodeEncodeError:  # a lone surrogate: validate_chunk says which
        return None


def parse_wanted(group: str, wanted: Iterable[Mirrored], result: MirrorResult) -> dict[str, Wanted]:
    """ref -> the wanted item as a chunk; items the format refuses are skipped."""
    parsed: dict[str, Wanted] = {}
    for item in wanted:
        digest = _plain_digest(item)
        metadata = {PROVENANCE_KEY: item.provenance}
        if digest is None:
            try:
                record = protocol.validate_chunk(
                    {
                        "content": item.content,
                        "memory_type": item.memory_type,
                        "tags": item.tags,
                        "zone": item.zone,
                        "is_pinned": item.is_pinned,
                        "metadata": metadata,
                    },
                    embedding_dim=0,
                    path=item.ref,
                )
            except protocol.BundleError as exc:
                result.skipped.append(f"{item.ref}: {exc.code}")
                logger.warning("mirror %s skipped %s: %s", group, item.ref, exc)
                continue
            digest = record.content_hash
        is_dna = protocol.is_dna(item.memory_type, item.zone, item.is_pinned)
        parsed[item.ref] = Wanted(item, digest, metadata, is_dna)
    return parsed
