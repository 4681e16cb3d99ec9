"""Bounded summaries of what a reader saw, for the audit log's read events (never content).

Chunk ids are stored as sorted, merged ranges: an export of 100k chunks imported together is a
handful of ranges, so "did this token see chunk N?" stays answerable for large exports. Past
MAX_RANGES the list is cut and `truncated` is set; `digest` (SHA-256 of the sorted ids) still
identifies the exact set.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

MAX_RANGES = 200
MAX_REFS = 200


def id_summary(ids: Iterable[int]) -> dict[str, Any]:
    ranges: list[list[int]] = []
    digest = hashlib.sha256()
    count = 0
    truncated = False
    for value in sorted(ids):
        count += 1
        digest.update(b"%d\n" % value)
        if ranges and value <= ranges[-1][1] + 1:
            ranges[-1][1] = max(ranges[-1][1], value)
        elif len(ranges) < MAX_RANGES:
            ranges.append([value, value])
        else:
            truncated = True
    return {"count": count, "ranges": ranges, "truncated": truncated, "digest": digest.hexdigest()}


def id_in_summary(summary: dict[str, Any], value: int) -> bool | None:
    """True/False when the summary can tell; None when it was truncated past `value`."""
    for low, high in summary.get("ranges", []):
        if low <= value <= high:
            return True
    if summary.get("truncated"):
        ranges = summary.get("ranges") or [[0, 0]]
        return False if value < ranges[-1][1] else None
    return False


def refs_summary(refs: Iterable[str]) -> dict[str, Any]:
    """Context reads: the first MAX_REFS refs (`source:<id>:<record>`, `repository:<id>:<memory>`)
    in the order served, the count, and a digest of all of them."""
    kept: list[str] = []
    digest = hashlib.sha256()
    count = 0
    for ref in refs:
        count += 1
        digest.update(ref.encode("utf-8") + b"\n")
        if len(kept) < MAX_REFS:
            kept.append(ref)
    return {
        "count": count,
        "refs": kept,
        "truncated": count > len(kept),
        "digest": digest.hexdigest(),
    }
