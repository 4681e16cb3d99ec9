"""The mirror reconciles in batches and the refresh spools its records: the brain ends the same
whatever the batch sizes (texts shared across batches, records moved, withdrawn, returned)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bundles import mirror, reconcile
from bundles.models import Chunk, ChunkOrigin
from memoryadmin.audit import Actor
from memoryadmin.models import Team
from memoryadmin.services import team_create
from sources.fetchers import read
from sources.models import Source
from sources.services.lifecycle import source_add, source_approve
from sources.services.refresh import source_refresh
from tests.sources.helpers import record_text, write_source

SHARED = "One text, many records"


def _rounds() -> list[dict[str, str]]:
    """Three versions of one source: shared texts of different kinds (one chunk, the smallest
    ref's fields), then records removed, texts moved between records, and one coming back."""
    first = {
        f"r{i:02d}": record_text(
            f"r{i:02d}",
            title=SHARED if i % 3 == 0 else f"Record {i}",
            kind=("fact", "procedure", "project", "preference")[i // 3 % 4],
            extra=f"tags: ['t{i % 4}']\n",
        )
        for i in range(13)
    }
    second = {k: v for k, v in first.items() if k not in ("r01", "r04", "r09")}
    second["r02"] = record_text("r02", title="Record 5")  # r05's text, now r02's too
    second["r05"] = record_text("r05", title="A new text for r05", kind="procedure")
    second["r07"] = record_text("r07", title=SHARED, kind="preference")
    third = dict(first)
    third["r12"] = record_text("r12", title="Record 12, edited")
    return [first, second, third]


def _team(slug: str) -> Team:
    return team_create(actor=Actor.system(), slug=slug, name=slug.title())


def _brain(team: Team, source: Source) -> list[Any]:
    chunks = {
        c.pk: (c.content, c.memory_type, c.tags, c.zone, c.withdrawn_at is None, c.standalone)
        for c in Chunk.objects.filter(team=team)
    }
    origins = sorted(
        (o.ref.split(":")[-1], o.active, chunks[o.chunk_id][0])
        for o in ChunkOrigin.objects.filter(team=team)
    )
    return [sorted(chunks.values()), origins]


def _run(team: Team, root: Path, *, backwards: bool = False) -> list[list[Any]]:
    states = []
    source = None
    for records in _rounds():
        # backwards: the manifest lists the records in descending id order, so the mirror
        # reads them back from the snapshot instead of taking them from the spool
        write_source(root, dict(reversed(records.items())) if backwards else records)
        if source is None:
            source = source_add(actor=Actor.system(), team=team, location=str(root))
            source_approve(actor=Actor.system(), source=source)
        run = source_refresh(source_id=source.pk)
        assert run.status == "succeeded", run.error
        states.append(_brain(team, source))
    return states


@pytest.mark.django_db
def test_the_brain_is_the_same_in_batches_of_two_as_in_one(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    whole = _run(_team("whole"), tmp_path / "whole")
    monkeypatch.setattr(reconcile, "MIRROR_BATCH", 2)
    monkeypatch.setattr(mirror, "READ_BATCH", 3)
    monkeypatch.setattr(read, "SPOOL_BATCH", 2)
    batched = _run(_team("batched"), tmp_path / "batched")
    assert batched == whole
    assert _run(_team("backwards"), tmp_path / "backwards", backwards=True) == whole
    # the shared text is one chunk with the smallest ref's fields (r00's: a fact)
    shared = [c for c in whole[0][0] if c[0].startswith(SHARED)]
    assert len(shared) == 1 and shared[0][1] == "fact"
    # the second round withdrew r01, r04 and r09; the third brought them back
    assert ("r01", False, "Record 1\n\nSome body text.") in whole[1][1]
    assert ("r01", True, "Record 1\n\nSome body text.") in whole[2][1]


def test_the_spool_gives_its_records_back_in_order_as_often_as_asked(monkeypatch):  # type: ignore[no-untyped-def]
    from formats import openmemories as om

    monkeypatch.setattr(read, "SPOOL_BATCH", 3)
    records = [
        om.parse_record(record_text(f"r{i}", extra="supersedes: ['x']\n"), expected_id=f"r{i}")
        for i in range(8)
    ]
    # a reused record is kept as its path: the last snapshot's records give it back
    previous = {f"records/r{i}.md": records[i] for i in range(0, 8, 2)}
    spool = read.RecordSpool(previous)
    for i, record in enumerate(records):
        spool.append(read.ReadRecord(om.Entry(f"r{i}", f"records/r{i}.md"), record, i % 2 == 0))
    assert len(spool) == 8
    for _ in range(2):
        back = list(spool)
        assert [item.record for item in back] == records
        assert [item.entry.path for item in back] == [f"records/r{i}.md" for i in range(8)]
        assert [item.reused for item in back] == [i % 2 == 0 for i in range(8)]
    spool.close()
