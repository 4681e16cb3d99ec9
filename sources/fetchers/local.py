"""The local-directory transport: a source is a folder under an allowed root, read without
ever following a symlink out of it.

A record file read straight from a checked folder leaves its stat behind (`stats`: path ->
`FileStat`, with its body's hash), and the raw check may take a file's stored hash instead of
reading it when an lstat shows the very same file unchanged (`raw_hash`), as git's index does.
"""

from __future__ import annotations

import functools
import os
import stat
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from formats import openmemories as om
from sources.fetchers import (
    MANIFEST_NAME,
    OUTSIDE_ROOTS,
    Fetched,
    FetchPolicy,
    SourceError,
    Validator,
    local_resolve,
)
from sources.fetchers.raw import (
    NO_STAT,
    FileStat,
    kept_answers,
    stat_of,
)

# a name the checked way resolves otherwise than as a file in its folder
_NOT_NAMES = ("", ".", "..")

# A file whose mtime or ctime is this close to (or after) the start of the read that stats it
# may still be written within the same timestamp tick, with no field of its stat moving
# ("racy git"): its stat is not kept, so the next check reads it again. Two seconds cover
# coarse filesystem clocks (FAT's 2 s mtime) and a file server's clock a little off ours.
STAT_MARGIN_NS = 2_000_000_000


class LocalFetcher:
    kind = "local"

    def __init__(self, identity: str, *, policy: FetchPolicy) -> None:
        self.identity = identity
        self.policy = policy
        self._root: Path | None = None
        # relative folder -> its resolved path inside the root, as a string (pathlib's joins
        # cost more than the lstat they lead to, 10,000 times per unchanged refresh)
        self._folders: dict[str, str] = {}
        # path -> the stat of the file read there, with its body's hash (NO_STAT unless it
        # is a regular file opened straight in a checked folder and last changed well before
        # this fetcher started: STAT_MARGIN_NS); a file whose stat was trusted is not in it
        self.stats: dict[str, FileStat] = {}
        self._settled = time.time_ns() - STAT_MARGIN_NS

    def root(self) -> Path:
        if self._root is None:
            path = Path(self.identity)
            if not path.is_absolute():
                raise SourceError("bad-location", "a local source must be an absolute path")
            roots = self.policy.local_roots
            # Checked before anything about the path is said, at every read: a symlink on the
            # way may have been changed to point elsewhere since the source was added.
            if roots is not None and local_resolve(self.identity, roots) is None:
                raise SourceError("outside-roots", OUTSIDE_ROOTS)
            try:
                resolved = path.resolve(strict=True)
            except (FileNotFoundError, RuntimeError, OSError) as exc:
                raise SourceError(
                    "not-found", f"the directory {self.identity} does not exist"
                ) from exc
            if not resolved.is_dir():
                raise SourceError("not-found", f"{self.identity} is not a directory")
            self._root = resolved
        return self._root

    def manifest_key(self) -> str:
        return MANIFEST_NAME

    def record_key(self, path: str) -> str:
        return path

    def _inside(self, relative: str) -> str:
        """Resolve each segment in turn so a symlinked directory or file cannot leave the root.

        Folders checked once are remembered for this read (10,000 records share a few), and a
        plain file in a checked folder needs one lstat, not a resolve of the whole path."""
        target = self._direct(relative)
        if target is not None:
            try:
                mode = os.lstat(target).st_mode
            except (OSError, ValueError):
                mode = 0
            if stat.S_ISREG(mode):
                return target
        return str(self._resolve(relative))

    def _resolve(self, relative: str) -> Path:
        root = self.root()
        current = root
        segments = relative.split("/")
        folders: list[tuple[str, str]] = []
        for index, segment in enumerate(segments):
            if index:
                folders.append(("/".join(segments[:index]), str(current)))
            current = current / segment
            try:
                resolved = current.resolve(strict=True)
            except FileNotFoundError as exc:
                raise om.Rejection(
                    "not-found", f"{relative} does not exist", path=relative
                ) from exc
            except (RuntimeError, OSError) as exc:  # symlink loops and the like
                raise om.Rejection(
                    "not-found", f"{relative} cannot be opened", path=relative
                ) from exc
            if not resolved.is_relative_to(root):
                raise om.Rejection(
                    "outside-source",
                    f"{relative} resolves outside the source directory (through a symlink)",
                    path=relative,
                )
            current = resolved
        if not current.is_file():
            raise om.Rejection("not-found", f"{relative} is not a regular file", path=relative)
        self._folders.update(folders)  # each resolved, inside the root, and a folder
        return current

    def _read(self, target: str, limit: int, relative: str) -> bytes:
        # The last segment was checked to be a regular file: open it only if it still is one
        # (not a symlink swapped in since, not a FIFO that would block the worker).
        try:
            descriptor = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as exc:
            raise om.Rejection("not-found", f"{relative} cannot be opened", path=relative) from exc
        data = _read_regular(descriptor, limit, relative)
        if data is None:
            raise om.Rejection("not-found", f"{relative} is not a regular file", path=relative)
        return data

    def get_manifest(self, validator: Validator | None) -> Fetched:
        try:
            target = self._inside(MANIFEST_NAME)
            data = self._read(target, self.policy.max_manifest_bytes, MANIFEST_NAME)
        except om.Rejection as exc:
            raise SourceError(exc.code, f"the manifest: {exc.message}") from exc
        return Fetched(data, Validator(content_hash=om.content_hash(data)))

    def get_record(self, path: str, validator: Validator | None) -> Fetched:
        data, body_hash = self._record(path)
        return Fetched(data, Validator(content_hash=body_hash))

    def raw_hash(self, path: str) -> str:
        """The hash of a record's bytes, as `get_record`'s validator has it, without the
        objects around it."""
        return self._record(path)[1]

    def kept_hashes(self, paths: Sequence[str], kept: Iterable[FileStat]) -> list[str | None]:
        """Per path, the hash its `kept` stat holds when an lstat of the plain file in its
        checked folder shows the same device, inode, size, mtime and ctime: the file is that
        one, unwritten since, and is not opened. None for anything else (read as without a
        kept stat). Each lstat is taken by name in its folder's descriptor, opened once per
        folder (`kept_answers`), not by a whole path walked again."""
        if not self.policy.trust_stat:
            return [None] * len(paths)
        folders: dict[str, int] = {}
        try:
            opener = functools.partial(self._folder_descriptor, folders)
            return kept_answers(paths, kept, folders, opener, self.policy.max_response_bytes)
        finally:
            for descriptor in folders.values():
                if descriptor >= 0:
                    os.close(descriptor)

    def _folder_descriptor(self, folders: dict[str, int], folder: str, path: str) -> int:
        """An open descriptor of `folder` once it is checked (remembered in `folders`), or -1
        for none: a folder the checked way refuses for `path` (or a name such as `..`) is not
        remembered, since another path may check it; one that cannot be opened as a folder
        (swapped since it was checked) is."""
        if path.rpartition("/")[2] in _NOT_NAMES:
            return -1
        if folder and folder not in self._folders and self._checked(path) is None:
            return -1
        parent = self._folder(folder)
        if parent is None:
            return -1
        try:
            descriptor = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except (OSError, ValueError):
            descriptor = -1
        folders[folder] = descriptor
        return descriptor

    def _checked(self, path: str) -> str | None:
        """`_direct` once the folders on the way are checked (and remembered); None when
        the checked way refuses the path (the read then refuses it the same way)."""
        try:
            self._inside(path)
        except om.Rejection:
            return None
        return self._direct(path)

    def _record(self, path: str) -> tuple[bytes, str]:
        """A record's bytes and their hash; the stat of a file read straight in its checked
        folder is kept with them (`stats`)."""
        self.stats[path] = NO_STAT  # read: whatever was known of it, this read decides
        limit = self.policy.max_response_bytes
        direct = self._read_direct(path, limit)
        if direct is None:
            target = self._inside(path)  # checks the folders on the way (remembered), or refuses
            direct = self._read_direct(path, limit)  # open now if its folder was not checked
            if direct is None:  # a symlink inside the source, or swapped since: the checked way
                data = self._read(target, limit, path)
                return data, om.content_hash(data)
        data, info = direct
        body_hash = om.content_hash(data)
        # ctime 0: a filesystem that keeps none, where a restored mtime would hide a write
        settled = self._settled
        if self.policy.trust_stat and info.st_mtime_ns < settled and 0 < info.st_ctime_ns < settled:
            self.stats[path] = stat_of(info, body_hash)
        return data, body_hash

    def _direct(self, relative: str) -> str | None:
        """The path of a plain file name in a folder already checked for this read, else
        None (a folder not checked yet, or a name such as `..`)."""
        folder, _, name = relative.rpartition("/")
        if name in _NOT_NAMES:
            return None
        parent = self._folder(folder)
        return None if parent is None else f"{parent}/{name}"

    def _folder(self, folder: str) -> str | None:
        """A relative folder's path once checked for this read (the root's at once)."""
        return self._folders.get(folder) if folder else str(self.root())

    def _read_direct(self, relative: str, limit: int) -> tuple[bytes, os.stat_result] | None:
        """A plain file in a folder already checked for this read: opened at once, without
        following a symlink, and read if it is a regular file (with the fstat of what was
        read); None for anything else (missing, a symlink, a folder, a FIFO, a folder not
        checked yet), which the checked way then reads or rejects. One open where an lstat
        and an open were: 10,000 per refresh."""
        target = self._direct(relative)
        if target is None:
            return None
        try:
            descriptor = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except (OSError, ValueError):
            return None
        return _read_stat(descriptor, limit, relative)

    def close(self) -> None:
        return None


def _read_regular(descriptor: int, limit: int, relative: str) -> bytes | None:
    """An open file's bytes if it is a regular file (None if not), closing it; over `limit`
    bytes is the record's rejection."""
    read = _read_stat(descriptor, limit, relative)
    return None if read is None else read[0]


def _read_stat(descriptor: int, limit: int, relative: str) -> tuple[bytes, os.stat_result] | None:
    """`_read_regular` with the file's fstat, taken before its bytes were read."""
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            return None
        data = _read_upto(descriptor, min(info.st_size, limit) + 1, limit + 1)
    finally:
        os.close(descriptor)
    if len(data) > limit:
        raise om.Rejection("too-large", f"{relative} is over {limit} bytes", path=relative)
    return data, info


def _read_upto(descriptor: int, first: int, most: int) -> bytes:
    """At most `most` bytes of an open file, asking for `first` (its size + 1) at once.

    A read of `limit + 1` bytes made Python allocate (and the kernel map) a 1 MiB buffer for
    every 300-byte record: four times the cost of reading it. A file read short is at its
    end (a regular file's read stops early only there); one that grew since its fstat is read
    on in small pieces, up to `most` bytes."""
    pieces = [os.read(descriptor, first)]
    size = len(pieces[0])
    if size < first:  # a regular file read short is at its end: no read to find it empty
        return pieces[0]
    while pieces[-1] and size < most:
        piece = os.read(descriptor, min(most - size, 65536))
        pieces.append(piece)
        size += len(piece)
    return b"".join(pieces)
