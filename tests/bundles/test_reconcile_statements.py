"""The reconcile's writes by id: on PostgreSQL one statement per list of ids (one array
parameter), elsewhere LOOKUP_BATCH ids a statement; the brain ends the same either way."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from bundles import mirror_chunks, reconcile
from bundles.mirrored import Mirrored
from bundles.models import Chunk, ChunkOrigin, OriginKind
from memoryadmin.audit import Actor
from memoryadmin.batching import LOOKUP_BATCH
from memoryadmin.models import Team

COUNT = LOOKUP_BATCH * 2 + 100  # more ids than two of SQLite's statements take


def _items(group: str, count: int = COUNT) -> Iterator[Mirrored]:
    for n in range(count):
        ref = f"{group}:r{n:05d}"
        yield Mirrored(
            ref=ref,
            content=f"Record {n}\n\nThe same text in both sources.",
            memory_type="fact",
            tags=["shared"],
            zone="standard",
            is_pinned=False,
            provenance={"origin": "source", "ref": ref, "source_id": 1, "stale": False},
        )


def _mirror(team: Team, group: str, items: Iterator[Mirrored]):  # type: ignore[no-untyped-def]
    with CaptureQueriesContext(connection) as queries:
        result = reconcile._reconcile(
            team=team,
            group=group,
            kind=OriginKind.SOURCE,
            wanted=items,
            actor=Actor.system(),
            label=group,
        )
    return result, [q["sql"] for q in queries.captured_queries]


def _writes(statements: list[str], pattern: str) -> list[str]:
    return [sql for sql in statements if re.match(pattern, sql)]


def _expected(count: int) -> int:
    """Statements for `count` ids: one on PostgreSQL, LOOKUP_BATCH ids each elsewhere."""
    return 1 if connection.vendor == "postgresql" else math.ceil(count / LOOKUP_BATCH)


@pytest.mark.django_db
def test_it_writes_a_list_of_ids_in_one_statement_on_postgresql(team):
    _mirror(team, "source:a", _items("source:a"))
    # the same texts from a second source: its origins bump every held chunk
    result, statements = _mirror(team, "source:b", _items("source:b"))
    assert result.origins_created == COUNT and result.chunks_created == 0
    bumps = _writes(statements, r'UPDATE "bundles_chunk" SET "updated_at"')
    assert len(bumps) == _expected(COUNT)
    if connection.vendor == "postgresql":
        assert "= ANY(" in bumps[0] and " IN (" not in bumps[0]
    run_at = ChunkOrigin.objects.filter(team=team, group="source:b").values("updated_at")[:1]
    assert Chunk.objects.filter(team=team, updated_at=run_at).count() == COUNT

    # both withdrawn: the second's origins in one statement, then the chunks marked withdrawn
    result, statements = _mirror(team, "source:b", iter(()))
    assert result.deactivated == COUNT
    assert len(_writes(statements, r'UPDATE "bundles_chunkorigin" SET "active"')) == _expected(
        COUNT
    )
    assert not Chunk.objects.filter(team=team, withdrawn_at__isnull=False).exists()
    result, statements = _mirror(team, "source:a", iter(()))
    marks = _writes(statements, r'UPDATE "bundles_chunk" SET "withdrawn_at"')
    assert len(marks) == _expected(COUNT)
    assert Chunk.objects.filter(team=team, withdrawn_at__isnull=False).count() == COUNT

    # one comes back: its chunks are no longer withdrawn
    result, statements = _mirror(team, "source:a", _items("source:a"))
    assert result.activated == COUNT
    assert len(_writes(statements, r'UPDATE "bundles_chunk" SET "withdrawn_at"')) == _expected(
        COUNT
    )
    assert not Chunk.objects.filter(team=team, withdrawn_at__isnull=False).exists()


@pytest.mark.django_db
def test_a_long_list_is_cut_into_array_batches(team, monkeypatch):
    monkeypatch.setattr(mirror_chunks, "ARRAY_BATCH", 300)
    _mirror(team, "source:a", _items("source:a", 700))
    result, statements = _mirror(team, "source:a", iter(()))
    assert result.deactivated == 700
    deactivations = _writes(statements, r'UPDATE "bundles_chunkorigin" SET "active"')
    size = 300 if connection.vendor == "postgresql" else min(300, LOOKUP_BATCH)
    assert len(deactivations) == math.ceil(700 / size)
    assert not ChunkOrigin.objects.filter(team=team, active=True).exists()
    assert Chunk.objects.filter(team=team, withdrawn_at__isnull=False).count() == 700
