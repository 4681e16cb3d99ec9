"""A decision's commit made from git objects alone (`WorkingCopy.commit_objects`): what it
changes, who it names, and that nothing left in the working copy's index or files leaks in."""

from __future__ import annotations

import subprocess

import pytest

from formats import memoryrail
from memoryadmin.audit import Actor
from reviews import gitobjects
from reviews.models import PushState
from reviews.services.decisions import proposals_review
from reviews.services.repositories import repository_sync, working_copy

from .conftest import M, git
from .test_workflow import ATTEMPT, SQLITE, proposal

pytestmark = pytest.mark.django_db


def _approve(repository, reviewer_user, capture, *memory_ids: str):  # type: ignore[no-untyped-def]
    ids = [proposal(repository, memory_id).pk for memory_id in memory_ids]
    with capture(execute=True):
        (decision,) = proposals_review(
            actor=Actor(user=reviewer_user), team=repository.team, memory_ids=ids, kind="approve"
        ).decisions
    decision.refresh_from_db()
    return decision


def test_it_commits_only_the_decision_whatever_the_copy_holds(
    repository, remote, reviewer_user, django_capture_on_commit_callbacks
):
    """No generated agent file: the commit is made without the files. What a crashed attempt
    could have left (a staged file, an edited and an untracked one) stays out of it."""
    remote.commit({"AGENTS.md": None}, "No generated agent file")
    repository_sync(repository_id=repository.pk)
    copy = repository.working_dir
    (copy / "junk.txt").write_text("staged junk\n", encoding="utf-8")
    git(copy, "add", "junk.txt")
    (copy / "src/db/schema.sql").write_text("drop table t;\n", encoding="utf-8")
    (copy / "untracked.txt").write_text("left over\n", encoding="utf-8")
    decision = _approve(
        repository, reviewer_user, django_capture_on_commit_callbacks, ATTEMPT, SQLITE
    )
    assert decision.state == PushState.PUSHED, decision.state_detail
    changed = git(remote.bare, "diff-tree", "--no-commit-id", "-r", "--name-only", "main")
    assert sorted(changed.split()) == sorted(
        [f"{M}/{ATTEMPT}.md", f"{M}/{SQLITE}.md", f"{M}/20260101-use-postgres.md"]
    )
    assert remote.log()[0].startswith("Rita|rita@example.org|memoryadmin|Approve 2 proposals")
    assert git(remote.bare, "rev-parse", "main^").strip() == remote.log("%H")[1]
    assert remote.show("src/db/schema.sql") == "create table t (id int);\n"
    for memory_id in (ATTEMPT, SQLITE):
        text = remote.show(f"{M}/{memory_id}.md")
        memory, _ = memoryrail.parse_memory(text, path=f"{M}/{memory_id}.md")
        assert memory.status == "active"
    # the copy follows the remote after the push (the index read it)
    assert git(copy, "status", "--porcelain") == ""
    assert proposal(repository, ATTEMPT).status == "active"


def test_it_keeps_the_mode_of_an_executable_proposal(
    repository, remote, reviewer_user, django_capture_on_commit_callbacks
):
    elsewhere = remote.clone("elsewhere")
    git(elsewhere, "update-index", "--chmod=+x", f"{M}/{ATTEMPT}.md")
    git(elsewhere, "commit", "--quiet", "-m", "Executable, same bytes")
    git(elsewhere, "push", "--quiet", "origin", "main")
    repository_sync(repository_id=repository.pk)
    decision = _approve(repository, reviewer_user, django_capture_on_commit_callbacks, ATTEMPT)
    assert decision.state == PushState.PUSHED, decision.state_detail
    listed = git(remote.bare, "ls-tree", "main", "--", f"{M}/{ATTEMPT}.md")
    assert listed.startswith("100755 blob ")
    assert 'status: "active"' in remote.show(f"{M}/{ATTEMPT}.md")


def test_it_writes_odd_paths_exactly_and_reads_blobs_back(repository):
    paths = ['a b/"quoted".md', "back\\slash.md", "line\nbreak.md", "été/ünï.md", "tab\there"]
    copy = working_copy(repository)
    with copy.locked():
        head = copy.sync()
        sha = copy.commit_objects(
            parent=head,
            changes={path: ("100644", path.encode() + b"\n") for path in paths}
            | {"src/db/schema.sql": None},
            message="Odd paths\n",
            author=("A", "a@example.org"),
            committer=("B", "b@example.org"),
        )
        entries = copy.tree_entries(sha)
        contents = copy.contents([entries[path].sha for path in paths] + ["0" * 40])
    for path in paths:
        assert contents[entries[path].sha] == path.encode() + b"\n"
    assert "src/db/schema.sql" not in entries
    assert "0" * 40 not in contents
    assert git(copy.path, "cat-file", "-p", sha).endswith("\n\nOdd paths\n")
    fsck = subprocess.run(["git", "fsck", "--no-dangling"], cwd=copy.path, capture_output=True)
    assert fsck.returncode == 0, fsck.stderr


@pytest.mark.parametrize(
    ("name", "email"),
    [
        ("Rita", "rita@example.org"),
        ("  .Rita <the> Reviewer;, ", " <rita@example.org>\n"),
        ('Zoë "Z" O\'Neil', "zoe@example.org"),
    ],
)
def test_it_names_the_author_as_git_commit_would(tmp_path, name, email):
    git(tmp_path, "init", "--quiet")
    env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": "@0 +0000"}
    tree = git(tmp_path, "write-tree").strip()
    commit = git(tmp_path, "commit-tree", "-m", "x", tree, env=env).strip()
    author = next(
        line for line in git(tmp_path, "cat-file", "-p", commit).splitlines() if "author" in line
    )
    ours = gitobjects.ident(name, email, when=0).decode()
    assert author.removeprefix("author ").rsplit(" ", 1)[0] == ours.rsplit(" ", 1)[0]


def test_it_refuses_a_name_git_would_refuse():
    with pytest.raises(ValueError):
        gitobjects.ident(" .,<> ", "x@example.org", when=0)


def test_it_never_brings_back_a_commit_the_remote_dropped(
    repository, remote, reviewer_user, django_capture_on_commit_callbacks
):
    """The first try builds on the head the copy knows without fetching; its push is a lease
    on that head, so a remote rewound since (a force-push removing a commit) refuses it, and
    the next try fetches and builds on what the remote holds now."""
    before = remote.log("%H")[0]
    dropped = remote.commit({"LEAKED.md": "a secret that was pushed by mistake\n"}, "Oops")
    repository_sync(repository_id=repository.pk)  # the copy knows the commit
    git(remote.bare, "update-ref", "refs/heads/main", before, dropped)  # the rewind
    decision = _approve(repository, reviewer_user, django_capture_on_commit_callbacks, ATTEMPT)
    assert decision.state == PushState.PUSHED, decision.state_detail
    assert remote.log("%H")[1:] == [before]
    assert not remote.exists("LEAKED.md")
    assert 'status: "active"' in remote.show(f"{M}/{ATTEMPT}.md")
