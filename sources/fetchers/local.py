"""The local-directory transport: a source is a folder under an allowed root, read without
ever following a symlink out of it."""

from __future__ import annotations

import os
import stat
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


class LocalFetcher:
    kind = "local"

    def __init__(self, identity: str, *, policy: FetchPolicy) -> None:
        self.identity = identity
        self.policy = policy
        self._root: Path | None = None
        # relative folder -> its resolved path inside the root, as a string (pathlib's joins
        # cost more than the lstat they lead to, 10,000 times per unchanged refresh)
        self._folders: dict[str, str] = {}

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
        folder, _, name = relative.rpartition("/")
        if name not in ("", ".", ".."):
            parent = self._folders.get(folder) if folder else str(self.root())
            if parent is not None:
                target = f"{parent}/{name}"
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
        data = self._record(path)
        return Fetched(data, Validator(content_hash=om.content_hash(data)))

    def raw_hash(self, path: str) -> str:
        """The hash of a record's bytes, as `get_record`'s validator has it, without the
        objects around it: the raw check asks it 10,000 times for an unchanged refresh."""
        return om.content_hash(self._record(path))

    def _record(self, path: str) -> bytes:
        limit = self.policy.max_response_bytes
        data = self._read_direct(path, limit)
        return data if data is not None else self._read(self._inside(path), limit, path)

    def _read_direct(self, relative: str, limit: int) -> bytes | None:
        """A plain file in a folder already checked for this read: opened at once, without
        following a symlink, and read if it is a regular file; None for anything else (missing,
        a symlink, a folder, a FIFO, a folder not checked yet), which the checked way then
        reads or rejects. One open where an lstat and an open were: 10,000 per refresh."""
        folder, _, name = relative.rpartition("/")
        if name in ("", ".", ".."):
            return None
        parent = self._folders.get(folder) if folder else str(self.root())
        if parent is None:
            return None
        try:
            descriptor = os.open(f"{parent}/{name}", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except (OSError, ValueError):
            return None
        return _read_regular(descriptor, limit, relative)

    def close(self) -> None:
        return None


def _read_regular(descriptor: int, limit: int, relative: str) -> bytes | None:
    """An open file's bytes if it is a regular file (None if not), closing it; over `limit`
    bytes is the record's rejection."""
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            return None
        data = _read_upto(descriptor, min(info.st_size, limit) + 1, limit + 1)
    finally:
        os.close(descriptor)
    if len(data) > limit:
        raise om.Rejection("too-large", f"{relative} is over {limit} bytes", path=relative)
    return data


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
