"""What an index reads: every memory file from one listing of the folder, each parsed strictly,
no symlink followed, and nothing asked of the database (round 6 read every stored front
matter back to skip parses that now cost less than that read)."""

from __future__ import annotations

import os

import pytest

from formats import memoryrail
from formats.memoryrail import core
from reviews.services.index import index_read
from reviews.services.repositories import working_copy

from .conftest import M, memory_text

pytestmark = pytest.mark.django_db


def test_an_index_read_asks_the_database_nothing(repository, django_assert_num_queries):
    copy = working_copy(repository)
    with copy.locked():
        head = copy.sync()
        with django_assert_num_queries(0):
            snapshot = index_read(copy, head, repository=repository)
    assert snapshot.rows and snapshot.config is not None
    assert all(row["blob_sha"] for row in snapshot.rows)


def _project(tmp_path):  # type: ignore[no-untyped-def]
    (tmp_path / M).mkdir(parents=True)
    (tmp_path / ".memoryrail/config.json").write_text('{"version": 1}', encoding="utf-8")
    return tmp_path / M


def test_it_reads_what_a_glob_of_md_files_finds_and_only_regular_files(tmp_path):
    folder = _project(tmp_path)
    outside = tmp_path.parent / f"{tmp_path.name}-outside.md"
    outside.write_text(memory_text("20260101-outside"), encoding="utf-8")
    for memory_id in ("20260101-plain", ".20260101-hidden"):
        (folder / f"{memory_id}.md").write_text(memory_text(memory_id), encoding="utf-8")
    (folder / "20260101-upper.MD").write_text(memory_text("20260101-upper"), encoding="utf-8")
    (folder / "20260101-folder.md").mkdir()
    (folder / "20260101-link.md").symlink_to(outside)
    os.mkfifo(folder / "20260101-pipe.md")
    project = memoryrail.read_project(tmp_path)
    assert [m.id for m in project.memories] == [".20260101-hidden", "20260101-plain"]
    not_regular = sorted(p.path for p in project.problems if p.code == "file-not-regular")
    assert not_regular == [f"{M}/20260101-{name}.md" for name in ("folder", "link", "pipe")]
    assert [m.path for m in project.memories] == sorted(project.data)


def test_a_file_swapped_for_a_symlink_after_the_listing_is_not_followed(tmp_path, monkeypatch):
    folder = _project(tmp_path)
    outside = tmp_path.parent / f"{tmp_path.name}-secret.md"
    outside.write_text(memory_text("20260101-swapped"), encoding="utf-8")
    (folder / "20260101-swapped.md").symlink_to(outside)
    # the listing saw a regular file; by the open it is a symlink out of the repository
    monkeypatch.setattr(core, "_memory_entries", lambda directory: [("20260101-swapped.md", True)])
    project = memoryrail.read_project(tmp_path)
    assert project.memories == [] and project.data == {}
    assert [(p.code, p.path) for p in project.problems] == [
        ("file-not-regular", f"{M}/20260101-swapped.md")
    ]
