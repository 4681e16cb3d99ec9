"""A sync after new commits walks only them, and stores what a sync from scratch stores:
the proposer (the newest commit adding each memory) and the staleness of every link."""

from __future__ import annotations

import json

import pytest

from formats import memoryrail
from reviews.git import WorkingCopy
from reviews.githistory import CACHE_NAME
from reviews.models import Memory
from reviews.services.repositories import repository_sync, working_copy

from .conftest import M, git, memory_text

pytestmark = pytest.mark.django_db

FIELDS = ("memory_id", "path", "author_name", "author_email", "added_commit", "added_at", "stale")


def stored(repository) -> list[tuple]:  # type: ignore[no-untyped-def]
    return list(
        Memory.objects.filter(repository=repository).order_by("memory_id").values_list(*FIELDS)
    )


def test_a_sync_after_new_commits_walks_only_them_and_stores_what_a_full_walk_does(
    repository, remote, monkeypatch
):
    other = {"GIT_AUTHOR_NAME": "Bob Other", "GIT_AUTHOR_EMAIL": "bob@example.org"}
    remote.commit({"src/db/schema.sql": "create table t (id bigint);\n"}, "Change the schema")
    path = remote.clone("elsewhere")
    (path / M / "20260301-new.md").write_text(
        memory_text(
            "20260301-new",
            status="proposed",
            updated="2099-01-01T00:00:00.000Z",
            links=["src/db", "src/gone.txt"],
        ),
        encoding="utf-8",
    )
    git(path, "add", "-A")
    git(path, "commit", "--quiet", "-m", "Propose", env=other)
    git(path, "push", "--quiet", "origin", "main")
    remote.commit({f"{M}/20260102-no-orm-magic.md": None}, "Drop one")
    calls: list[str] = []
    original = WorkingCopy.history

    def history(self, command, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(" ".join((command, *args)))
        return original(self, command, *args, **kwargs)

    monkeypatch.setattr(WorkingCopy, "history", history)
    repository = repository_sync(repository_id=repository.pk)
    assert not any("--diff-filter=A" in call for call in calls)  # no walk of the whole history
    assert not any(call.startswith("log -1") for call in calls)  # nor one per link
    cache = json.loads((working_copy(repository).path / ".git" / CACHE_NAME).read_text())
    assert cache["head"] == repository.head_commit
    incremental = stored(repository)
    proposed = Memory.objects.get(repository=repository, memory_id="20260301-new")
    assert (proposed.author_name, proposed.author_email) == ("Bob Other", "bob@example.org")
    assert [s["code"] for s in proposed.stale] == ["stale-link"]  # src/gone.txt
    postgres = Memory.objects.get(repository=repository, memory_id="20260101-use-postgres")
    assert [s["code"] for s in postgres.stale] == ["maybe-stale"]  # src/db changed since
    # the same head from scratch: the whole history walked, the same rows
    (working_copy(repository).path / ".git" / CACHE_NAME).unlink()
    Memory.objects.filter(repository=repository).delete()
    calls.clear()
    repository = repository_sync(repository_id=repository.pk)
    assert any("--diff-filter=A" in call for call in calls)
    assert stored(repository) == incremental


def test_the_index_asks_every_link_once_and_in_order(tmp_path):
    memories = [
        memoryrail.Memory(
            id=f"m{n}",
            type="decision",
            title="t",
            status="active",
            created="2026-01-01T00:00:00Z",
            updated="2026-01-01T00:00:00Z",
            path=f"{M}/m{n}.md",
            meta={},
            body="",
            body_line=1,
            links=links,
        )
        for n, links in enumerate([("b", "a"), ("a", "missing"), ("../up",), ("c",)])
    ]
    for name in "abc":
        (tmp_path / name).write_text("x")
    asked: list[list[str]] = []

    def times(links):  # type: ignore[no-untyped-def]
        asked.append(links)
        return dict.fromkeys(links)

    stale = memoryrail.check_staleness(memories, root=tmp_path, last_commit_times=times)
    assert asked == [["b", "a", "c"]]
    assert [(s.code, s.id, s.link) for s in stale] == [
        ("stale-link", "m1", "missing"),
        ("link-outside-repo", "m2", "../up"),
    ]


@pytest.mark.parametrize("links", [1, 12])  # per link, and one walk for many
def test_memoryrail_check_reads_a_glob_shaped_link_as_the_file_it_names(tmp_path, links):
    import io

    from django.core.management import call_command

    root = tmp_path / "repo"
    root.mkdir()
    git(tmp_path, "init", "--quiet", "-b", "main", str(root))
    (root / ".memoryrail" / "memories").mkdir(parents=True)
    (root / ".memoryrail" / "config.json").write_text('{"version": 1, "review": "agents"}\n')
    (root / "src").mkdir()
    names = ["src/*.py", *(f"src/f{n}.py" for n in range(links - 1))]
    for name in [*names, "src/other.py"]:
        (root / name).write_text("v1\n")
    (root / M / "20260101-glob.md").write_text(
        memory_text("20260101-glob", updated="2026-06-01T00:00:00.000Z", links=names)
    )
    git(root, "add", "-A")
    before = {
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    }
    git(root, "commit", "--quiet", "-m", "first", env=before)
    (root / "src/other.py").write_text("v2\n")  # after the memory's update: a glob would match
    after = {
        "GIT_COMMITTER_DATE": "2026-09-01T00:00:00Z",
        "GIT_AUTHOR_DATE": "2026-09-01T00:00:00Z",
    }
    git(root, "commit", "--quiet", "-am", "later", env=after)
    out = io.StringIO()
    call_command("memoryrail_check", str(root), "--json", stdout=out)
    assert json.loads(out.getvalue())["stale"] == []
