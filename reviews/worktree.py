"""The files of a working copy: written in place, each folder resolved once per reset, and
never anything outside the copy (`WorkingCopy` holds the lock and stages what changed)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

_OVERWRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


class WorktreeFiles:
    """Writes and removes files under `root`. Folders are resolved (and made) once until
    `forget`, which a reset calls: a checkout may replace any folder, by a symlink too."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._folders: dict[str, Path] = {}  # 1,000 approvals resolved one folder 1,000 times

    def forget(self) -> None:
        self._folders.clear()

    def write(self, path: str, data: bytes) -> None:
        target = self._plain_file(path)
        if target is None or not overwrite(target, data):
            # a symlink or an odd name: resolved as a whole, and refused outside the copy
            target = self.inside(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)

    def remove(self, path: str) -> bool:
        """Remove the file at `path`; False when there is none."""
        target = self._plain_file(path, create=False)
        if target is None or not target.is_file() or target.is_symlink():
            target = self.inside(path)
        if not target.is_file():
            return False
        target.unlink()
        return True

    def inside(self, path: str) -> Path:
        target = (self.root / path).resolve()
        target.relative_to(self.root.resolve())  # ValueError for a path escaping the copy
        return target

    def _plain_file(self, path: str, *, create: bool = True) -> Path | None:
        """`path` under its folder resolved once (made, and inside the copy), or None for a
        name the folder cache cannot answer ("", ".", "..") or a missing folder when `create`
        is false."""
        folder, _, name = path.rpartition("/")
        if name in ("", ".", ".."):
            return None
        parent = self._folders.get(folder)
        if parent is None:
            parent = self.inside(folder) if folder else self.root.resolve()
            if create:
                parent.mkdir(parents=True, exist_ok=True)
            elif not parent.is_dir():
                return None
            self._folders[folder] = parent
        return parent / name


def overwrite(target: Path, data: bytes) -> bool:
    """Write `data` over the file in place, then cut it to its length: truncating first made
    the file system free and allocate the blocks of every file again (an approval rewrites
    two lines of a file of the same size). False, with nothing written, when `target` is a
    symlink (the caller resolves it)."""
    try:
        fd = os.open(target, _OVERWRITE_FLAGS, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return False
        raise
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)
    return True
