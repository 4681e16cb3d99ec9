"""What the index asks of a repository's history, at a cost that does not grow with it.

Two answers are functions of the commit graph at the indexed head:

- `added_by`: for each memory file, the newest commit that added it (its author is the
  proposer): the first commit naming the path as added in `git log --diff-filter=A -- folder`.
- `link_times`: for each linked path, the committer time of the first commit
  `git log -- path` shows (staleness: a memory older than the last change it links).

Walked as before, both grow with the history: the first reads every commit of the folder,
the second ran one `git log` per link, each back to that path's last change (to the first
commit for a file nobody touched since). A head's history never changes, so its answers are
kept in the working copy (`.git/memoryadmin-history.json`, with the head they answer for) and
the next index starts from them when the old head is an ancestor of the new one: only the new
commits are walked. That is the whole answer exactly when git's walk from the new head (its
order, its merge simplification) visits only new commits before the old head and has nothing
else waiting when it pops it, for from there on it is the walk from the old head; this is
checked, for the adds and for every link. Otherwise (a merge reaching older history by
another side, clocks skewed against the graph, a link spelled unusually) git answers as
before. Without a usable kept answer (a first index, a force-push) the whole history is read
once: one `log` for the adds, one `log` (and a `diff-tree` of the merges) for all links.
"""

from __future__ import annotations

import json
import logging
import os
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import orjson

from reviews.git import GitError, WorkingCopy

logger = logging.getLogger(__name__)

CACHE_NAME = "memoryadmin-history.json"
CACHE_VERSION = 1
PER_LINK_WALKS_MAX = 8  # more links without a kept answer: one walk of the history for all
ADDED_FORMAT = "--format=%x1e%H%x1f%P%x1f%aI%x1f%ae%x1f%an"  # untrusted name and email last
TIMES_FORMAT = "--format=%x1e%H%x1f%P%x1f%cI"
_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")

Added = tuple[str, str, str, str]  # commit, author name, author email, author date
Entries = list[tuple[str, str]]  # (status, path) of one diff


def _records(output: str) -> Iterator[tuple[list[str], Entries]]:
    """The commits of a `log -z --name-status` whose format starts with \\x1e. Every path
    follows a status token, so a path can never pass for a commit (or a status)."""
    tokens = iter(output.split("\0"))
    header: list[str] | None = None
    entries: Entries = []
    for token in tokens:
        token = token.removeprefix("\n")  # between a commit and its first status
        if token.startswith("\x1e"):
            if header is not None:
                yield header, entries
            header, entries = token[1:].split("\x1f", 4), []
        elif token:
            path = next(tokens, "")
            if token[0] in "RC":  # a rename or copy names the source first
                path = next(tokens, "")
            entries.append((token, path))
    if header is not None:
        yield header, entries


def _diffs(output: str) -> Iterator[set[str]]:
    """The paths of each pair a `diff-tree --stdin --always -z --name-status` compared."""
    tokens = iter(output.split("\0"))
    paths: set[str] | None = None
    for token in tokens:
        if _SHA.fullmatch(token):
            if paths is not None:
                yield paths
            paths = set()
        elif token and paths is not None:
            paths.add(next(tokens, ""))
    if paths is not None:
        yield paths


def _note_added(result: dict[str, Added], header: list[str], entries: Entries) -> None:
    """The paths a commit added that no newer commit of the walk added (the first one wins)."""
    sha, _, date, email, name = header
    for status, path in entries:
        if status == "A" and path not in result:
            result[path] = (sha, name, email, date)


def _spelling(link: str) -> tuple[str, bool] | None:
    """(path, folder only) of a link as git's literal pathspec matches it: the path itself and
    everything below it, or only below with a trailing "/"; None for a spelling git would
    normalise first (`./x`, `a//b`, `a/../b`, `.`), which is left to git."""
    path = link.removesuffix("/")
    if not path or path == "." or posixpath.normpath(path) != path:
        return None
    return path, link.endswith("/")


def _touched(paths: set[str]) -> tuple[frozenset[str], frozenset[str]]:
    """(the paths and every folder above them, the folders alone) of one diff's paths."""
    folders = {path[:at] for path in paths for at, ch in enumerate(path) if ch == "/"}
    return frozenset(paths | folders), frozenset(folders)


@dataclass
class _Commit:
    parents: list[str]
    time: str  # committer time, as %cI prints it
    changed: list[set[str]] = field(default_factory=lambda: [set()])  # against each parent


class History:
    """The history answers for one head of one working copy (read with its lock held)."""

    def __init__(self, copy: WorkingCopy, head: str, *, folder: str) -> None:
        self.copy = copy
        self.head = head
        self.folder = folder
        self.added: dict[str, Added] | None = None
        self.times: dict[str, str | None] = {}
        self.base: str | None = None  # the head the kept answers are for, when usable here
        self._added: dict[str, Added] = {}
        self._times: dict[str, str | None] = {}
        self._load()

    @property
    def _cache(self) -> Path:
        return self.copy.path / ".git" / CACHE_NAME

    def _load(self) -> None:
        try:
            data = json.loads(self._cache.read_bytes())
            base = data["head"]
            if data["version"] != CACHE_VERSION or data["folder"] != self.folder:
                return
            added = {str(path): tuple(map(str, answer)) for path, answer in data["added"].items()}
            times = {str(link): (t if t is None else str(t)) for link, t in data["times"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return  # none kept, or unreadable: walk in full
        if not isinstance(base, str) or not _SHA.fullmatch(base):
            return
        if any(len(answer) != 4 for answer in added.values()):
            return
        if base != self.head and not self._descends_from(base):
            return  # a force-push or a reset: the kept answers are for another history
        self.base, self._added, self._times = base, added, times  # type: ignore[assignment]

    def _descends_from(self, base: str) -> bool:
        try:
            self.copy.history("merge-base", "--is-ancestor", base, self.head)
        except GitError:
            return False  # not an ancestor (exit 1), or no such commit any more
        return True

    def save(self) -> None:
        """Keep this head's answers for the next index (the copy's lock must be held)."""
        if self.added is None or not self.copy.lock_held:
            return
        if self.base == self.head and self.times == self._times:
            return  # the same head asked the same links: what is kept is what it would write
        data = {
            "version": CACHE_VERSION,
            "head": self.head,
            "folder": self.folder,
            "added": self.added,
            "times": self.times,
        }
        scratch = self._cache.with_name(CACHE_NAME + ".tmp")
        try:
            # orjson: 0.5 ms for 5,000 answers, the standard library's 8 ms; which still writes
            # what orjson refuses (a path git gave as bytes that are not UTF-8: surrogates)
            text = orjson.dumps(data)
        except TypeError:
            text = json.dumps(data).encode()
        try:
            scratch.write_bytes(text)
            os.replace(scratch, self._cache)
        except OSError as exc:  # only the next index's shortcut is lost, never this index
            logger.warning("history answers of %s not kept: %s", self.copy.lock_name, exc)

    # -- added_by ---------------------------------------------------------------------------

    def added_by(self) -> dict[str, Added]:
        """path -> (commit, author name, email, date) of the newest commit that added it."""
        if self.added is None:
            if self.base == self.head:
                self.added = dict(self._added)
            elif self.base is not None:
                self.added = self._added_since(self.base)
            if self.added is None:
                self.added = self._added_from(
                    self.copy.history(
                        "log",
                        "--diff-filter=A",
                        "--name-status",
                        "-z",
                        ADDED_FORMAT,
                        self.head,
                        paths=(self.folder,),
                    )
                )
        return self.added

    @staticmethod
    def _added_from(output: str) -> dict[str, Added]:
        result: dict[str, Added] = {}
        for header, entries in _records(output):
            _note_added(result, header, entries)
        return result

    def _added_since(self, base: str) -> dict[str, Added] | None:
        """The full walk's answer from the commits since `base`, or None when the walk from the
        head does not pass through `base` alone. `--sparse` lists every commit the walk visits
        (with its parents as simplified), not only those changing the folder; `-n` stops it."""
        new = set(self.copy.history("rev-list", self.head, f"^{base}").split())
        output = self.copy.history(
            "log",
            "--sparse",
            "--name-status",
            "-z",
            f"-n{len(new) + 1}",
            ADDED_FORMAT,
            self.head,
            paths=(self.folder,),
        )
        found: dict[str, Added] = {}
        waiting, seen = {self.head}, {self.head}
        for header, entries in _records(output):
            sha, parents = header[0], header[1].split()
            if sha == base:
                if waiting != {base}:
                    return None  # another line of the walk is still open
                return found | {p: a for p, a in self._added.items() if p not in found}
            if sha not in new:
                return None  # the walk reached older history before the old head
            waiting.discard(sha)
            for parent in parents:
                if parent not in seen:
                    seen.add(parent)
                    waiting.add(parent)
            _note_added(found, header, entries)
        return None

    # -- link_times -------------------------------------------------------------------------

    def link_times(self, links: list[str]) -> dict[str, datetime | None]:
        """link -> committer time of the first commit `git log -- link` shows (or None)."""
        if self.base == self.head:
            times = {link: self._times[link] for link in links if link in self._times}
        elif self.base is not None:
            kept = [link for link in links if link in self._times]
            times = self._times_walked(kept, since=self.base) if kept else {}
        else:
            times = {}
        new = [link for link in links if link not in times]
        if len(new) > PER_LINK_WALKS_MAX:  # one walk of the whole history for all of them
            times.update(self._times_walked(new, since=None))
        for link in links:
            if link not in times:  # spelled as git normalises it, or left undecided
                changed = self.copy.last_commit_time(link)
                times[link] = changed.isoformat() if changed else None
        self.times = times
        return {link: datetime.fromisoformat(t) if t else None for link, t in times.items()}

    def _times_walked(self, links: list[str], *, since: str | None) -> dict[str, str | None]:
        """The links' times from one `log` of the commits since `since` (all of them without
        it) and, for merges, one `diff-tree` against each parent. Every changed path is listed
        and matched here: git matching 1,000 pathspecs against each folder entry of every
        commit took 6.5 s of a 20,000-commit history, listing what changed 0.3 s."""
        links = [link for link in links if _spelling(link) is not None]
        if not links:
            return {}
        commits: dict[str, _Commit] = {}
        older = (f"^{since}",) if since else ()
        output = self.copy.history(
            "log", "--root", "--no-renames", "--name-status", "-z", TIMES_FORMAT, self.head, *older
        )  # fmt: skip
        for header, entries in _records(output):
            sha, parents, time = header
            commits[sha] = _Commit(parents.split(), time, [{path for _, path in entries}])
        pairs = [
            (commit, n, f"{sha} {parent}\n")
            for sha, commit in commits.items()
            if len(commit.parents) > 1
            for n, parent in enumerate(commit.parents)
        ]
        for commit, _, _ in pairs:  # log shows no diff of a merge: diff-tree, per parent
            commit.changed = [set() for _ in commit.parents]
        if pairs:
            output = self.copy.history(
                "diff-tree", "--stdin", "--always", "-r", "--no-renames", "--name-status", "-z",
                stdin="".join(line for _, _, line in pairs).encode(),
            )  # fmt: skip
            for (commit, n, _), paths in zip(pairs, _diffs(output), strict=True):
                commit.changed[n].update(paths)
        return self._walk(links, commits, since)

    def _walk(
        self, links: list[str], commits: dict[str, _Commit], since: str | None
    ) -> dict[str, str | None]:
        """git's walk for `log -1 -- link` from the head, for every link at once. For one path
        that walk is a single line of commits (revision.c): a merge is followed through the
        first parent the path is unchanged in, and when it is unchanged in none the merge is
        the commit shown; so the links walk together until a merge sends some of them down
        another parent. A walk reaching a commit not read (older than the old head) takes the
        kept answer when that commit is the old head; otherwise its links are left to git."""
        by_key: dict[tuple[str, bool], list[str]] = {}
        for link in links:
            by_key.setdefault(_spelling(link), []).append(link)  # type: ignore[arg-type]

        def hit(paths: set[str]) -> set[str]:
            touched, folders = _touched(paths)
            keys = [(k, False) for k in touched] + [(k, True) for k in folders]
            return {link for key in keys for link in by_key.get(key, ())}

        answers: dict[str, str | None] = {}
        walks = [(set(links), self.head)]
        while walks:
            group, sha = walks.pop()
            while group:
                commit = commits.get(sha)
                if commit is None:
                    if sha == since:
                        answers.update((link, self._times[link]) for link in group)
                    break
                hits = [hit(paths) & group for paths in commit.changed]
                shown = set(hits[0])  # changed against the first parent (or a root's files)
                for link in hits[0] if len(commit.parents) > 1 else ():
                    n = next((n for n, h in enumerate(hits) if link not in h), None)
                    if n is not None:  # unchanged against a later parent: follow that one
                        shown.discard(link)
                        walks.append(({link}, commit.parents[n]))
                answers.update((link, commit.time) for link in shown)
                group -= hits[0]
                if not commit.parents:
                    answers.update((link, None) for link in group)  # nothing ever touched them
                    break
                sha = commit.parents[0]
        return answers
