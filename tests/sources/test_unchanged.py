"""The raw check: a refresh whose bytes and rules are the current snapshot's keeps it without
parsing or loading a stored record; anything that differs takes the full read."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import override_settings
from django.utils import timezone

from bundles.models import ChunkOrigin
from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent
from sources import selectors
from sources.fetchers import raw
from sources.models import Health, Record, RefreshRun, RunStatus, Snapshot, Source
from sources.services import refresh, refresh_stream
from sources.services.lifecycle import source_add, source_approve
from tests.sources.helpers import manifest_text, record_text, write_source


@pytest.fixture
def full_reads(monkeypatch) -> list[str]:  # type: ignore[no-untyped-def]
    """The identity of each source read in full (the raw check's answer was "changed")."""
    reads: list[str] = []
    real, stream = refresh.read_source, refresh_stream.StreamedRead.__init__

    def counted(fetcher, **kwargs):  # type: ignore[no-untyped-def]
        reads.append(fetcher.identity)
        return real(fetcher, **kwargs)

    def streamed(self, fetcher, **kwargs):  # type: ignore[no-untyped-def]
        reads.append(fetcher.identity)  # a local source's full read (forked or on a thread)
        stream(self, fetcher, **kwargs)

    monkeypatch.setattr(refresh, "read_source", counted)
    monkeypatch.setattr(refresh_stream.StreamedRead, "__init__", streamed)
    return reads


def _add(team, root: Path) -> Source:  # type: ignore[no-untyped-def]
    source = source_add(actor=Actor.system(), team=team, location=str(root))
    return source_approve(actor=Actor.system(), source=source)


def _refresh(source: Source) -> RefreshRun:
    run = refresh.source_refresh(source_id=source.pk)
    source.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED, run.error
    return run


def _records(source: Source) -> list[tuple[str, str, str, bool, str]]:
    return sorted(
        Record.objects.filter(snapshot=source.current_snapshot).values_list(
            "record_id", "path", "title", "active", "inactive_reason"
        )
    )


def _origins(team) -> list[tuple[str, bool]]:  # type: ignore[no-untyped-def]
    return sorted(ChunkOrigin.objects.filter(team=team).values_list("ref", "active"))


def _soon(seconds: float) -> str:
    return (timezone.now() + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _source(team, root: Path, **records: str) -> Source:  # type: ignore[no-untyped-def]
    write_source(root, records or {"a": record_text("a"), "b": record_text("b")})
    source = _add(team, root)
    _refresh(source)
    return source


def test_an_unchanged_refresh_keeps_the_snapshot_without_a_full_read(team, tmp_path, full_reads):
    source = _source(team, tmp_path)
    snapshot = source.current_snapshot
    assert len(snapshot.raw_digest) == 64
    records, origins = _records(source), _origins(team)
    mirrored = AuditEvent.objects.filter(team=team, action="brain.mirror").count()
    full_reads.clear()
    run = _refresh(source)
    assert full_reads == []
    assert not run.changed and (run.parsed_count, run.reused_count) == (0, 2)
    assert (run.record_count, run.active_count) == (2, 2)
    assert source.current_snapshot_id == snapshot.pk and source.health == Health.FRESH
    assert source.current_snapshot.retrieved_at > snapshot.retrieved_at
    assert _records(source) == records and _origins(team) == origins
    # nothing the brain mirrors moved: no reconcile
    assert AuditEvent.objects.filter(team=team, action="brain.mirror").count() == mirrored
    event = AuditEvent.objects.filter(team=team, action="source.refresh").latest("id")
    assert event.summary.endswith("(unchanged)") and event.data["changed"] is False


def test_one_byte_changed_in_one_record_is_read_in_full(team, tmp_path, full_reads):
    source = _source(team, tmp_path)
    path = tmp_path / "records" / "b.md"
    path.write_bytes(path.read_bytes().replace(b"Some body text.", b"Some body texT."))
    full_reads.clear()
    run = _refresh(source)
    assert full_reads == [source.identity]
    assert run.changed and (run.parsed_count, run.reused_count) == (1, 1)
    body = Record.objects.get(snapshot=source.current_snapshot, record_id="b").body
    assert body == "\nSome body texT.\n"
    # and the next refresh of those bytes takes the short way again
    full_reads.clear()
    assert not _refresh(source).changed and full_reads == []


@pytest.mark.parametrize("change", ["added", "removed", "renamed", "manifest-name"])
def test_a_changed_manifest_is_read_in_full(team, tmp_path, full_reads, change):  # type: ignore[no-untyped-def]
    source = _source(team, tmp_path)
    records = tmp_path / "records"
    if change == "added":
        (records / "c.md").write_text(record_text("c"), "utf-8")
        (tmp_path / "memories.json").write_text(manifest_text(["a", "b", "c"]), "utf-8")
        expected = ["a", "b", "c"]
    elif change == "removed":
        (tmp_path / "memories.json").write_text(manifest_text(["a"]), "utf-8")
        expected = ["a"]
    elif change == "renamed":  # same id, same bytes, another path
        (records / "b.md").rename(records / "b2.md")
        text = manifest_text(["a", "b"]).replace("records/b.md", "records/b2.md")
        (tmp_path / "memories.json").write_text(text, "utf-8")
        expected = ["a", "b"]
    else:
        (tmp_path / "memories.json").write_text(manifest_text(["a", "b"], name="Other"), "utf-8")
        expected = ["a", "b"]
    full_reads.clear()
    run = _refresh(source)
    assert full_reads == [source.identity] and run.changed
    assert [r[0] for r in _records(source)] == expected
    if change == "renamed":
        assert ("b", "records/b2.md") in [r[:2] for r in _records(source)]
    if change == "manifest-name":
        assert source.display_name == "Other"
    assert sorted(r.record_id for r in selectors.context_records(team)) == expected


def test_a_file_missing_or_refused_counts_as_raw_bytes(team, tmp_path, full_reads):
    source = _source(team, tmp_path)
    (tmp_path / "records" / "b.md").unlink()
    run = _refresh(source)
    assert run.changed and run.rejected_count == 1
    full_reads.clear()
    run = _refresh(source)  # still missing: the same answer, kept
    assert full_reads == [] and not run.changed and run.rejected_count == 1
    (tmp_path / "records" / "b.md").write_text(record_text("b"), "utf-8")
    run = _refresh(source)
    assert full_reads == [source.identity] and run.changed and run.rejected_count == 0


def test_a_lower_limit_that_now_rejects_a_record_is_read_in_full(team, tmp_path, full_reads):
    source = _source(
        team, tmp_path, a=record_text("a"), big=record_text("big", body="x" * 3000 + "\n")
    )
    full_reads.clear()
    with override_settings(SOURCE_MAX_RESPONSE_BYTES=2000):
        run = _refresh(source)
    assert full_reads == [source.identity] and run.changed
    assert run.rejected_count == 1 and [r[0] for r in _records(source)] == ["a"]
    assert source.current_snapshot.rejections.get().code == "too-large"
    kept = source.current_snapshot_id
    with override_settings(SOURCE_MAX_ENTRIES=1):  # the whole manifest is refused: stale
        run = refresh.source_refresh(source_id=source.pk)
    source.refresh_from_db()
    assert run.status == RunStatus.FAILED and source.health == Health.STALE
    assert source.current_snapshot_id == kept
    full_reads.clear()
    run = _refresh(source)  # the default limits again: the big record is back
    assert full_reads == [source.identity] and run.changed and run.rejected_count == 0
    assert [r[0] for r in _records(source)] == ["a", "big"]
    with override_settings(SOURCE_MAX_MANIFEST_BYTES=100):
        run = refresh.source_refresh(source_id=source.pk)
    assert run.status == RunStatus.FAILED and run.error_code == "too-large"


def test_another_reader_version_reads_in_full_once(team, tmp_path, full_reads, monkeypatch):
    source = _source(team, tmp_path)
    before = source.current_snapshot
    monkeypatch.setattr(raw, "READER_VERSION", raw.READER_VERSION + 1)
    full_reads.clear()
    run = _refresh(source)
    # the same bytes under the new rules: same fingerprint, the snapshot kept, its digest new
    assert full_reads == [source.identity] and not run.changed
    assert source.current_snapshot_id == before.pk
    assert source.current_snapshot.raw_digest not in ("", before.raw_digest)
    _refresh(source)
    assert full_reads == [source.identity]


def test_a_snapshot_from_before_the_raw_digest_is_read_in_full_once(team, tmp_path, full_reads):
    source = _source(team, tmp_path)
    Snapshot.objects.filter(pk=source.current_snapshot_id).update(raw_digest="")
    full_reads.clear()
    assert not _refresh(source).changed and full_reads == [source.identity]
    assert len(Snapshot.objects.get(pk=source.current_snapshot_id).raw_digest) == 64
    _refresh(source)
    assert full_reads == [source.identity]


def test_expiry_passing_between_two_unchanged_refreshes_withdraws_the_record(
    team, tmp_path, full_reads
):
    soon = _soon(2)
    source = _source(
        team,
        tmp_path,
        a=record_text("a", extra=f"expires: '{soon}'\n"),
        # supersedes `old` until and after it expires (the selection's rule)
        new=record_text("new", extra=f"supersedes: ['old', 'ghost']\nexpires: '{soon}'\n"),
        old=record_text("old"),
        plain=record_text("plain"),
        c1=record_text("c1", extra="supersedes: ['c2']\n"),
        c2=record_text("c2", extra="supersedes: ['c1']\n"),
        bad=record_text("other-id"),
    )
    full_reads.clear()
    run = _refresh(source)
    assert full_reads == [] and run.active_count == 5
    assert sorted(r.record_id for r in selectors.context_records(team)) == [
        "a",
        "c1",
        "c2",
        "new",
        "plain",
    ]
    problems = source.current_snapshot.problem_count
    time.sleep(2.2)
    run = _refresh(source)
    assert full_reads == [] and not run.changed
    assert (run.active_count, run.record_count, run.rejected_count) == (3, 6, 1)
    assert run.problem_count == problems == 2
    fast = _records(source)
    reasons = {r[0]: (r[3], r[4]) for r in fast}
    assert reasons == {
        "a": (False, "expired"),
        "new": (False, "expired"),
        "old": (False, "superseded"),
        "plain": (True, ""),
        "c1": (True, ""),
        "c2": (True, ""),
    }
    assert source.current_snapshot.active_count == 3
    assert sorted(r.record_id for r in selectors.context_records(team)) == ["c1", "c2", "plain"]
    refs = {ref.rsplit(":", 1)[1]: active for ref, active in _origins(team)}
    # `old` was never served, so never mirrored
    assert refs == {"a": False, "new": False, "plain": True, "c1": True, "c2": True}
    # what the full read makes of the same bytes at this time is what the short way made
    origins = _origins(team)
    Snapshot.objects.filter(pk=source.current_snapshot_id).update(raw_digest="")
    run = _refresh(source)
    assert full_reads == [source.identity] and not run.changed and run.active_count == 3
    assert _records(source) == fast and _origins(team) == origins


def test_a_stale_source_with_the_same_bytes_is_fresh_again(team, tmp_path, full_reads):
    source = _source(team, tmp_path)
    manifest = tmp_path / "memories.json"
    text = manifest.read_text("utf-8")
    manifest.unlink()
    run = refresh.source_refresh(source_id=source.pk)
    source.refresh_from_db()
    assert run.status == RunStatus.FAILED and source.health == Health.STALE
    origins = _origins(team)
    manifest.write_text(text, "utf-8")
    full_reads.clear()
    run = _refresh(source)
    assert full_reads == [] and not run.changed and source.health == Health.FRESH
    assert source.stale_since is None and source.last_error == ""
    assert _origins(team) == origins
    recovered = AuditEvent.objects.filter(team=team, action="source.health").latest("id")
    assert recovered.data["to"] == Health.FRESH and recovered.data["from"] == Health.STALE


def _publish(server, records: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    server.serve("memories.json", manifest_text(list(records), name="Remote"))
    for record_id, text in records.items():
        server.serve(f"records/{record_id}.md", text)


def test_an_https_source_answering_304_everywhere_takes_the_short_way(
    https_server, team, full_reads
):
    _publish(https_server, {"a": record_text("a"), "b": record_text("b"), "x": record_text("y")})
    source = _add(team, https_server.base)
    _refresh(source)
    validators = sorted(source.validators.values_list("url", "etag", "content_hash"))
    before = len(https_server.requests)
    full_reads.clear()
    run = _refresh(source)
    assert full_reads == [] and not run.changed
    assert (run.record_count, run.rejected_count, run.parsed_count) == (2, 1, 0)
    asked = https_server.requests[before:]
    assert len(asked) == 4 and all("If-None-Match" in headers for _, headers in asked)
    assert sorted(source.validators.values_list("url", "etag", "content_hash")) == validators


def test_a_changed_https_record_is_fetched_once_and_read_in_full(https_server, team, full_reads):
    _publish(https_server, {"a": record_text("a"), "b": record_text("b")})
    source = _add(team, https_server.base)
    _refresh(source)
    _publish(https_server, {"a": record_text("a"), "b": record_text("b", title="Edited")})
    before = len(https_server.requests)
    full_reads.clear()
    run = _refresh(source)
    assert full_reads == [https_server.base] and run.changed
    assert (run.parsed_count, run.reused_count) == (1, 1)
    # the raw check's answers are replayed to the full read: one request per URL
    asked = sorted(path for path, _ in https_server.requests[before:])
    assert asked == ["/src/memories.json", "/src/records/a.md", "/src/records/b.md"]
    assert [r[2] for r in _records(source)] == ["A record", "Edited"]
    full_reads.clear()
    assert not _refresh(source).changed and full_reads == []


def test_a_snapshot_without_its_entries_parses_the_manifest_and_stays_unchanged(
    team, tmp_path, full_reads
):
    source = _source(team, tmp_path)
    Snapshot.objects.filter(pk=source.current_snapshot_id).update(raw_entries=b"")
    full_reads.clear()
    run = _refresh(source)
    assert full_reads == [] and not run.changed and run.record_count == 2


def test_the_kept_entries_give_back_every_id_and_path_in_order() -> None:
    from formats import openmemories as om

    entries = [
        om.Entry("a\ud800é", "records/\u2028x.md"),
        om.Entry('q"\\', "records/\x01.md"),
        om.Entry("z", "z.md"),
    ]
    # a lone surrogate (which orjson refuses) and without one (orjson's own parse)
    for kept in (entries, entries[1:]):
        packed = raw.entries_pack(kept)
        assert raw.entries_unpack(packed) == [[e.id, e.path] for e in kept]
    assert raw.entries_unpack(raw.entries_pack([])) == []
