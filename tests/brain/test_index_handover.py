"""An index hands the brain its active memories as it stored them (reviews.signals): the mirror
need not read them back, and both ways give the same memories, in the same order, and the same
brain."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import transaction

from bundles.mirror import _stored_memories, brain_mirror_repository
from bundles.models import Chunk, ChunkOrigin
from memoryadmin.audit import Actor
from reviews.models import Memory
from reviews.services.repositories import repository_create, repository_sync
from reviews.signals import repository_indexed
from tests.reviews.conftest import M, memory_text


@contextmanager
def _handed() -> Iterator[list[Any]]:
    """The `memories` each `repository_indexed` in the block carried."""
    seen: list[Any] = []

    def receiver(sender: Any, **kwargs: Any) -> None:
        seen.append(kwargs.get("memories"))

    repository_indexed.connect(receiver, dispatch_uid="tests.handed")
    try:
        yield seen
    finally:
        repository_indexed.disconnect(dispatch_uid="tests.handed")


def _brain(team) -> list[tuple[Any, ...]]:  # type: ignore[no-untyped-def]
    chunks = Chunk.objects.filter(team=team).order_by("content_hash")
    rows = chunks.values_list(
        "content_hash", "memory_type", "tags", "zone", "is_pinned", "metadata"
    )
    origins = ChunkOrigin.objects.filter(team=team).order_by("ref")
    return [*rows, *origins.values_list("ref", "chunk__content_hash", "active", "metadata")]


def _check(repository, seen: list[Any]) -> None:  # type: ignore[no-untyped-def]
    assert len(seen) == 1 and seen[0] is not None
    handed = seen[0]
    assert handed == _stored_memories(repository)  # what a read back would give, in order
    assert [m.memory_id for m in handed] == sorted(m.memory_id for m in handed)
    active = Memory.objects.filter(repository=repository, status="active")
    assert {m.memory_id for m in handed} == set(active.values_list("memory_id", flat=True))
    before = _brain(repository.team)
    result = brain_mirror_repository(repository=repository)  # the read-back way
    assert not result.changed and _brain(repository.team) == before


def test_the_index_hands_over_its_active_memories_as_stored(team, remote, data_dir):
    with transaction.atomic():
        repository = repository_create(
            actor=Actor.system(), team=team, name="app", remote_url=remote.url
        )
    with _handed() as seen:  # the first index: every row is new
        repository_sync(repository_id=repository.pk)
    repository.refresh_from_db()
    _check(repository, seen)
    assert {m.memory_id for m in seen[0]} == {"20260101-use-postgres", "20260102-no-orm-magic"}

    remote.commit(
        {
            f"{M}/20260101-use-postgres.md": memory_text(
                "20260101-use-postgres", title="Use PostgreSQL 16", links=["src/db"]
            ),
            f"{M}/20260102-no-orm-magic.md": None,
            f"{M}/20260301-a-b.md": memory_text(
                "20260301-a-b", title="Pinned", pinned="true", tags=["ops", 1.5, 2, True]
            ),
            f"{M}/20260301-ab.md": memory_text("20260301-ab", type="gotcha", title="Gotcha"),
            f"{M}/20260301-old.md": memory_text("20260301-old", title="Old", status="archived"),
        },
        "Edit, add, remove",
    )
    with _handed() as seen:  # edited, new, removed and held rows
        repository_sync(repository_id=repository.pk)
    repository.refresh_from_db()
    _check(repository, seen)
    handed = {m.memory_id: m for m in seen[0]}
    assert set(handed) == {"20260101-use-postgres", "20260301-a-b", "20260301-ab"}
    assert handed["20260101-use-postgres"].title == "Use PostgreSQL 16"

    with _handed() as seen:  # nothing moved: every row is the stored one
        repository_sync(repository_id=repository.pk)
    _check(repository, seen)
