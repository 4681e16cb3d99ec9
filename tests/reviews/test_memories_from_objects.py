"""The review working copy keeps no memory files on disk: the index reads them from git's
objects (as committed, whatever `.gitattributes` would convert in a checkout), and a link into
the memories folder is judged against the tree (real git remote, real sync)."""

from __future__ import annotations

import pytest

from reviews.models import Memory
from reviews.services.repositories import repository_sync

from .conftest import M, git, memory_text

pytestmark = pytest.mark.django_db

LINKING = "20260301-links-memories"


def test_a_sync_indexes_every_memory_with_none_on_disk(repository):
    assert not (repository.working_dir / M).exists()
    assert (repository.working_dir / ".memoryrail/config.json").is_file()
    assert Memory.objects.filter(repository=repository).count() == 5


def test_a_crlf_converting_attribute_no_longer_changes_what_is_indexed(repository, remote):
    """Behaviour change: a checkout would write the file with CRLF line ends; the index reads
    the blob, the bytes that were committed."""
    before = Memory.objects.get(repository=repository, memory_id="20260102-no-orm-magic")
    remote.commit({".gitattributes": "*.md text eol=crlf\n"}, "CRLF on checkout")
    synced = repository_sync(repository_id=repository.pk)
    assert synced.last_sync_ok, synced.last_error
    after = Memory.objects.get(repository=repository, memory_id="20260102-no-orm-magic")
    assert "\r" not in after.body and after.body == before.body
    assert after.front_matter == before.front_matter and after.blob_sha == before.blob_sha


def test_a_link_into_the_memories_folder_is_judged_against_the_tree(repository, remote):
    links = [f"{M}/20260102-no-orm-magic.md", M, f"{M}/./20260101-use-postgres.md", f"{M}/gone.md"]
    remote.commit(
        {
            f"{M}/{LINKING}.md": memory_text(
                LINKING, links=links, updated="2099-01-01T00:00:00.000Z"
            )
        },
        "Link memories",
    )
    synced = repository_sync(repository_id=repository.pk)
    assert synced.last_sync_ok, synced.last_error
    memory = Memory.objects.get(repository=repository, memory_id=LINKING)
    assert [(s["code"], s["link"]) for s in memory.stale] == [("stale-link", f"{M}/gone.md")]
    assert not (repository.working_dir / M).exists()


def test_a_link_through_a_symlink_of_the_memories_folder_resolves_as_a_checkout_would(
    repository, remote
):
    path = remote.clone("elsewhere")
    (path / M / "evil.md").symlink_to("/etc/passwd")
    (path / M / "alias.md").symlink_to("20260102-no-orm-magic.md")
    (path / M / "up.md").symlink_to("../../src/db/schema.sql")
    links = [f"{M}/evil.md", f"{M}/alias.md", f"{M}/up.md"]
    text = memory_text(LINKING, links=links, updated="2099-01-01T00:00:00.000Z")
    (path / M / f"{LINKING}.md").write_text(text, encoding="utf-8")
    git(path, "add", "-A")
    git(path, "commit", "--quiet", "-m", "symlinks")
    git(path, "push", "--quiet", "origin", "main")
    synced = repository_sync(repository_id=repository.pk)
    assert synced.last_sync_ok, synced.last_error
    memory = Memory.objects.get(repository=repository, memory_id=LINKING)
    assert [(s["code"], s["link"]) for s in memory.stale] == [("link-outside-repo", f"{M}/evil.md")]


def test_an_oversized_memory_blob_is_not_read_and_is_reported_as_read_project_does(
    repository, remote, blobs_read
):
    """One pushed file over the limit must not fill the worker's memory: its size (from the
    tree listing) keeps it out of the blob read, and the problem is read_project's own."""
    from formats import memoryrail

    name = f"{M}/20260401-huge.md"
    huge = memory_text("20260401-huge") + "x" * (4 * memoryrail.MAX_MEMORY_BYTES)
    remote.commit({name: huge}, "A huge memory")
    synced = repository_sync(repository_id=repository.pk)
    assert synced.last_sync_ok, synced.last_error
    synced.refresh_from_db()
    problems = [p for p in synced.problems if p["path"] == name]
    checkout = remote.clone("checkout")
    git(checkout, "pull", "--quiet", "--ff-only")
    expected = [p for p in memoryrail.read_project(checkout).problems if p.path == name]
    assert [(p["code"], p["message"]) for p in problems] == [(p.code, p.message) for p in expected]
    assert problems and problems[0]["code"] == "too-large"
    asked = [sha for batch in blobs_read for sha in batch]
    assert asked and git(checkout, "rev-parse", f"HEAD:{name}").strip() not in asked
    assert not Memory.objects.filter(repository=repository, memory_id="20260401-huge").exists()
