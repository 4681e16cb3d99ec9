"""Staleness of memories' links (spec: Staleness).

`stale-link` and `maybe-stale` are checked for active memories, as the spec says; the review
index asks for proposals too (`statuses`), so a reviewer sees before approving that a proposal
links a path that is gone or changed. `link-outside-repo` is reported for every memory whatever
its status: the spec's `links` field MUST NOT escape the repository, and the memory stays
listed with this error instead of vanishing.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from formats.memoryrail.fields import check_link, parse_timestamp
from formats.memoryrail.model import ERROR, MEMORIES_DIR, WARNING, Memory

SPEC_STATUSES = ("active",)
# What the review index checks: what recall serves, and what waits to be approved.
REVIEW_STATUSES = ("active", "proposed")
LINK_OUTSIDE_REPO = "link-outside-repo"


@dataclass(frozen=True)
class Stale:
    code: str  # stale-link | maybe-stale | link-outside-repo
    id: str
    link: str
    level: str

    def as_dict(self) -> dict[str, str]:
        # "memory" names the memory; "id" is the same value, kept for existing readers
        return {
            "code": self.code,
            "memory": self.id,
            "id": self.id,
            "link": self.link,
            "level": self.level,
        }


def _resolves_outside(root: Path, link: str, resolved_root: Path | None = None) -> bool:
    try:
        target = (root / link).resolve()
    except (RuntimeError, OSError):  # a symlink loop (RuntimeError before Python 3.13)
        return False  # it resolves nowhere: a stale link, not an escape
    return not target.is_relative_to(resolved_root or root.resolve())


def link_escapes(root: Path, link: str, resolved_root: Path | None = None) -> bool:
    """The link is absolute, climbs above the root, or resolves outside it through a symlink."""
    return check_link(link) == LINK_OUTSIDE_REPO or _resolves_outside(root, link, resolved_root)


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (RuntimeError, OSError):
        return False


def check_staleness(
    memories: Iterable[Memory],
    *,
    root: Path,
    last_commit_times: Callable[[list[str]], dict[str, datetime | None]],
    statuses: tuple[str, ...] = SPEC_STATUSES,
    memory_entries: Mapping[str, str] | None = None,
    memory_symlinks: Mapping[str, str] | None = None,
) -> list[Stale]:
    """`last_commit_times(links)` gives the time of the last commit touching each path (or
    None), asked once, for the links of checked memories that exist, in the order first met;
    `statuses`: whose links are checked for `stale-link` and `maybe-stale`; `memory_entries`:
    the memories folder's tree entries (path -> git mode, as `read_entries` reads them) when
    its files are not on disk: a link into the folder is judged against them, through the
    folder's symlinks (`memory_symlinks`: path -> target) as a checkout would resolve them."""
    in_tree = (
        _TreePaths(memory_entries, memory_symlinks or {}) if memory_entries is not None else None
    )
    found: list[Stale | tuple[str, str, datetime | None]] = []
    # what each distinct link is, found once: memories share links (6,000 memories linking
    # 1,000 files resolved 12,000 paths, a third of a re-index)
    resolved_root = root.resolve()
    escapes: dict[str, bool] = {}
    exists: dict[str, bool] = {}
    for memory in memories:
        if not memory.links:
            continue  # nearly every memory: nothing to check, not even its timestamp
        checked = memory.status in statuses
        updated = parse_timestamp(memory.updated)
        for link in memory.links:
            if check_link(link) not in (None, LINK_OUTSIDE_REPO):
                continue  # an invalid link is a problem of the file, reported by the parser
            if link not in escapes:
                if in_tree is not None and in_tree.covers(link):
                    # through a symlink of the folder: where it points, as a checkout resolves it
                    target = in_tree.through_symlink(link) or link
                    if in_tree.covers(target):
                        escapes[link] = False  # the folder is no symlink (read_entries checked)
                        exists[link] = in_tree.has(target)
                    else:
                        escapes[link] = link_escapes(root, target, resolved_root)
                        exists[link] = _exists(root / target)
                else:
                    escapes[link] = link_escapes(root, link, resolved_root)
            if escapes[link]:
                found.append(Stale(LINK_OUTSIDE_REPO, memory.id, link, ERROR))
                continue
            if not checked:
                continue
            if link not in exists:
                exists[link] = _exists(root / link)
            if not exists[link]:
                found.append(Stale("stale-link", memory.id, link, WARNING))
                continue
            found.append((memory.id, link, updated))  # decided once the times are known
    links = list(dict.fromkeys(entry[1] for entry in found if type(entry) is tuple))
    times = last_commit_times(links)
    stale: list[Stale] = []
    for entry in found:
        if isinstance(entry, Stale):
            stale.append(entry)
            continue
        memory_id, link, updated = entry
        changed = times.get(link)
        if changed is not None and updated is not None and changed > updated:
            stale.append(Stale("maybe-stale", memory_id, link, WARNING))
    return stale


class _TreePaths:
    """The paths of the memories folder's entries, and the folders they imply (found on the
    first link that is not an entry)."""

    def __init__(self, entries: Mapping[str, str], symlinks: Mapping[str, str]) -> None:
        self.entries = entries
        self.symlinks = symlinks
        self.folders: set[str] | None = None

    def through_symlink(self, link: str) -> str | None:
        """The link with the first symlink of the folder on its way replaced by its target
        (one level, lexically, as git stored it); None when none is on its way."""
        if not self.symlinks or not self.covers(link):
            return None
        parts = posixpath.normpath(link).split("/")
        for end in range(2, len(parts) + 1):
            prefix = "/".join(parts[:end])
            target = self.symlinks.get(prefix)
            if target is not None:
                joined = posixpath.join(posixpath.dirname(prefix), target, *parts[end:])
                return posixpath.normpath(joined)
        return None

    @staticmethod
    def covers(link: str) -> bool:
        normalized = posixpath.normpath(link)
        return normalized == MEMORIES_DIR or normalized.startswith(f"{MEMORIES_DIR}/")

    def has(self, link: str) -> bool:
        normalized = posixpath.normpath(link)
        if normalized in self.entries:
            return True
        if self.folders is None:
            self.folders = set()
            for path in self.entries:
                while "/" in path:
                    path = path.rpartition("/")[0]
                    self.folders.add(path)
        return normalized in self.folders
