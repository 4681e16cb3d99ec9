"""A local source's read in a process forked for it (sources.services.read_process): it reads
in another process, stores exactly what a read on a thread stores, fails a run the same way,
and never leaves its process behind, whether the read, the process or the swap fails."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest

from formats import openmemories as om
from memoryadmin.audit import Actor
from sources.fetchers import read as read_module
from sources.fetchers.local import LocalFetcher
from sources.models import Record, RefreshRun, RunStatus, Source
from sources.services import refresh, refresh_stream
from sources.services.lifecycle import source_add, source_approve
from tests.sources.helpers import record_text, write_source

IDS = [f"r{n:02d}" for n in range(8)]


@pytest.fixture
def forks(monkeypatch) -> list[int]:  # type: ignore[no-untyped-def]
    """The pid of every process forked here (the parent's view of os.fork)."""
    pids: list[int] = []
    real = os.fork

    def fork() -> int:
        pid = real()
        if pid:
            pids.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", fork)
    return pids


def _source(team, root: Path, records: dict[str, str] | None = None) -> Source:  # type: ignore[no-untyped-def]
    write_source(root, records or {i: record_text(i, body=f"Body of {i}.\n") for i in IDS})
    source = source_add(actor=Actor.system(), team=team, location=str(root))
    source = source_approve(actor=Actor.system(), source=source)
    _refresh(source)
    return source


def _refresh(source: Source) -> RefreshRun:
    run = refresh.source_refresh(source_id=source.pk)
    source.refresh_from_db()
    return run


def _records(source: Source) -> list[tuple[object, ...]]:
    return sorted(
        Record.objects.filter(snapshot=source.current_snapshot).values_list(
            "record_id", "path", "active", "inactive_reason", "title", "body", "content_hash"
        )
    )


def _reaped(pids: list[int]) -> bool:
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue
        return False  # still ours to wait for: left behind
    return True


def test_the_read_runs_in_a_process_of_its_own(team, tmp_path, monkeypatch, forks):  # type: ignore[no-untyped-def]
    readers = tmp_path / "readers"
    real = LocalFetcher.get_record

    def get_record(self, path, known=None):  # type: ignore[no-untyped-def]
        with readers.open("a") as out:  # seen from the reading process, whichever it is
            out.write(f"{os.getpid()}\n")
        return real(self, path, known)

    monkeypatch.setattr(LocalFetcher, "get_record", get_record)
    source = _source(team, tmp_path / "source")
    assert source.current_snapshot.record_count == len(IDS)
    pids = {int(line) for line in readers.read_text().split()}
    assert len(pids) == 1 and pids == set(forks) and os.getpid() not in pids
    assert _reaped(forks)


def test_it_stores_what_a_read_on_a_thread_stores(team, other_team, tmp_path, settings):  # type: ignore[no-untyped-def]
    records = {i: record_text(i, body=f"Body of {i}.\n") for i in IDS}
    records["r02"] = record_text("r02", extra="expires: 2001-01-01T00:00:00Z\n")
    records["r07"] = record_text("r07", title="New", extra="supersedes: ['r00']\n")
    records["r05"] = "---\ntitle: [unclosed\n---\nbody\n"  # rejected, with its reason
    write_source(tmp_path / "a", records)
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    (tmp_path / "a" / "records" / "r06.md").unlink()  # a missing file: rejected too
    (tmp_path / "b" / "records" / "r06.md").unlink()
    runs = {}
    for mode, owner, folder in (("process", team, "a"), ("thread", other_team, "b")):
        settings.SOURCE_READ_PROCESS = mode == "process"
        source = source_add(actor=Actor.system(), team=owner, location=str(tmp_path / folder))
        source = source_approve(actor=Actor.system(), source=source)
        run = _refresh(source)
        rejected = sorted(source.current_snapshot.rejections.values_list("code", "path", "message"))
        runs[mode] = (
            run.status,
            (run.record_count, run.active_count, run.rejected_count, run.parsed_count),
            source.current_snapshot.fingerprint,
            _records(source),
            rejected,
        )
    assert runs["process"] == runs["thread"]
    status, counts, _, stored, rejected = runs["process"]
    assert status == RunStatus.SUCCEEDED and counts == (6, 4, 2, 7)
    assert [(code, path) for code, path, _ in rejected] == [
        ("not-found", "records/r06.md"),
        ("yaml-syntax", "records/r05.md"),
    ]
    assert [(r[0], r[2], r[3]) for r in stored if not r[2]] == [
        ("r00", False, "superseded"),
        ("r02", False, "expired"),
    ]


def test_a_changed_and_an_unchanged_refresh_after_a_forked_read(team, tmp_path, forks):  # type: ignore[no-untyped-def]
    source = _source(team, tmp_path)
    before = _records(source)
    run = _refresh(source)  # the kept stats and digest came back from the read's process
    assert run.status == RunStatus.SUCCEEDED and not run.changed
    path = tmp_path / "records" / "r03.md"
    path.write_text(record_text("r03", body="Edited.\n"), encoding="utf-8")
    run = _refresh(source)
    assert run.status == RunStatus.SUCCEEDED and run.changed
    assert (run.parsed_count, run.reused_count) == (1, len(IDS) - 1)
    after = _records(source)
    assert [r for r in after if r[0] != "r03"] == [r for r in before if r[0] != "r03"]
    assert dict((r[0], r[5]) for r in after)["r03"] == "\nEdited.\n"
    assert len(forks) == 2 and _reaped(forks)


@pytest.mark.parametrize("mode", ["process", "thread"])
def test_an_error_in_the_read_fails_the_run_as_on_a_thread(  # type: ignore[no-untyped-def]
    team, tmp_path, monkeypatch, settings, mode
):
    settings.SOURCE_READ_PROCESS = mode == "process"
    source = _source(team, tmp_path)
    snapshot = source.current_snapshot_id
    records = _records(source)

    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise TypeError("a bug in the parser")

    monkeypatch.setattr(om, "parse_record", broken)
    (tmp_path / "records" / "r01.md").write_text(record_text("r01", body="New.\n"), "utf-8")
    run = _refresh(source)
    assert (run.status, run.error_code) == (RunStatus.FAILED, "read-failed")
    assert run.error == "reading the source failed: TypeError: a bug in the parser"
    assert source.current_snapshot_id == snapshot and source.health == "stale"
    assert _records(source) == records


def test_a_read_process_that_dies_fails_the_run_and_keeps_the_snapshot(  # type: ignore[no-untyped-def]
    team, tmp_path, monkeypatch, forks
):
    source = _source(team, tmp_path)
    snapshot, records = source.current_snapshot_id, _records(source)
    chunks = source.team.chunks.count()
    real, calls = LocalFetcher.get_record, []

    def dying(self, path, known=None):  # type: ignore[no-untyped-def]
        calls.append(path)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGKILL)  # the read's process, killed half-way
        return real(self, path, known)

    monkeypatch.setattr(LocalFetcher, "get_record", dying)
    for i in IDS:
        (tmp_path / "records" / f"{i}.md").write_text(record_text(i, body="New.\n"), "utf-8")
    run = _refresh(source)
    assert (run.status, run.error_code) == (RunStatus.FAILED, "read-failed")
    assert "the source's read process ended without a result (killed by signal 9)" in run.error
    assert source.current_snapshot_id == snapshot and source.health == "stale"
    assert _records(source) == records and source.team.chunks.count() == chunks
    assert _reaped(forks)


def test_a_swap_that_fails_stops_the_read_process(team, tmp_path, monkeypatch, forks):  # type: ignore[no-untyped-def]
    source = _source(team, tmp_path)
    snapshot, records = source.current_snapshot_id, _records(source)
    (tmp_path / "records" / "r01.md").write_text(record_text("r01", body="New.\n"), "utf-8")

    def failing(rows):  # type: ignore[no-untyped-def]
        raise RuntimeError("the store broke")

    monkeypatch.setattr(refresh_stream, "records_store", failing)
    monkeypatch.setattr(refresh_stream, "STORE_BATCH", 1)
    run = _refresh(source)
    assert (run.status, run.error_code) == (RunStatus.FAILED, "store-failed")
    assert source.current_snapshot_id == snapshot and _records(source) == records
    assert len(forks) == 2 and _reaped(forks)


def test_without_a_process_the_read_runs_on_a_thread(team, tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    import threading

    def refused() -> int:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", refused)
    seen: list[str] = []
    real = LocalFetcher.get_record

    def get_record(self, path, known=None):  # type: ignore[no-untyped-def]
        seen.append(threading.current_thread().name)
        return real(self, path, known)

    monkeypatch.setattr(LocalFetcher, "get_record", get_record)
    source = _source(team, tmp_path)
    assert source.current_snapshot.record_count == len(IDS)
    assert set(seen) == {"source-read"} and len(seen) == len(IDS)


def test_a_record_crosses_the_pipe_as_the_spool_packs_it() -> None:
    spool = read_module.RecordSpool()
    entry = om.Entry("r1", "records/r1.md")
    record = om.parse_record(
        record_text("r1").encode(), expected_id="r1", path="records/r1.md", max_bytes=1 << 20
    )
    spool.append_packed(read_module.pack_record(read_module.ReadRecord(entry, record, False)))
    assert [(item.entry, item.record, item.reused) for item in spool] == [(entry, record, False)]
    spool.close()


def test_a_read_process_silent_past_the_deadline_is_stopped(  # type: ignore[no-untyped-def]
    team, tmp_path, monkeypatch, settings, forks
):
    import time

    source = _source(team, tmp_path)
    snapshot = source.current_snapshot_id
    settings.SOURCE_REFRESH_DEADLINE = 1
    (tmp_path / "records" / "r01.md").write_text(record_text("r01", body="New.\n"), "utf-8")

    def stuck(self, path, known=None):  # type: ignore[no-untyped-def]
        time.sleep(120)  # a hung file system, as the read's process sees it

    monkeypatch.setattr(LocalFetcher, "get_record", stuck)
    started = time.monotonic()
    run = _refresh(source)
    assert (run.status, run.error_code) == (RunStatus.FAILED, "refresh-deadline")
    assert run.error == "the source's read sent nothing for 1 s"
    assert time.monotonic() - started < 60 and source.current_snapshot_id == snapshot
    assert len(forks) == 2 and _reaped(forks)
