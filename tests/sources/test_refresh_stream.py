"""A local source's full read streamed into its swap (sources.services.refresh_stream): the
brain and the snapshot are written while the read goes on, inside the swap's transaction, and
none of it is seen before the commit; a read that fails half-way keeps the last good snapshot;
a read whose records the mirror could not take as read is stored the unstreamed way."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from bundles import reconcile
from bundles.models import Chunk, ChunkOrigin
from memoryadmin.audit import Actor
from sources import fetchers
from sources.fetchers.local import LocalFetcher
from sources.models import Record, RefreshRun, RunStatus, Source
from sources.services import lifecycle, refresh, refresh_stream
from sources.services.lifecycle import source_add, source_approve
from tests.sources.helpers import record_text, write_source

IDS = [f"r{n:02d}" for n in range(8)]


@pytest.fixture
def small_batches(monkeypatch):  # type: ignore[no-untyped-def]
    """Hand over, store and mirror two records at a time, so an 8-record read is written
    batch by batch while it goes on."""
    monkeypatch.setattr(refresh_stream, "HANDOVER", 1)
    monkeypatch.setattr(refresh_stream, "STORE_BATCH", 2)
    monkeypatch.setattr(reconcile, "MIRROR_BATCH", 2)


@pytest.fixture(params=["process", "thread"])
def read_mode(request, settings) -> str:  # type: ignore[no-untyped-def]
    """The read in a process forked for it (the default), or on a thread of the refresh's."""
    settings.SOURCE_READ_PROCESS = request.param == "process"
    return request.param


@pytest.fixture
def on_thread(settings) -> None:  # type: ignore[no-untyped-def]
    """The read on a thread: the test watches the read's own calls from this process."""
    settings.SOURCE_READ_PROCESS = False


@pytest.fixture
def streamed(monkeypatch) -> list[str]:  # type: ignore[no-untyped-def]
    """How each swap of a streamed read ended: keeping what it streamed, or rolled back to
    the unstreamed way."""
    ways: list[str] = []
    kept, usual = refresh_stream.snapshot_create, refresh_stream.refresh_succeeded

    def keeping(*args, **kwargs):  # type: ignore[no-untyped-def]
        ways.append("streamed")
        return kept(*args, **kwargs)

    def unstreamed(*args, **kwargs):  # type: ignore[no-untyped-def]
        ways.append("unstreamed")
        return usual(*args, **kwargs)

    monkeypatch.setattr(refresh_stream, "snapshot_create", keeping)
    monkeypatch.setattr(refresh_stream, "refresh_succeeded", unstreamed)
    return ways


def _source(team, root: Path, records: dict[str, str] | None = None) -> Source:  # type: ignore[no-untyped-def]
    write_source(root, records or {i: record_text(i, body=f"Body of {i}.\n") for i in IDS})
    source = source_add(actor=Actor.system(), team=team, location=str(root))
    return source_approve(actor=Actor.system(), source=source)


def _refresh(source: Source) -> RefreshRun:
    run = refresh.source_refresh(source_id=source.pk)
    source.refresh_from_db()
    return run


def _served(team) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    return sorted(
        ChunkOrigin.objects.filter(team=team, active=True).values_list("ref", "chunk__content")
    )


def test_it_mirrors_and_stores_a_plain_source_while_reading_it(
    team, tmp_path, small_batches, streamed, read_mode
):  # type: ignore[no-untyped-def]
    source = _source(team, tmp_path)
    run = _refresh(source)
    assert run.status == RunStatus.SUCCEEDED and streamed == ["streamed"]
    assert (run.record_count, run.active_count, run.parsed_count) == (8, 8, 8)
    records = Record.objects.filter(snapshot=source.current_snapshot)
    assert sorted(records.values_list("record_id", "active", "inactive_reason")) == [
        (i, True, "") for i in IDS
    ]
    assert [ref for ref, _ in _served(team)] == [f"source:{source.pk}:{i}" for i in IDS]
    # a changed refresh streams too, and rewrites only what changed
    path = tmp_path / "records" / "r03.md"
    path.write_text(record_text("r03", body="Edited.\n"), encoding="utf-8")
    run = _refresh(source)
    assert run.status == RunStatus.SUCCEEDED and streamed == ["streamed", "streamed"]
    assert dict(_served(team))[f"source:{source.pk}:r03"].endswith("Edited.")
    assert Chunk.objects.filter(team=team).count() == 9  # the old text is withdrawn, not gone


def test_a_superseded_record_is_stored_the_unstreamed_way(  # type: ignore[no-untyped-def]
    team, tmp_path, small_batches, streamed, read_mode
):
    records = {i: record_text(i) for i in IDS[:-1]}
    records[IDS[-1]] = record_text(IDS[-1], title="New", extra=f"supersedes: ['{IDS[0]}']\n")
    source = _source(team, tmp_path, records)
    run = _refresh(source)
    assert run.status == RunStatus.SUCCEEDED and streamed == [
        "unstreamed"
    ]  # rolled back to the usual way
    assert (run.record_count, run.active_count) == (8, 7)
    assert Record.objects.get(
        snapshot=source.current_snapshot, record_id=IDS[0]
    ).inactive_reason == ("superseded")
    assert f"source:{source.pk}:{IDS[0]}" not in dict(_served(team))
    assert len(_served(team)) == 7


def test_ids_out_of_order_are_stored_the_unstreamed_way(  # type: ignore[no-untyped-def]
    team, tmp_path, small_batches, streamed, read_mode
):
    source = _source(team, tmp_path, {i: record_text(i) for i in reversed(IDS)})
    run = _refresh(source)
    assert run.status == RunStatus.SUCCEEDED and streamed == ["unstreamed"]
    assert [ref for ref, _ in _served(team)] == [f"source:{source.pk}:{i}" for i in IDS]


def test_a_read_failing_half_way_keeps_the_last_good_snapshot(
    team, tmp_path, small_batches, monkeypatch, read_mode
):  # type: ignore[no-untyped-def]
    source = _source(team, tmp_path)
    assert _refresh(source).status == RunStatus.SUCCEEDED
    snapshot, served = source.current_snapshot_id, _served(team)
    records = sorted(Record.objects.values_list("pk", "record_id", "body"))
    chunks = Chunk.objects.count()
    for i in IDS:
        (tmp_path / "records" / f"{i}.md").write_text(record_text(i, body="New.\n"), "utf-8")
    real, calls = LocalFetcher.get_record, []

    def failing(self, path, known=None):  # type: ignore[no-untyped-def]
        calls.append(path)
        if len(calls) == 7:  # the mirror has written batches of the new texts by now
            raise fetchers.SourceError("folder-gone", "the folder went away")
        return real(self, path, known)

    monkeypatch.setattr(LocalFetcher, "get_record", failing)
    run = _refresh(source)
    assert run.status == RunStatus.FAILED and run.error_code == "folder-gone"
    assert source.current_snapshot_id == snapshot and source.health == "stale"
    assert sorted(Record.objects.values_list("pk", "record_id", "body")) == records
    assert Chunk.objects.count() == chunks
    assert _served(team) == served


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif("connection.vendor != 'postgresql'")
def test_nothing_the_stream_writes_is_seen_before_the_commit(  # type: ignore[no-untyped-def]
    team, tmp_path, small_batches, monkeypatch, on_thread
):
    # no refresh queued by adding and approving (tasks run eagerly here): only ours runs
    monkeypatch.setattr(lifecycle, "source_refresh_request", lambda **kwargs: None)
    source = _source(team, tmp_path)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (backend,) = cursor.fetchone()
    settings = connection.settings_dict
    outside = psycopg.connect(
        host=settings["HOST"],
        port=settings["PORT"] or 5432,
        user=settings["USER"],
        password=settings["PASSWORD"],
        dbname=settings["NAME"],
        autocommit=True,
    )
    seen: list[tuple[int, int, int]] = []
    real, calls = LocalFetcher.get_record, []
    lock = threading.Lock()

    def watched(self, path, known=None):  # type: ignore[no-untyped-def]
        calls.append(path)
        if len(calls) == 7:
            # wait until the swap has inserted chunks (its transaction holds the table's
            # insert lock), then look from another connection
            written = 0
            for _ in range(400):
                with lock:
                    written = outside.execute(
                        "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                        "WHERE l.pid = %s AND c.relname = 'bundles_chunkorigin' "
                        "AND l.mode = 'RowExclusiveLock'",
                        [backend],
                    ).fetchone()[0]
                if written:
                    break
                time.sleep(0.025)
            with lock:
                chunks = outside.execute(
                    "SELECT count(*) FROM bundles_chunk WHERE team_id = %s", [team.pk]
                ).fetchone()[0]
                records = outside.execute(
                    "SELECT count(*) FROM sources_record r JOIN sources_source s "
                    "ON s.id = r.source_id WHERE s.team_id = %s",
                    [team.pk],
                ).fetchone()[0]
            seen.append((written, chunks, records))
        return real(self, path, known)

    try:
        monkeypatch.setattr(LocalFetcher, "get_record", watched)
        run = _refresh(source)
        monkeypatch.undo()
        after = outside.execute(
            "SELECT count(*) FROM bundles_chunk WHERE team_id = %s", [team.pk]
        ).fetchone()[0]
    finally:
        outside.close()
    assert run.status == RunStatus.SUCCEEDED and run.record_count == 8
    # the swap had written origins (so chunks and records) before the read ended: none seen
    assert seen == [(1, 0, 0)]
    assert after == 8


def test_a_row_the_reads_thread_could_not_make_is_made_by_the_swap(  # type: ignore[no-untyped-def]
    team, tmp_path, small_batches, streamed, monkeypatch, on_thread
):
    """The read's thread makes each record's row to store (record_rows); where that fails the
    swap makes it again, so the read neither fails nor loses the record."""
    made = refresh_stream.record_rows
    makers: list[object] = []

    def record_rows(*args):  # type: ignore[no-untyped-def]
        make = made(*args)
        makers.append(make)
        if len(makers) == 1:  # the swap's own
            return make

        def failing(item):  # type: ignore[no-untyped-def]
            if item.record.id in ("r01", "r04"):
                raise ValueError("not this one")
            return make(item)

        return failing

    monkeypatch.setattr(refresh_stream, "record_rows", record_rows)
    source = _source(team, tmp_path)
    run = _refresh(source)
    assert run.status == RunStatus.SUCCEEDED and streamed == ["streamed"]
    assert len(makers) == 2
    records = Record.objects.filter(snapshot=source.current_snapshot)
    assert sorted(records.values_list("record_id", "active", "title", "body")) == [
        (i, True, "A record", f"\nBody of {i}.\n") for i in IDS
    ]
    assert [ref for ref, _ in _served(team)] == [f"source:{source.pk}:{i}" for i in IDS]


def test_the_read_and_the_swap_run_without_the_cyclic_collector(
    team, tmp_path, monkeypatch, collector_on, on_thread
):  # type: ignore[no-untyped-def]
    """memoryadmin.process.collector_paused: the records a refresh makes are not walked by the
    collector while it runs (the read's thread included); it is back once the refresh ends."""
    import gc

    source = _source(team, tmp_path)
    seen: list[tuple[str, bool]] = []
    read = LocalFetcher.get_record

    def get_record(self, path, validator):  # type: ignore[no-untyped-def]
        seen.append((threading.current_thread().name, gc.isenabled()))
        return read(self, path, validator)

    monkeypatch.setattr(LocalFetcher, "get_record", get_record)
    run = _refresh(source)
    assert gc.isenabled()
    assert run.status == RunStatus.SUCCEEDED
    assert len(seen) == len(IDS)
    assert {name for name, _ in seen} == {"source-read"}
    assert not any(enabled for _, enabled in seen)
