"""`read_entries` reads a project from a commit's tree entries with the same rules and
problems as `read_project` gives from its checkout: each case is committed to a real git
repository and read both ways."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from formats import memoryrail
from formats.memoryrail.model import MAX_MEMORY_BYTES

M = memoryrail.MEMORIES_DIR


def _memory(memory_id: str, **extra: object) -> bytes:
    meta = {
        "id": memory_id,
        "type": "decision",
        "title": "A title",
        "status": "active",
        "created": "2026-01-01T00:00:00.000Z",
        "updated": "2026-01-01T00:00:00.000Z",
        **extra,
    }
    lines = "".join(f"{key}: {json.dumps(value)}\n" for key, value in meta.items())
    return f"---\n{lines}---\nWhy.\n".encode()


def _git(root: Path, *args: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", "-c", "user.name=T", "-c", "user.email=t@example.org", *args],
        cwd=root,
        input=stdin,
        capture_output=True,
        check=True,
    ).stdout


def _both(root: Path) -> tuple[memoryrail.Project, memoryrail.Project]:
    """The project read from the files, and from HEAD's objects."""
    _git(root, "add", "-A")
    _git(root, "commit", "--quiet", "--allow-empty", "-m", "case")
    listing = _git(root, "ls-tree", "-r", "-z", "HEAD", "--", M)
    entries: dict[str, tuple[str, str]] = {}
    for item in listing.split(b"\0"):
        if item:
            info, _, path = item.partition(b"\t")
            mode, _, sha = info.decode().split(" ")
            entries[os.fsdecode(path)] = (mode, sha)

    def read(paths: list[str]) -> dict[str, bytes]:
        return {path: _git(root, "cat-file", "blob", entries[path][1]) for path in paths}

    modes = {path: mode for path, (mode, _) in entries.items()}
    return memoryrail.read_project(root), memoryrail.read_entries(root, modes, read)


def _same(on_disk: memoryrail.Project, from_objects: memoryrail.Project) -> None:
    assert from_objects.config == on_disk.config
    assert from_objects.problems == on_disk.problems
    assert from_objects.memories == on_disk.memories
    assert from_objects.data == on_disk.data


def _symlink(root: Path) -> None:
    (root / M / "alias.md").symlink_to("20260101-a.md")


def _folder_named_md(root: Path) -> None:
    (root / M / "folder.md").mkdir()
    (root / M / "folder.md" / "inside.txt").write_text("x\n")
    (root / M / "sub").mkdir()
    (root / M / "sub" / "20260103-nested.md").write_bytes(_memory("20260103-nested"))


def _not_utf8_name(root: Path) -> None:
    (root / M / os.fsdecode(b"bad-\xff.md")).write_bytes(_memory("bad"))


def _invalid_and_oversized(root: Path) -> None:
    (root / M / "20260104-broken.md").write_bytes(b"---\nid: [\n---\n")
    big = _memory("20260105-big") + b"x" * MAX_MEMORY_BYTES
    (root / M / "20260105-big.md").write_bytes(big)
    (root / M / "20260106-x.md").write_bytes(_memory("20260106-x", supersedes="gone"))
    (root / M / "notes.txt").write_text("not a memory\n")
    (root / M / ".hidden.md").write_bytes(_memory(".hidden"))


def _submodule(root: Path) -> None:
    sha = _git(root, "rev-parse", "HEAD").decode().strip()
    _git(root, "update-index", "--add", "--cacheinfo", f"160000,{sha},{M}/module.md")
    (root / M / "module.md").mkdir()  # what a checkout leaves of a submodule


CASES: dict[str, Callable[[Path], None]] = {
    "symlink": _symlink,
    "folder-named-md": _folder_named_md,
    "not-utf8-name": _not_utf8_name,
    "invalid-oversized-hidden": _invalid_and_oversized,
    "submodule": _submodule,
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / M).mkdir(parents=True)
    _git(root, "init", "--quiet")
    (root / memoryrail.CONFIG_PATH).write_text('{"version": 1}\n')
    (root / M / "20260101-a.md").write_bytes(_memory("20260101-a"))
    (root / M / "20260102-b.md").write_bytes(_memory("20260102-b", status="proposed"))
    _git(root, "add", "-A")
    _git(root, "commit", "--quiet", "-m", "seed")
    return root


@pytest.mark.parametrize("case", sorted(CASES))
def test_it_reads_what_read_project_reads_with_the_same_problems(project, case):
    CASES[case](project)
    on_disk, from_objects = _both(project)
    assert on_disk.problems  # each case is one read_project has a rule for
    _same(on_disk, from_objects)


def test_it_reads_a_plain_project_alike(project):
    on_disk, from_objects = _both(project)
    assert [m.id for m in from_objects.memories] == ["20260101-a", "20260102-b"]
    _same(on_disk, from_objects)


def test_a_missing_memories_folder_is_no_problem(project):
    _git(project, "rm", "-r", "--quiet", M)
    on_disk, from_objects = _both(project)
    assert from_objects.problems == [] and from_objects.memories == []
    _same(on_disk, from_objects)


def test_a_symlinked_memories_folder_is_reported_and_not_read(project):
    _git(project, "mv", M, ".memoryrail/elsewhere")
    (project / M).symlink_to("elsewhere")
    on_disk, from_objects = _both(project)
    assert [p.code for p in from_objects.problems] == ["file-not-regular"]
    _same(on_disk, from_objects)


def test_a_missing_config_stops_the_read_alike(project):
    (project / memoryrail.CONFIG_PATH).unlink()
    on_disk, from_objects = _both(project)
    assert from_objects.config is None
    _same(on_disk, from_objects)


def test_the_config_from_its_tree_entry_answers_as_load_config():
    assert memoryrail.config_from_entry("100644", b'{"version": 1}').version == 1
    for mode, code in ((None, "config-missing"), ("120000", "config-missing")):
        with pytest.raises(memoryrail.ConfigError) as refused:
            memoryrail.config_from_entry(mode, b'{"version": 1}')
        assert refused.value.code == code
    with pytest.raises(memoryrail.ConfigError) as refused:
        memoryrail.config_from_entry("100644", b'{"version": 2}')
    assert refused.value.code == "config-version"
