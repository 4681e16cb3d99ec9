"""The working copy: a sparse checkout without the memories folder (every reader takes the
memories from git's objects), commits made from objects, and resets to the remote head."""

from __future__ import annotations

import pytest

from reviews.services.repositories import working_copy

from .conftest import M, git

pytestmark = pytest.mark.django_db


@pytest.fixture
def copy(repository):  # type: ignore[no-untyped-def]
    copy = working_copy(repository)
    with copy.locked():
        copy.sync()
        yield copy


def test_a_commit_of_many_files_from_objects_packs_them_and_names_its_command(copy):
    import subprocess

    from reviews.gitenv import command_of as _command_of

    def loose() -> int:
        counted = subprocess.run(
            ["git", "count-objects", "-v"], cwd=copy.path, capture_output=True, text=True
        ).stdout
        return int(counted.split("count:")[1].split()[0])

    before = loose()
    head = copy.rev_parse("HEAD")
    paths = [f"{M}/many-{n:03d}.md" for n in range(120)]  # over fast-import's unpack limit
    changes = {path: ("100644", f"file {path}\n".encode()) for path in paths}
    changes["docs/crlf.txt"] = ("100644", b"one\ntwo\n")
    sha = copy.commit_objects(
        parent=head,
        changes=changes,
        message="Many\n",
        author=("A", "a@example.org"),
        committer=("B", "b@e.org"),
    )
    shown = subprocess.run(
        ["git", "show", f"{sha}:{paths[7]}"], cwd=copy.path, capture_output=True, check=True
    )
    assert shown.stdout == f"file {paths[7]}\n".encode()
    assert copy.rev_parse(f"{sha}^") == head and copy.rev_parse("HEAD") == head
    assert loose() == before  # one pack: no loose blob, tree or commit (121 blobs)
    fsck = subprocess.run(["git", "fsck", "--no-dangling"], cwd=copy.path, capture_output=True)
    assert fsck.returncode == 0, fsck.stderr
    assert _command_of(("-c", "a=b", "-c", "c=d", "commit", "-q")) == "commit"
    assert _command_of(("-c",)) == "-c"


def test_a_reset_leaves_exactly_the_remote_head_after_a_failed_push(copy, remote):
    """One forced checkout -B (no `reset --hard` after it) throws away a local commit, staged
    and unstaged edits, a removed file and untracked files."""
    import subprocess

    def git_out(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=copy.path, capture_output=True, check=True)
        return done.stdout.decode()

    head = copy.rev_parse("HEAD")
    path = "src/db/schema.sql"
    original = (copy.path / path).read_bytes()
    (copy.path / path).write_bytes(b"committed locally, never pushed\n")
    git_out("-c", "user.name=A", "-c", "user.email=a@example.org", "commit", "-qam", "Local")
    (copy.path / path).write_bytes(b"staged\n")
    git_out("add", path)
    (copy.path / path).write_text("unstaged\n", encoding="utf-8")
    (copy.path / "AGENTS.md").unlink()
    (copy.path / "untracked.txt").write_text("left over\n", encoding="utf-8")
    assert copy.reset_to_remote() == head == git(remote.bare, "rev-parse", "main").strip()
    assert (copy.path / path).read_bytes() == original
    assert (copy.path / "AGENTS.md").is_file()
    assert not (copy.path / M).exists()
    assert not (copy.path / "untracked.txt").exists()
    assert git_out("status", "--porcelain") == ""
    assert git_out("rev-parse", "--abbrev-ref", "HEAD").strip() == copy.branch


def test_a_new_clone_leaves_the_memories_folder_out_of_its_files(copy):
    assert (copy.path / ".memoryrail/config.json").is_file()  # load_config reads it
    assert (copy.path / "src/db/schema.sql").is_file()
    assert not (copy.path / M).exists()
    assert git(copy.path, "config", "core.sparseCheckout").strip() == "true"
    assert f"{M}/20260101-use-postgres.md" in copy.tree_entries("HEAD", M)
    assert git(copy.path, "status", "--porcelain") == ""


def test_an_existing_clone_gets_the_sparse_setting_at_its_next_sync(copy, monkeypatch):
    """A clone made before the setting: its memory files go at the next sync, and a second
    sync changes nothing (idempotent)."""
    git(copy.path, "config", "--unset", "core.sparseCheckout")
    (copy.path / ".git/info/sparse-checkout").unlink()
    (copy.path / ".git/index").unlink()  # its skip-worktree bits go with it
    git(copy.path, "reset", "--quiet", "--hard", "HEAD")
    assert (copy.path / M / "20260101-use-postgres.md").is_file()
    copy.sync()
    assert not (copy.path / M).exists()
    assert git(copy.path, "config", "core.sparseCheckout").strip() == "true"
    monkeypatch.setattr(copy, "_sparse_set", lambda: pytest.fail("set again"))
    copy.sync()
    assert not (copy.path / M).exists()
