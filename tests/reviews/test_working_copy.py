"""The working copy's file writes (`WorkingCopy.files`, a `WorktreeFiles`: what a decision's
agent-file block is rendered from): in place, inside the copy, through a symlink only inside."""

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


def test_it_overwrites_a_longer_file_and_cuts_it_to_the_new_text(copy):
    path = f"{M}/20260101-use-postgres.md"
    long_text = (copy.path / path).read_text(encoding="utf-8")
    copy.files.write(path, b"short\n")
    assert (copy.path / path).read_bytes() == b"short\n"
    copy.files.write(path, (long_text + "more\n").encode())
    assert (copy.path / path).read_text(encoding="utf-8") == long_text + "more\n"


def test_it_creates_new_folders_and_files(copy):
    copy.files.write("docs/new/deep.md", b"hello\n")
    copy.files.write("top.md", b"top\n")
    assert (copy.path / "docs/new/deep.md").read_text(encoding="utf-8") == "hello\n"
    assert (copy.path / "top.md").read_text(encoding="utf-8") == "top\n"


def test_it_refuses_a_path_or_a_symlink_that_leaves_the_copy(copy, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me\n", encoding="utf-8")
    with pytest.raises(ValueError):
        copy.files.write("../escaped.md", b"no\n")
    copy.files.write(f"{M}/20260102-no-orm-magic.md", b"cached folder\n")  # the folder is known
    (copy.path / M / "evil.md").symlink_to(outside)
    with pytest.raises(ValueError):
        copy.files.write(f"{M}/evil.md", b"no\n")
    with pytest.raises(ValueError):
        copy.files.remove(f"{M}/evil.md")
    assert outside.read_text(encoding="utf-8") == "keep me\n"
    assert not (copy.path.parent / "escaped.md").exists()


def test_a_symlink_inside_the_copy_is_written_through(copy):
    (copy.path / M / "alias.md").symlink_to(copy.path / M / "20260102-no-orm-magic.md")
    copy.files.write(f"{M}/alias.md", b"through\n")
    assert (copy.path / M / "alias.md").is_symlink()
    assert (copy.path / M / "20260102-no-orm-magic.md").read_text(encoding="utf-8") == "through\n"


def test_it_removes_files_and_refuses_what_is_not_one(copy):
    path = f"{M}/20260101-use-postgres.md"
    assert copy.files.remove(path)
    assert not (copy.path / path).exists()
    assert not copy.files.remove(path)
    assert not copy.files.remove("nowhere/at/all.md")
    assert not (copy.path / "nowhere").exists()


def test_a_reset_forgets_the_folders_it_may_have_replaced(copy):
    copy.files.write("made/here.md", b"one\n")
    copy.reset_to_remote()  # git clean removes the untracked folder
    assert not (copy.path / "made").exists()
    copy.files.write("made/here.md", b"two\n")
    assert (copy.path / "made/here.md").read_text(encoding="utf-8") == "two\n"


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
    path = f"{M}/20260101-use-postgres.md"
    original = (copy.path / path).read_bytes()
    copy.files.write(path, b"committed locally, never pushed\n")
    git_out("-c", "user.name=A", "-c", "user.email=a@example.org", "commit", "-qam", "Local")
    copy.files.write(path, b"staged\n")
    git_out("add", path)
    (copy.path / path).write_text("unstaged\n", encoding="utf-8")
    (copy.path / M / "20260102-no-orm-magic.md").unlink()
    (copy.path / "untracked.txt").write_text("left over\n", encoding="utf-8")
    assert copy.reset_to_remote() == head == git(remote.bare, "rev-parse", "main").strip()
    assert (copy.path / path).read_bytes() == original
    assert (copy.path / M / "20260102-no-orm-magic.md").is_file()
    assert not (copy.path / "untracked.txt").exists()
    assert git_out("status", "--porcelain") == ""
    assert git_out("rev-parse", "--abbrev-ref", "HEAD").strip() == copy.branch
