"""A local record file whose stat is the one its last read kept is not read again by the raw
check (`LocalFetcher.raw_hash`, `Snapshot.raw_stats`); anything that may have written it (a
moved ctime, another inode, a file written near that read, a symlink or FIFO) is read."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from django.test import override_settings
from django.utils import timezone

from formats import openmemories as om
from memoryadmin.audit import Actor
from sources.fetchers import FetchPolicy, raw
from sources.fetchers import local as local_fetcher
from sources.fetchers.local import LocalFetcher
from sources.fetchers.read import read_source
from sources.models import Record, RefreshRun, RunStatus, Snapshot, Source
from sources.services import refresh, refresh_stream
from sources.services.lifecycle import source_add, source_approve
from tests.sources.helpers import record_text, write_source

SAME_SIZE = (b"Some body text.", b"Some body texT.")


@pytest.fixture
def opened(monkeypatch, tmp_path, settings) -> list[str]:  # type: ignore[no-untyped-def]
    """Every file under the test's folder that anything opens (os.open), by relative path.
    The read runs on a thread, so that its opens are seen (a forked read's are its own)."""
    settings.SOURCE_READ_PROCESS = False
    names: list[str] = []
    real = os.open

    def counted(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        text = os.fsdecode(path)
        if text.startswith(str(tmp_path)):
            names.append(os.path.relpath(text, tmp_path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", counted)
    return names


@pytest.fixture
def full_reads(monkeypatch) -> list[str]:  # type: ignore[no-untyped-def]
    reads: list[str] = []
    stream = refresh_stream.StreamedRead.__init__

    def counted(self, fetcher, **kwargs):  # type: ignore[no-untyped-def]
        reads.append(fetcher.identity)  # forked or on a thread
        stream(self, fetcher, **kwargs)

    monkeypatch.setattr(refresh_stream.StreamedRead, "__init__", counted)
    return reads


@pytest.fixture
def settled(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Files written before a read count as settled at once (no racy margin): the tests
    below write and read within milliseconds. The margin's own test sets it large."""
    monkeypatch.setattr(local_fetcher, "STAT_MARGIN_NS", 0)


def _source(team, root: Path, reads: list[str] | None = None) -> Source:  # type: ignore[no-untyped-def]
    """A source of two records, read once (`reads`: the full reads counted, cleared)."""
    write_source(root, {"a": record_text("a"), "b": record_text("b")})
    source = source_add(actor=Actor.system(), team=team, location=str(root))
    source = source_approve(actor=Actor.system(), source=source)
    _refresh(source)
    if reads is not None:
        reads.clear()
    return source


def _refresh(source: Source) -> RefreshRun:
    run = refresh.source_refresh(source_id=source.pk)
    source.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED, run.error
    return run


def _stats(source: Source) -> list[raw.FileStat | None] | None:
    """The kept stats of the current snapshot's entries (None: the entry has none)."""
    snapshot = Snapshot.objects.get(pk=source.current_snapshot_id)
    table = raw.stats_unpack(bytes(snapshot.raw_stats))
    if table is None:
        return None
    assert len(table) == len(raw.entries_unpack(bytes(snapshot.raw_entries)))
    assert table.manifest_hash == om.content_hash(bytes(snapshot.manifest_body))
    return [s if raw.stat_kept(s) else None for s in table]


def _records_opened(names: list[str]) -> list[str]:
    return sorted(name for name in names if name.startswith("records/"))


def _tick(path: Path) -> None:
    """Wait (at most a second) until a file written now gets a later ctime than `path` has:
    filesystem clocks move a tick at a time, and a rewrite within the same tick as the
    first write would keep every field of the stat (what the racy margin is for)."""
    before = path.stat().st_ctime_ns
    probe = path.parent / ".tick"
    deadline = time.monotonic() + 1
    while time.monotonic() < deadline:
        probe.write_bytes(b"")
        if probe.stat().st_ctime_ns > before:
            break
        time.sleep(0.002)
    probe.unlink()


def _rewrite(path: Path, data: bytes) -> None:
    """Write `data` over the file in place and put its mtime (and atime) back."""
    info = path.stat()
    _tick(path)
    path.write_bytes(data)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert path.stat().st_mtime_ns == info.st_mtime_ns


def test_it_opens_no_record_file_whose_stat_is_unchanged(
    team, tmp_path, settled, opened, full_reads
):
    source = _source(team, tmp_path, full_reads)
    stats = _stats(source)
    assert stats is not None and all(s is not None for s in stats)
    snapshot = source.current_snapshot_id
    opened.clear()
    run = _refresh(source)
    # the manifest, and the records' folder once (each file is stat'ed by name in it)
    assert _records_opened(opened) == [] and opened == ["memories.json", "records"]
    assert full_reads == [] and not run.changed and (run.reused_count, run.record_count) == (2, 2)
    assert source.current_snapshot_id == snapshot
    assert _stats(source) == stats  # nothing new to keep: not rewritten


def test_the_same_bytes_rewritten_with_the_mtime_put_back_are_read_again(
    team, tmp_path, settled, opened, full_reads
):
    source = _source(team, tmp_path, full_reads)
    path = tmp_path / "records" / "b.md"
    before = _stats(source)
    _rewrite(path, path.read_bytes())  # a tool that "keeps mtimes": the ctime still moved
    opened.clear()
    run = _refresh(source)
    assert _records_opened(opened) == ["records/b.md"]
    assert full_reads == [] and not run.changed
    after = _stats(source)
    assert before is not None and after is not None
    assert after[0] == before[0] and after[1] is not None and before[1] is not None
    assert raw.stat_key(after[1])[4] > raw.stat_key(before[1])[4]  # its ctime moved
    assert raw.stat_hash(after[1]) == raw.stat_hash(before[1])
    opened.clear()
    _refresh(source)  # its new stat kept: trusted from now on
    assert _records_opened(opened) == []


def test_a_change_of_the_same_size_with_the_mtime_put_back_is_read(
    team, tmp_path, settled, full_reads
):
    source = _source(team, tmp_path, full_reads)
    path = tmp_path / "records" / "b.md"
    _rewrite(path, path.read_bytes().replace(*SAME_SIZE))
    run = _refresh(source)
    assert full_reads == [source.identity] and run.changed
    body = Record.objects.get(snapshot=source.current_snapshot, record_id="b").body
    assert body == "\nSome body texT.\n"


@pytest.mark.parametrize("same", [True, False], ids=["same-bytes", "other-bytes"])
def test_a_file_renamed_over_the_record_is_read(team, tmp_path, settled, opened, full_reads, same):
    source = _source(team, tmp_path, full_reads)
    path = tmp_path / "records" / "b.md"
    info = path.stat()
    data = path.read_bytes()
    replacement = tmp_path / "records" / "b.md.new"
    _tick(path)
    replacement.write_bytes(data if same else data.replace(*SAME_SIZE))
    os.utime(replacement, ns=(info.st_atime_ns, info.st_mtime_ns))
    replacement.rename(path)
    assert path.stat().st_ino != info.st_ino and path.stat().st_size == info.st_size
    opened.clear()
    run = _refresh(source)
    assert "records/b.md" in _records_opened(opened)
    assert run.changed is not same and full_reads == ([] if same else [source.identity])


def _fifo(path: Path, outside: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _symlink_outside(path: Path, outside: Path) -> None:
    outside.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(outside)


def _symlink_inside(path: Path, outside: Path) -> None:
    twin = path.with_name("twin.md")
    twin.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(twin)


def _folder_moved_out(path: Path, outside: Path) -> None:
    """The records' folder moved out of the source and linked back: every file keeps its
    inode and stat, now reached through a symlink leaving the source."""
    folder = path.parent
    folder.rename(outside)
    folder.symlink_to(outside, target_is_directory=True)


SWAPS: dict[str, Callable[[Path, Path], None]] = {
    "fifo": _fifo,
    "symlink-outside": _symlink_outside,
    "symlink-inside": _symlink_inside,
    "folder-moved-out": _folder_moved_out,
}


@pytest.mark.parametrize("swap", list(SWAPS))
def test_a_record_swapped_for_a_symlink_or_fifo_is_answered_as_without_stats(
    team, tmp_path, settled, swap
):
    root = tmp_path / "source"
    source = _source(team, root)
    assert _stats(source) is not None
    SWAPS[swap](root / "records" / "b.md", tmp_path / "outside")
    # what a read that keeps no stats makes of the folder now
    plain = read_source(
        LocalFetcher(str(root), policy=FetchPolicy(trust_stat=False)), now=timezone.now()
    )
    expected = sorted((r.code, r.path, r.message) for r in plain.rejections)
    plain.close()
    run = _refresh(source)
    rejected = sorted(source.current_snapshot.rejections.values_list("code", "path", "message"))
    assert rejected == expected and run.rejected_count == len(expected)
    if swap == "symlink-inside":
        assert expected == [] and run.record_count == 2
    else:
        assert [code for code, _, _ in expected] == (
            ["not-found"] if swap == "fifo" else ["outside-source"] * (2 if "folder" in swap else 1)
        )


def test_a_file_written_near_the_read_is_read_again(
    team, tmp_path, monkeypatch, opened, full_reads
):
    # every file written within the hour before a read counts as written near it
    monkeypatch.setattr(local_fetcher, "STAT_MARGIN_NS", 3600 * 10**9)
    source = _source(team, tmp_path, full_reads)
    assert _stats(source) == [None, None]  # no stat kept: its file may still be written to
    opened.clear()
    assert not _refresh(source).changed
    assert _records_opened(opened) == ["records/a.md", "records/b.md"]
    path = tmp_path / "records" / "b.md"
    _rewrite(path, path.read_bytes().replace(*SAME_SIZE))
    run = _refresh(source)
    assert run.changed and full_reads == [source.identity]


def test_the_digest_is_the_same_whether_stats_or_bytes_gave_it(tmp_path, settled, opened):
    write_source(tmp_path, {"a": record_text("a"), "b": record_text("b"), "c": record_text("c")})
    (tmp_path / "records" / "c.md").unlink()  # a refused entry is in the digest too
    full = read_source(LocalFetcher(str(tmp_path), policy=FetchPolicy()), now=timezone.now())
    full.close()
    first = LocalFetcher(str(tmp_path), policy=FetchPolicy())
    manifest = first.get_manifest(None).body or b""
    check = raw.raw_check(first, known=raw.Known(manifest, "", full.raw_entries), validators={})
    assert check.digest == full.raw_digest and check.stats is not None
    opened.clear()
    trusting = LocalFetcher(str(tmp_path), policy=FetchPolicy())
    known = raw.Known(b"", "", full.raw_entries, check.stats)  # the stats name the manifest
    again = raw.raw_check(trusting, known=known, validators={})
    assert _records_opened(opened) == ["records/c.md"]  # the missing one is looked for again
    assert again.digest == full.raw_digest and again.stats is None  # nothing new to keep
    opened.clear()
    untrusting = LocalFetcher(str(tmp_path), policy=FetchPolicy(trust_stat=False))
    forced = raw.raw_check(untrusting, known=known, validators={})
    assert _records_opened(opened) == ["records/a.md", "records/b.md", "records/c.md"]
    assert forced.digest == full.raw_digest and forced.stats is None


def test_a_snapshot_without_stats_reads_every_file_once_then_keeps_them(
    team, tmp_path, settled, opened, full_reads
):
    source = _source(team, tmp_path, full_reads)
    Snapshot.objects.filter(pk=source.current_snapshot_id).update(raw_stats=b"")
    opened.clear()
    assert not _refresh(source).changed and full_reads == []
    assert _records_opened(opened) == ["records/a.md", "records/b.md"]
    stats = _stats(source)
    assert stats is not None and all(s is not None for s in stats)
    opened.clear()
    _refresh(source)
    assert _records_opened(opened) == []


def test_with_stat_trust_off_every_file_is_read(team, tmp_path, settled, opened, full_reads):
    source = _source(team, tmp_path, full_reads)
    opened.clear()
    with override_settings(SOURCE_TRUST_STAT=False):
        assert not _refresh(source).changed
    assert _records_opened(opened) == ["records/a.md", "records/b.md"] and full_reads == []


def test_the_packed_stats_give_back_every_slot_in_order() -> None:
    table = {
        "a.md": raw.stat_row((2**64 - 1, 2**63 + 5, 0, -(10**18), 1), "ab" * 32),
        "c.md": raw.stat_row((1, 2, 3, 4, 5), om.content_hash(b"c")),
    }
    manifest = om.content_hash(b"{}")
    packed = raw.stats_pack(manifest, ["a.md", "b.md", "c.md"], table)
    unpacked = raw.stats_unpack(packed)
    assert unpacked is not None and unpacked.manifest_hash == manifest
    assert list(unpacked) == [table["a.md"], raw.NO_STAT, table["c.md"]]
    assert raw.stat_key(table["a.md"]) == (2**64 - 1, 2**63 + 5, 0, -(10**18), 1)
    assert raw.stat_hash(table["c.md"]) == om.content_hash(b"c")
    assert raw.stat_key(raw.NO_STAT)[2] == -1 and not raw.stat_kept(raw.NO_STAT)
    # a trusted file keeps the stat it had; one read again takes its new one (or none)
    again = raw.stats_pack(manifest, ["a.md", "b.md", "c.md"], {"c.md": raw.NO_STAT}, unpacked)
    assert list(raw.stats_unpack(again) or []) == [table["a.md"], raw.NO_STAT, raw.NO_STAT]
    assert raw.stats_unpack(b"not zlib") is None and raw.stats_unpack(b"") is None
    assert raw.stats_pack(manifest, [], table) == b"" and raw.stats_unpack(packed[:-3]) is None
