"""What a decision changes in the repository, read from the objects of the remote head it is
applied to (`WorkingCopy.commit_objects` makes the commit): the files of the working copy are
not touched, a generated agent file's block is rendered from the objects too."""

from __future__ import annotations

from collections.abc import Iterable

from formats import memoryrail
from memoryadmin.bulk import json_loads, stream_rows
from reviews.git import WorkingCopy
from reviews.gitobjects import Changes, TreeEntry
from reviews.models import Decision, DecisionKind


class Conflict(Exception):
    """The proposal changed or vanished upstream: nothing is overwritten."""


def decision_changes(copy: WorkingCopy, decision: Decision, head: str, *, now: str) -> Changes:
    """The files the decision writes or removes on commit `head`; Conflict if upstream moved a
    proposal since it was reviewed."""
    entries = copy.tree_entries(
        head, memoryrail.MEMORIES_DIR, *memoryrail.AGENT_FILES, memoryrail.CONFIG_PATH, sized=True
    )
    # values, not instances: 1,000 items with their memories' front matter took seconds
    items = decision.items.order_by("pk").values_list(
        "path", "ref", "blob_sha", "memory__blob_sha", "memory__front_matter"
    )
    # read them all first: a Conflict raised while the cursor's transaction is open would
    # mark the caller's transaction as failed
    rows = list(stream_rows(items, itersize=1000, json_loads=json_loads))
    files = _Files(copy, entries)
    # the proposals' blobs, those of the memories they supersede (as the index read them) and
    # the agent files': one `cat-file --batch` (a file missed here is read when it is reached)
    superseded = (
        f"{memoryrail.MEMORIES_DIR}/{meta['supersedes']}.md"
        for *_, meta in rows
        if isinstance(meta, dict) and isinstance(meta.get("supersedes"), str)
    )
    paths = (
        [row[0] for row in rows]
        + list(superseded)
        + [*memoryrail.AGENT_FILES, memoryrail.CONFIG_PATH]
    )
    files.load(entry.sha for path in paths if (entry := entries.get(path)) and entry.regular)
    for path, ref, blob_sha, indexed_blob, indexed_meta in rows:
        current = entries.get(path)
        if current is None or path in files.removed:
            raise Conflict(f"{ref} was removed upstream after it was reviewed")
        if current.sha != blob_sha:
            raise Conflict(f"{ref} was changed upstream after it was reviewed")
        data = files.read(path)
        # The index read these very bytes strictly: its front matter lets a file our writer
        # wrote be read back without a second YAML parse (memoryrail.read_written).
        fresh = path not in files.changes and indexed_blob == current.sha
        memory = None
        if data is not None:
            memory, _ = memoryrail.parse_memory(
                data, path=path, known_meta=indexed_meta if fresh else None
            )
        if memory is None or memory.status != "proposed":
            raise Conflict(f"{ref} is no longer a readable proposal")
        if decision.kind == DecisionKind.REJECT:
            files.remove(path)
            continue
        files.write(path, memoryrail.approve(memory, now=now))
        if memory.supersedes:
            old_path = f"{memoryrail.MEMORIES_DIR}/{memory.supersedes}.md"
            if old_path in entries and old_path not in files.removed:
                old_data = files.read(old_path)
                old = None
                if old_data is not None:
                    old, _ = memoryrail.parse_memory(old_data, path=old_path)
                if old is None:
                    raise Conflict(f"{memory.supersedes} (superseded) cannot be read")
                files.write(old_path, memoryrail.supersede(old, by=memory.id, now=now))
    _regenerate_agent_files(copy, files)
    return files.changes


class _Files:
    """The files of one commit's tree as the decision changes them: read from their blobs,
    or from what this decision already wrote."""

    def __init__(self, copy: WorkingCopy, entries: dict[str, TreeEntry]) -> None:
        self.copy = copy
        self.entries = entries
        self.changes: Changes = {}
        self.removed: set[str] = set()
        self._contents: dict[str, bytes] = {}

    def load(self, shas: Iterable[str]) -> None:
        """Read these blobs at once (one `cat-file --batch`)."""
        self._contents.update(self.copy.contents(shas))

    def read(self, path: str) -> bytes | None:
        """The file's bytes now; None for what is not a plain file (a symlink, a submodule)."""
        change = self.changes.get(path)
        if change is not None:
            return change[1]
        entry = self.entries.get(path)
        if entry is None or not entry.regular or path in self.removed:
            return None
        if entry.sha not in self._contents:
            self.load([entry.sha])
        return self._contents[entry.sha]

    def write(self, path: str, text: str) -> None:
        entry = self.entries.get(path)
        self.changes[path] = (entry.mode if entry else "100644", text.encode("utf-8"))

    def remove(self, path: str) -> None:
        self.changes[path] = None
        self.removed.add(path)


def _regenerate_agent_files(copy: WorkingCopy, files: _Files) -> None:
    """Rewrite the managed block of each generated agent file that has one. The block lists
    every active memory, so it is rendered from the project as the decision leaves it: the
    head's objects with the decision's changes over them."""
    block = None
    for name in memoryrail.AGENT_FILES:
        data = files.read(name)
        if data is None:
            continue
        text = data.decode("utf-8")
        if not memoryrail.has_block(text):
            continue
        if block is None:
            block = memoryrail.render_block(_project_after(copy, files).memories)
        updated = memoryrail.replace_block(text, block)
        if updated != text:
            files.write(name, updated)


def _project_after(copy: WorkingCopy, files: _Files) -> memoryrail.Project:
    """The project of the head's tree with the decision's changes (`read_entries`), its
    config read from the same tree."""
    prefix = f"{memoryrail.MEMORIES_DIR}/"
    modes = {
        path: entry.mode
        for path, entry in files.entries.items()
        if path.startswith(prefix) or path == memoryrail.MEMORIES_DIR
    }
    for path, change in files.changes.items():
        if not path.startswith(prefix):
            continue
        if change is None:
            modes.pop(path, None)
        else:
            modes[path] = change[0]
    config_entry = files.entries.get(memoryrail.CONFIG_PATH)
    try:
        config: memoryrail.Config | memoryrail.ConfigError = memoryrail.config_from_entry(
            config_entry.mode if config_entry else None, files.read(memoryrail.CONFIG_PATH)
        )
    except memoryrail.ConfigError as exc:
        config = exc

    def read(paths: list[str]) -> dict[str, bytes]:
        files.load(
            entry.sha
            for path in paths
            if path not in files.changes and (entry := files.entries.get(path))
        )
        return {path: data for path in paths if (data := files.read(path)) is not None}

    # what the decision writes is ours (within the limit); the rest as the tree lists it
    sizes = {path: e.size for path, e in files.entries.items() if path not in files.changes}
    return memoryrail.read_entries(copy.path, modes, read, config=config, sizes=sizes)
