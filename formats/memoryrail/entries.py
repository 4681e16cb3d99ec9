"""MemoryRail 1 read from a commit's tree entries instead of the files: the same rules and
problems as `read_project` gives from a checkout, each taken from the entry's git mode (a
review working copy keeps no memory files on disk). No Django import, no git command: the
caller lists the entries and reads the blobs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from formats.memoryrail.config import ConfigError, load_config
from formats.memoryrail.core import add_memory_file, check_references, not_utf8_name
from formats.memoryrail.model import (
    MAX_MEMORY_BYTES,
    MEMORIES_DIR,
    REGULAR_MODES,
    SYMLINK_MODE,
    Config,
    Problem,
    Project,
)


def memory_names(entries: Mapping[str, str]) -> list[tuple[str, bool]]:
    """(name, regular) of the memories folder's `*.md` entries by name, as read_project lists
    them from a checkout: `entries` is path -> git mode of what `git ls-tree -r` lists under
    the folder, where a folder is implied by the paths under it (it is not regular), and a
    symlink or a submodule (a folder on disk) is not regular either."""
    prefix = f"{MEMORIES_DIR}/"
    found: dict[str, bool] = {}
    for path, mode in entries.items():
        if not path.startswith(prefix):
            continue
        name, nested, _ = path[len(prefix) :].partition("/")
        if name.endswith(".md"):
            found[name] = not nested and mode in REGULAR_MODES
    return sorted(found.items())


def read_entries(
    root: Path,
    entries: Mapping[str, str],
    read: Callable[[list[str]], Mapping[str, bytes]],
    *,
    config: Config | ConfigError | None = None,
    known: Mapping[str, tuple[str, dict[str, Any]]] | None = None,
    sizes: Mapping[str, int] | None = None,
) -> Project:
    """`read_project` from tree entries: `entries` (path -> git mode, see `memory_names`, the
    folder's own entry too when it is no folder), `read(paths)` the bytes of those regular
    files, `config` the project's config (or why there is none; None: load_config(root)).
    `sizes` (path -> bytes, as the tree lists them): a file over the limit is not asked of
    `read` (one pushed file must not fill a reader's memory); the limit + 1 bytes, all
    read_project reads of a file, stand for it (the same "too large" problem).

    A memories folder that is a symlink is reported whatever it points to (read_project
    reports it when its target lists a `*.md` name): nothing in it is read either way."""
    if config is None:
        try:
            config = load_config(root)
        except ConfigError as exc:
            config = exc
    if isinstance(config, ConfigError):
        return Project(root=root, config=None, problems=[config.as_problem()])
    project = Project(root=root, config=config)
    if entries.get(MEMORIES_DIR) == SYMLINK_MODE:
        message = "the memories folder is a symlink; nothing in it is read"
        project.problems.append(Problem("file-not-regular", MEMORIES_DIR, None, message))
        return project
    names = memory_names(entries)
    wanted = [f"{MEMORIES_DIR}/{name}" for name, regular in names if regular]
    large = {path for path in wanted if (sizes or {}).get(path, -1) > MAX_MEMORY_BYTES}
    small = [path for path in wanted if path not in large]
    contents = dict(read(small)) if small else {}
    contents.update((path, bytes(MAX_MEMORY_BYTES + 1)) for path in large)
    for name, regular in names:
        if not_utf8_name(project, name):
            continue
        rel = f"{MEMORIES_DIR}/{name}"
        data = contents.get(rel) if regular else None
        # read_project reads at most one byte past the limit: the same "too large" problem
        add_memory_file(project, rel, None if data is None else data[: MAX_MEMORY_BYTES + 1], known)
    project.problems.extend(check_references(project.memories))
    return project
