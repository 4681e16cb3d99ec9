"""The index's history answers (`reviews.githistory`), walked since the last indexed head, equal
git's answers over the whole history at every head: adds, deletes, re-adds, renames, merges
(either parent first, resolved either way), a force-push, clocks that go backwards, links that
are missing, folders, or named with spaces, unicode, leading dashes, globs and pathspec magic.

Histories are built commit by commit with plumbing (a tree per commit, any parents, any date),
in a real repository; "git's answer" is today's command run per head: `git log --diff-filter=A`
over the memories' folder, and `git log -1 -- link` per link (with literal pathspecs)."""

from __future__ import annotations

import os
import random
import subprocess
from datetime import datetime
from pathlib import Path

import pytest

from reviews.git import WorkingCopy
from reviews.gitenv import Credential
from reviews.githistory import CACHE_NAME, History

from .conftest import GIT_ENV

FOLDER = ".memoryrail/memories"
SOURCES = [
    "src/a.py",
    "src/b.py",
    "src/sub/c.py",
    "docs/read me.md",
    "docs/ünïcødé.md",
    "-rf",
    "--output=x",
    "src/*.py",
    "src/[ab].py",
    ":(exclude)src",
    ":!src",
]
MEMORIES = [f"{FOLDER}/m{n}.md" for n in range(5)] + [f"{FOLDER}/with space é.md"]
LINKS = [*SOURCES, "src", "src/", "src/sub", "docs/", "gone.txt", "src/a.py/", "./src/a.py"]
START = 1_700_000_000


class Repo:
    """A repository whose commits are made from Python dicts: {path: content} per commit."""

    def __init__(self, path: Path) -> None:
        self.path = path
        subprocess.run(["git", "init", "--quiet", "-b", "main", str(path)], check=True)
        self.trees: dict[str, dict[str, str]] = {}
        self.blobs: dict[str, str] = {}
        self.clock = START

    def git(self, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(
            ["git", *args],
            cwd=self.path,
            env={**os.environ, **GIT_ENV, **(env or {})},
            input=stdin,
            capture_output=True,
            check=True,
        )
        return done.stdout.decode()

    def commit(
        self, parents: list[str], files: dict[str, str], *, step: int = 60, author: str = "Ann"
    ) -> str:
        self.clock += step
        for content in set(files.values()) - set(self.blobs):
            self.blobs[content] = self.git(
                "hash-object", "-w", "--stdin", stdin=content.encode()
            ).strip()
        index = {"GIT_INDEX_FILE": str(self.path / ".git" / "test-index")}
        self.git("read-tree", "--empty", env=index)
        listing = "".join(f"100644 {self.blobs[c]}\t{p}\0" for p, c in files.items())
        stdin = listing.encode("utf-8", "surrogateescape")  # a name may hold any bytes
        self.git("update-index", "-z", "--index-info", stdin=stdin, env=index)
        tree = self.git("write-tree", env=index).strip()
        stamp = f"{self.clock} +0000"
        who = {
            "GIT_AUTHOR_NAME": author,
            "GIT_AUTHOR_EMAIL": f"{author.lower()}@example.org",
            "GIT_AUTHOR_DATE": stamp,
            "GIT_COMMITTER_DATE": stamp,
        }
        args = [part for parent in parents for part in ("-p", parent)]
        sha = self.git("commit-tree", tree, *args, "-m", f"at {self.clock}", env=who).strip()
        self.trees[sha] = dict(files)
        return sha

    def move_main(self, sha: str) -> None:
        self.git("update-ref", "refs/heads/main", sha)

    # today's answers, over the whole history

    def added(self) -> dict[str, tuple[str, str, str, str]]:
        output = self.git(
            "log",
            "--diff-filter=A",
            "--name-only",
            "-z",
            "--format=%x1e%H%x1f%an%x1f%ae%x1f%aI",
            "HEAD",
            "--",
            FOLDER,
        )
        result: dict[str, tuple[str, str, str, str]] = {}
        for record in output.split("\x1e")[1:]:
            header, _, names = record.partition("\0")
            sha, name, email, date = header.split("\x1f")
            for path in names.removeprefix("\n").split("\0"):
                if path and path not in result:
                    result[path] = (sha, name, email, date)
        return result

    def time(self, link: str) -> datetime | None:
        output = self.git(
            "log", "-1", "--format=%cI", "HEAD", "--", link, env={"GIT_LITERAL_PATHSPECS": "1"}
        ).strip()
        return datetime.fromisoformat(output) if output else None


class CountingCopy(WorkingCopy):
    """A working copy that records the history commands it runs."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            path=path,
            remote_url="file:///nowhere",
            branch="main",
            credential=Credential(),
            lock_name=f"history-test-{path.name}",
        )
        self.commands: list[tuple[str, ...]] = []

    def history(self, command: str, *args: str, **kwargs) -> str:  # type: ignore[no-untyped-def]
        self.commands.append((command, *args))
        return super().history(command, *args, **kwargs)


def answers(repo: Repo, copy: CountingCopy, links: list[str] = LINKS) -> History:
    """Index the repository's main head with the kept answers, and compare with git's."""
    head = repo.git("rev-parse", "HEAD").strip()
    copy.commands.clear()
    with copy.locked():
        history = History(copy, head, folder=FOLDER)
        added = history.added_by()
        times = history.link_times(links)
        history.save()
    assert added == repo.added()
    assert times == {link: repo.time(link) for link in links}
    return history


def walked_in_full(copy: CountingCopy) -> bool:
    return any("--diff-filter=A" in command for command in copy.commands)


def per_link_walks(copy: CountingCopy) -> int:
    return sum(1 for command in copy.commands if command[:2] == ("log", "-1"))


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return Repo(tmp_path / "repo")


@pytest.fixture
def copy(repo: Repo, settings, tmp_path: Path) -> CountingCopy:
    settings.REDIS_URL = ""  # a file lock in the test's own folder
    settings.LOCK_DIR = tmp_path / "locks"
    return CountingCopy(repo.path)


def test_it_walks_only_the_new_commits_of_a_linear_history_and_answers_as_git(repo, copy):
    files = {path: "v1" for path in SOURCES} | {MEMORIES[0]: "m0", MEMORIES[-1]: "spaced"}
    head = repo.commit([], files)
    repo.move_main(head)
    first = answers(repo, copy)
    assert first.base is None and walked_in_full(copy)
    assert per_link_walks(copy) == 1  # one walk for all links but ./src/a.py
    steps = [
        {MEMORIES[1]: "m1"},  # an add
        {"src/a.py": "v2"},  # a linked file changes
        {MEMORIES[0]: None},  # a delete
        {MEMORIES[0]: "m0 again"},  # a re-add: the newest add wins
        {MEMORIES[1]: None, MEMORIES[2]: "m1"},  # a rename (git detects it: no add)
        {"src/sub/c.py": "v2", "src/*.py": "v2"},  # a folder's file, a glob-named file
        {"src/b.py": None},  # a linked file deleted
        {},  # an empty commit
    ]
    for change in steps:
        files = {**files, **change}
        files = {path: text for path, text in files.items() if text is not None}
        head = repo.commit([head], files)
        repo.move_main(head)
        history = answers(repo, copy)
        assert history.base is not None
        assert not walked_in_full(copy)
        assert per_link_walks(copy) == 1  # only ./src/a.py, a spelling left to git
    assert repo.added()[MEMORIES[0]][0] != repo.added()[MEMORIES[1]][0]
    again = answers(repo, copy)  # the same head: nothing walked at all
    assert again.base == again.head and copy.commands == []


def test_a_glob_or_magic_link_is_a_literal_path(repo, copy):
    files = {path: "v1" for path in SOURCES}
    head = repo.commit([], files)
    glob_added = head
    head = repo.commit([head], {**files, "src/a.py": "v2", "src/b.py": "v2"})
    repo.move_main(head)
    answers(repo, copy)
    times = {link: copy.last_commit_time(link) for link in ("src/*.py", "src/[ab].py", ":!src")}
    first = datetime.fromisoformat(repo.git("log", "-1", "--format=%cI", glob_added).strip())
    assert times == {"src/*.py": first, "src/[ab].py": first, ":!src": first}


def test_merges_either_parent_first_and_either_resolution_answer_as_git(repo, copy):
    files = {path: "v1" for path in SOURCES} | {MEMORIES[0]: "m0"}
    root = repo.commit([], files)
    side = repo.commit([root], {**files, "src/a.py": "side", MEMORIES[1]: "side memory"})
    main = repo.commit([root], {**files, "src/b.py": "main"})
    repo.move_main(main)
    answers(repo, copy)
    # a merge taking the side's a.py: git follows the side for it, a fork older than the base
    merged = {**files, "src/a.py": "side", "src/b.py": "main", MEMORIES[1]: "side memory"}
    head = repo.commit([main, side], merged)
    repo.move_main(head)
    answers(repo, copy)
    # a linked file changed and changed back on the main line, then a merge the same in both
    back = repo.commit([head], {**merged, "src/sub/c.py": "v2"})
    back = repo.commit([back], merged)
    fork = repo.commit([head], {**merged, "docs/read me.md": "fork"})
    repo.move_main(back)
    answers(repo, copy)
    head = repo.commit([fork, back], {**merged, "docs/read me.md": "fork"})  # fork first
    repo.move_main(head)
    answers(repo, copy)
    # a merge resolved to the main line's files ("ours"), then one adding a file of neither
    other = repo.commit([head], {**merged, "src/b.py": "other", MEMORIES[2]: "other"})
    ours = repo.commit([head], {**merged, "docs/read me.md": "fork", "src/a.py": "ours"})
    repo.move_main(ours)
    answers(repo, copy)
    head = repo.commit([ours, other], repo.trees[ours])
    repo.move_main(head)
    answers(repo, copy)
    evil = repo.commit([head, other], {**repo.trees[head], MEMORIES[3]: "evil"})
    repo.move_main(evil)
    answers(repo, copy)


def test_a_force_push_walks_the_new_history_in_full(repo, copy):
    files = {path: "v1" for path in SOURCES} | {MEMORIES[0]: "m0"}
    root = repo.commit([], files)
    head = repo.commit([root], {**files, MEMORIES[1]: "m1", "src/a.py": "v2"})
    repo.move_main(head)
    answers(repo, copy)
    rewritten = repo.commit([root], {**files, MEMORIES[1]: "m1 rewritten"})
    repo.move_main(rewritten)
    history = answers(repo, copy)
    assert history.base is None and walked_in_full(copy)


def test_clocks_that_go_backwards_answer_as_git(repo, copy):
    files = {path: "v1" for path in SOURCES}
    root = repo.commit([], files)
    repo.move_main(root)
    answers(repo, copy)
    side = repo.commit([root], {**files, "src/a.py": "side"}, step=-5000)  # dated before root
    main = repo.commit([root], {**files, "src/b.py": "main"}, step=0)
    head = repo.commit([main, side], {**files, "src/a.py": "side", "src/b.py": "main"}, step=0)
    repo.move_main(head)
    answers(repo, copy)


def test_an_unreadable_or_foreign_cache_is_ignored(repo, copy):
    head = repo.commit([], {MEMORIES[0]: "m0", "src/a.py": "v1"})
    repo.move_main(head)
    answers(repo, copy)
    cache = repo.path / ".git" / CACHE_NAME
    for text in ("{", '{"version": 1}', '{"version": 1, "head": "HEAD", "folder": "x"}'):
        cache.write_text(text)
        assert answers(repo, copy).base is None and walked_in_full(copy)


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_random_histories_answer_as_git_at_every_head(repo, copy, seed):
    """Random edits on two lines of work, merges of forks of any age in either parent order and
    with any resolution, skewed clocks, and now and then a force-push."""
    rng = random.Random(seed)
    paths = SOURCES + MEMORIES
    files = {path: "v0" for path in rng.sample(paths, 8)}
    main = side = repo.commit([], files)
    repo.move_main(main)
    answers(repo, copy)
    mains = [main]
    incremental = 0
    for _ in range(25):
        roll = rng.random()
        step = rng.choice([60, 60, 0, -90, 3600])
        if roll < 0.2 and len(mains) > 2:
            side = rng.choice(mains[:-1])  # a fork of any age
        if roll < 0.45:
            tree = dict(repo.trees[side])
            for path in rng.sample(paths, 2):
                if path in tree and rng.random() < 0.3:
                    del tree[path]
                else:
                    tree[path] = rng.choice(["v1", "v2", "v3"])
            side = repo.commit([side], tree, step=step, author=rng.choice(["Ann", "Bob"]))
            continue
        if roll < 0.65 and side != main:
            ours, theirs = repo.trees[main], repo.trees[side]
            tree = {
                p: rng.choice([c for c in (ours.get(p), theirs.get(p)) if c])
                for p in sorted({*ours, *theirs})
            }
            tree = {p: c for p, c in tree.items() if rng.random() < 0.9 or p not in ours}
            parents = [main, side] if rng.random() < 0.7 else [side, main]
            main = repo.commit(parents, tree, step=step)
        elif roll < 0.7 and len(mains) > 3:
            main = rng.choice(mains[:-2])  # a force-push back to an older head
        else:
            tree = dict(repo.trees[main])
            for path in rng.sample(paths, rng.choice([1, 2])):
                if path in tree and rng.random() < 0.3:
                    del tree[path]
                elif path in tree and path.startswith(FOLDER) and rng.random() < 0.3:
                    tree[rng.choice(MEMORIES)] = tree.pop(path)  # a rename
                else:
                    tree[path] = rng.choice(["v1", "v2", "v3"])
            main = repo.commit([main], tree, step=step, author=rng.choice(["Ann", "Bob"]))
        mains.append(main)
        repo.move_main(main)
        history = answers(repo, copy)
        incremental += history.base is not None and not walked_in_full(copy)
    assert incremental > 0


def test_links_new_since_the_last_index_are_walked_per_link_when_few_and_together_when_many(
    repo, copy
):
    sources = [f"lib/f{n}.py" for n in range(20)]
    head = repo.commit([], dict.fromkeys(sources, "v1"))
    head = repo.commit([head], {**dict.fromkeys(sources, "v1"), "lib/f3.py": "v2"})
    repo.move_main(head)
    answers(repo, copy, links=sources[:2])
    head = repo.commit([head], {**repo.trees[head], "lib/f1.py": "v3"})
    repo.move_main(head)
    answers(repo, copy, links=sources[:5])  # three new: one walk each
    assert per_link_walks(copy) == 3 and not walked_in_full(copy)
    head = repo.commit([head], {**repo.trees[head], "lib/f4.py": "v3"})
    repo.move_main(head)
    answers(repo, copy, links=sources)  # fifteen new: one walk of the history for them all
    assert per_link_walks(copy) == 0
    full = [c for c in copy.commands if "--root" in c and not any(a[0] == "^" for a in c)]
    assert len(full) == 1


def test_answers_that_cannot_be_kept_cost_the_next_index_a_full_walk_not_this_one(repo, copy):
    head = repo.commit([], {MEMORIES[0]: "m0", "src/a.py": "v1"})
    repo.move_main(head)
    (repo.path / ".git" / f"{CACHE_NAME}.tmp").mkdir()  # the write fails
    answers(repo, copy)
    head = repo.commit([head], {MEMORIES[0]: "m0", "src/a.py": "v2"})
    repo.move_main(head)
    assert answers(repo, copy).base is None and walked_in_full(copy)


def test_answers_for_a_file_name_that_is_not_utf8_are_kept_as_read(repo, copy):
    """git hands back a name's bytes that are not UTF-8 as surrogates: the kept answers escape
    them (the fast encoder refuses them) and the next index starts from them."""
    odd = f"{FOLDER}/m\udce9.md"  # the byte 0xE9 alone, as git's output decodes it
    head = repo.commit([], {odd: "m0"})
    repo.move_main(head)
    with copy.locked():
        history = History(copy, head, folder=FOLDER)
        assert set(history.added_by()) == {odd}
        history.link_times([])
        history.save()
    head = repo.commit([head], {odd: "m0", MEMORIES[1]: "m1"})
    repo.move_main(head)
    copy.commands.clear()
    with copy.locked():
        again = History(copy, head, folder=FOLDER)
        added = again.added_by()
    assert again.base is not None and not walked_in_full(copy)
    assert set(added) == {odd, MEMORIES[1]} and added[odd] == history.added_by()[odd]
