"""The git processes a sync and a decision's push start (each a fork and exec of git, a few ms
on a small machine), counted by a logging `git` first on PATH that runs the real one."""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from django.db import transaction

from memoryadmin.audit import Actor
from reviews.gitenv import command_of
from reviews.gitobjects import fetched_head
from reviews.models import PushState, Repository
from reviews.services.decisions import proposal_approve
from reviews.services.repositories import repository_create, repository_sync, working_copy
from tests.reviews.conftest import M, git, memory_text

pytestmark = pytest.mark.django_db


@pytest.fixture
def git_calls(tmp_path, monkeypatch) -> Callable[[], list[str]]:
    """Returns (and forgets) the git commands run since its last call, in order."""
    real = shutil.which("git")
    assert real
    folder = tmp_path / "gitbin"
    folder.mkdir()
    log = tmp_path / "gitcalls.log"
    script = folder / "git"
    logged = f'printf "%s\\n" "$*" >> {shlex.quote(str(log))}'
    script.write_text(f'#!/bin/sh\n{logged}\nexec {shlex.quote(real)} "$@"\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")

    def calls() -> list[str]:
        lines = log.read_text().splitlines() if log.exists() else []
        log.unlink(missing_ok=True)
        return [command_of(tuple(line.split())) for line in lines]

    return calls


def _until(calls: list[str], command: str) -> list[str]:
    return calls[: calls.index(command)]


def test_a_first_sync_clones_in_one_process(team, remote, data_dir, git_calls):
    """One clone (guarded, sparse before its checkout) where init, remote add, two config
    writes, fetch, checkout and clean ran; then the head, then the index's reads."""
    with transaction.atomic():
        created = repository_create(
            actor=Actor.system(), team=team, name="app", remote_url=remote.url
        )
    git_calls()
    repository = repository_sync(repository_id=created.pk)
    assert repository.last_sync_ok is True, repository.last_error
    assert _until(git_calls(), "ls-tree") == ["clone", "rev-parse"]
    assert repository.head_commit == git(remote.bare, "rev-parse", "main").strip()
    assert not (repository.working_dir / M).exists()
    assert (repository.working_dir / ".memoryrail/config.json").is_file()
    assert git(repository.working_dir, "status", "--porcelain") == ""


def test_a_later_sync_takes_the_head_from_its_fetch(repository, remote, git_calls):
    remote.commit({f"{M}/20260301-new.md": memory_text("20260301-new")}, "New")
    git_calls()
    repository = repository_sync(repository_id=repository.pk)
    assert _until(git_calls(), "ls-tree") == ["config", "fetch", "checkout", "clean"]
    assert repository.head_commit == git(remote.bare, "rev-parse", "main").strip()
    head = fetched_head(repository.working_dir / ".git" / "FETCH_HEAD")
    assert head == repository.head_commit


def test_a_push_then_re_index_reads_the_head_once(
    repository, remote, reviewer_user, django_capture_on_commit_callbacks, git_calls
):
    """The remote head the copy last fetched is read once (the first try builds on it); the
    re-index after the push checks out the pushed commit by its sha."""
    memory = repository.memories.get(memory_id="20260203-cache-attempt")
    git_calls()
    with django_capture_on_commit_callbacks(execute=True):
        decision = proposal_approve(actor=Actor(user=reviewer_user), memory=memory)
    decision.refresh_from_db()
    assert decision.state == PushState.PUSHED, decision.state_detail
    calls = git_calls()
    assert calls[calls.index("push") :][:3] == ["push", "checkout", "clean"]
    assert calls.count("rev-parse") == 1 and calls.count("fetch") == 0
    assert Repository.objects.get(pk=repository.pk).head_commit == decision.commit_sha
    assert git(repository.working_dir, "rev-parse", "HEAD").strip() == decision.commit_sha


def test_a_new_branch_reclones_and_its_push_moves_its_tracking_ref(repository, remote):
    """A clone fetches one branch: on another branch of the same remote the copy is cloned
    again, so a push updates the new branch's remote-tracking ref; a copy made by `remote
    add` (all branches) is kept."""
    seed = remote.clone("other")
    git(seed, "push", "--quiet", "origin", "main:refs/heads/dev")
    Repository.objects.filter(pk=repository.pk).update(branch="dev")
    copy = working_copy(Repository.objects.get(pk=repository.pk))
    with copy.locked():
        assert copy.ensure_clone() is True
        fetches = git(copy.path, "config", "--get-all", "remote.origin.fetch").split()
        assert fetches == ["+refs/heads/dev:refs/remotes/origin/dev"]
        git(copy.path, "config", "remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*")
        assert copy.ensure_clone() is False
        head = copy.rev_parse("HEAD")
        sha = copy.commit_objects(
            parent=head,
            changes={"docs/x.txt": ("100644", b"x\n")},
            message="X\n",
            author=("A", "a@example.org"),
            committer=("B", "b@example.org"),
        )
        assert copy.push_loop(lambda: (sha, head)) == sha
        assert copy.rev_parse("refs/remotes/origin/dev") == sha
        assert copy.reset_to_remote() == sha == copy.rev_parse("HEAD")


def test_fetch_head_is_read_only_when_it_is_a_fetch_s(tmp_path: Path):
    path = tmp_path / "FETCH_HEAD"
    assert fetched_head(path) == ""
    sha = "a" * 40
    path.write_text(f"{sha}\t\tbranch 'main' of file:///x\n")
    assert fetched_head(path) == sha
    for text in ("", "not a sha\t\tbranch\n", f"{sha}\n", f"{'A' * 40}\t\tbranch 'main'\n"):
        path.write_text(text)
        assert fetched_head(path) == ""


def test_a_clone_names_its_remote_origin_whatever_the_global_config(
    team, remote, data_dir, tmp_path, monkeypatch
):
    config = tmp_path / "gitconfig"
    config.write_text("[clone]\n\tdefaultRemoteName = upstream\n", encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    with transaction.atomic():
        created = repository_create(
            actor=Actor.system(), team=team, name="app", remote_url=remote.url
        )
    repository = repository_sync(repository_id=created.pk)
    assert repository.last_sync_ok is True, repository.last_error
    assert git(repository.working_dir, "config", "remote.origin.url").strip() == remote.url
