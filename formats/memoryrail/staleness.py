"""Staleness of active memories' links (spec: Staleness)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from formats.memoryrail.core import ERROR, WARNING, Memory, check_link, parse_timestamp


@dataclass(frozen=True)
class Stale:
    code: str  # stale-link | maybe-stale | link-outside-repo
    id: str
    link: str
    level: str

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "id": self.id, "link": self.link}


def _inside(root: Path, link: str) -> bool:
    try:
        (root / link).resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def check_staleness(
    memories: Iterable[Memory],
    *,
    root: Path,
    last_commit_time: Callable[[str], datetime | None],
) -> list[Stale]:
    """`last_commit_time(link)` gives the time of the last commit touching a path (or None)."""
    found: list[Stale] = []
    for memory in memories:
        if memory.status != "active":
            continue
        updated = parse_timestamp(memory.updated)
        for link in memory.links:
            if check_link(link) == "link-outside-repo" or not _inside(root, link):
                found.append(Stale("link-outside-repo", memory.id, link, ERROR))
                continue
            if not (root / link).exists():
                found.append(Stale("stale-link", memory.id, link, WARNING))
                continue
            changed = last_commit_time(link)
            if changed is not None and updated is not None and changed > updated:
                found.append(Stale("maybe-stale", memory.id, link, WARNING))
    return found
