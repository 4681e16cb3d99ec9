"""Service flows: add, approve, disable, refresh; atomic swaps, stale and denied handling."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent
from sources import selectors, tasks
from sources.models import (
    Health,
    Problem,
    Record,
    RefreshRun,
    RunStatus,
    Snapshot,
    Source,
    SourceState,
)
from sources.services.lifecycle import (
    source_add,
    source_approve,
    source_disable,
    source_refresh_request,
)
from sources.services.refresh import source_refresh
from tests.sources.helpers import record_text, write_source


def _add(team, root, *, approve=True) -> Source:  # type: ignore[no-untyped-def]
    source = source_add(actor=Actor.system(), team=team, location=str(root))
    if approve:
        source_approve(actor=Actor.system(), source=source)
    return source


def _refresh(source: Source) -> RefreshRun:
    run = source_refresh(source_id=source.pk)
    source.refresh_from_db()
    return run


def test_it_previews_on_add_and_serves_only_after_approval(
    team, tmp_path, django_capture_on_commit_callbacks
):
    write_source(tmp_path, {"a": record_text("a")})
    with django_capture_on_commit_callbacks(execute=True):
        source = _add(team, tmp_path, approve=False)
    source.refresh_from_db()
    assert source.state == SourceState.PENDING
    assert source.health == Health.FRESH and source.current_snapshot.record_count == 1
    assert list(selectors.context_records(team)) == []
    with django_capture_on_commit_callbacks(execute=True):
        source_approve(actor=Actor.system(), source=source)
    assert [r.record_id for r in selectors.context_records(team)] == ["a"]
    actions = list(AuditEvent.objects.filter(team=team).values_list("action", flat=True))
    for action in ("source.add", "source.approve", "source.refresh.request", "source.refresh"):
        assert action in actions
    assert "source.health" in actions


def test_it_stops_serving_a_disabled_source(team, tmp_path):
    write_source(tmp_path, {"a": record_text("a")})
    source = _add(team, tmp_path)
    _refresh(source)
    source_disable(actor=Actor.system(), source=source)
    assert list(selectors.context_records(team)) == []
    assert AuditEvent.objects.filter(action="source.disable").exists()
    with pytest.raises(ValidationError):
        source_refresh_request(actor=Actor.system(), source=source)


def test_it_refuses_the_same_source_twice_per_team(team, other_team, tmp_path, settings):
    _add(team, tmp_path)
    with pytest.raises(ValidationError):
        _add(team, tmp_path)
    settings.SOURCE_LOCAL_SHARED = True  # another team's folder only when the operator allows
    assert _add(other_team, tmp_path).team == other_team


def test_it_keeps_the_old_snapshot_when_a_refresh_fails(team, tmp_path):
    write_source(tmp_path, {"a": record_text("a")})
    source = _add(team, tmp_path)
    _refresh(source)
    snapshot_id = source.current_snapshot_id
    (tmp_path / "memories.json").write_text("{broken")
    run = _refresh(source)
    assert run.status == RunStatus.FAILED and run.error_code == "json-syntax"
    assert source.health == Health.STALE and source.current_snapshot_id == snapshot_id
    assert [r.record_id for r in selectors.context_records(team)] == ["a"]
    assert Snapshot.objects.filter(source=source).count() == 1


def test_it_swaps_snapshots_atomically_when_the_swap_fails(team, tmp_path, monkeypatch):
    write_source(tmp_path, {"a": record_text("a")})
    source = _add(team, tmp_path)
    _refresh(source)
    old = source.current_snapshot_id
    write_source(tmp_path, {"a": record_text("a", title="New"), "b": record_text("b")})

    def explode(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("disk full")

    monkeypatch.setattr(Problem.objects, "bulk_create", explode)
    run = source_refresh(source_id=source.pk)
    assert run.status == RunStatus.FAILED and run.error_code == "store-failed"
    assert "disk full" in run.error
    source.refresh_from_db()
    assert source.health == Health.STALE and source.last_error_code == "store-failed"
    assert source.current_snapshot_id == old
    assert [r.title for r in Record.objects.filter(snapshot_id=old)] == ["A record"]
    assert Snapshot.objects.filter(source=source).count() == 1


def test_it_reapplies_expiry_to_a_stale_snapshot(team, tmp_path):
    soon = (timezone.now() + timedelta(seconds=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    write_source(
        tmp_path,
        {"a": record_text("a", extra=f"expires: '{soon}'\n"), "b": record_text("b")},
    )
    source = _add(team, tmp_path)
    _refresh(source)
    (tmp_path / "memories.json").unlink()
    _refresh(source)
    assert source.health == Health.STALE
    later = timezone.now() + timedelta(seconds=5)
    records = selectors.context_records(team, now=later)
    assert [r.record_id for r in records] == ["b"]
    assert [r.record_id for r in selectors.inactive_records(source, later)] == ["a"]


def test_it_removes_a_record_dropped_from_the_manifest(team, tmp_path):
    write_source(tmp_path, {"a": record_text("a"), "b": record_text("b")})
    source = _add(team, tmp_path)
    _refresh(source)
    write_source(tmp_path, {"a": record_text("a")})  # b's file stays on disk
    run = _refresh(source)
    assert run.changed
    assert [r.record_id for r in selectors.context_records(team)] == ["a"]


def test_it_applies_supersedes_and_reports_problems(team, tmp_path):
    write_source(
        tmp_path,
        {
            "new": record_text("new", extra="supersedes: ['old', 'ghost']\n"),
            "old": record_text("old"),
        },
    )
    source = _add(team, tmp_path)
    _refresh(source)
    assert [r.record_id for r in selectors.context_records(team)] == ["new"]
    problems = list(source.current_snapshot.problems.values_list("code", "ids"))
    assert problems == [("supersedes-missing", ["new", "ghost"])]


def test_it_keeps_two_sources_with_the_same_ids_apart(team, tmp_path):
    first = write_source(tmp_path / "one", {"a": record_text("a", updated="2026-01-02T00:00:00Z")})
    second = write_source(tmp_path / "two", {"a": record_text("a", updated="2026-06-01T00:00:00Z")})
    for root in (first, second):
        _refresh(_add(team, root))
    records = list(selectors.context_records(team))
    assert [(r.source.identity, r.record_id) for r in records] == [
        (str(first), "a"),
        (str(second), "a"),
    ]


def test_it_skips_unchanged_files_and_leaves_an_unchanged_snapshot_alone(team, tmp_path):
    write_source(tmp_path, {f"r{i}": record_text(f"r{i}") for i in range(20)})
    source = _add(team, tmp_path)
    first = _refresh(source)
    snapshot_id = source.current_snapshot_id
    second = _refresh(source)
    assert first.parsed_count == 20 and first.changed
    assert second.parsed_count == 0 and second.reused_count == 20 and not second.changed
    assert source.current_snapshot_id == snapshot_id
    (tmp_path / "records" / "r3.md").write_text(record_text("r3", title="Edited"))
    third = _refresh(source)
    assert third.parsed_count == 1 and third.changed


def test_it_skips_all_parsing_when_a_large_source_is_unchanged(team, tmp_path):
    # How much faster that makes it is measured by `make bench`, not asserted here.
    count = 1500
    write_source(tmp_path, {f"r{i}": record_text(f"r{i}") for i in range(count)})
    source = _add(team, tmp_path)
    cold = _refresh(source)
    warm = _refresh(source)
    assert cold.record_count == count and cold.parsed_count == count
    assert warm.reused_count == count and warm.parsed_count == 0 and not warm.changed


def test_it_marks_a_missing_directory_stale(team, tmp_path):
    source = _add(team, tmp_path / "nowhere")
    run = _refresh(source)
    assert run.status == RunStatus.FAILED and run.error_code == "not-found"
    assert source.health == Health.FAILED  # never read; stale needs an older good copy


def test_it_refreshes_only_due_approved_sources(team, tmp_path, django_capture_on_commit_callbacks):
    write_source(tmp_path / "a", {"a": record_text("a")})
    write_source(tmp_path / "b", {"b": record_text("b")})
    with django_capture_on_commit_callbacks(execute=True):
        due = _add(team, tmp_path / "a")
        pending = _add(team, tmp_path / "b", approve=False)
    long_ago = timezone.now() - timedelta(hours=2)
    Source.objects.update(last_attempt_at=long_ago)
    with django_capture_on_commit_callbacks(execute=True):
        queued = tasks.sources_refresh_due()
    assert queued == 1
    assert RefreshRun.objects.filter(source=due, trigger="schedule").count() == 1
    assert not RefreshRun.objects.filter(source=pending, trigger="schedule").exists()
    due.refresh_from_db()
    assert due.health == Health.FRESH
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.sources_refresh_due() == 0  # not due again yet


def test_it_treats_a_finished_run_as_done_when_retried(team, tmp_path):
    write_source(tmp_path, {"a": record_text("a")})
    source = _add(team, tmp_path)
    run = source_refresh_request(actor=Actor.system(), source=source)
    source_refresh(source_id=source.pk, run_id=run.pk)
    again = source_refresh(source_id=source.pk, run_id=run.pk)
    assert again.status == RunStatus.SUCCEEDED
    assert RefreshRun.objects.filter(source=source, status=RunStatus.SUCCEEDED).count() == 1


def test_it_retries_when_another_refresh_holds_the_lock(team, tmp_path):
    from celery.exceptions import Retry

    from memoryadmin.locks import named_lock

    write_source(tmp_path, {"a": record_text("a")})
    source = _add(team, tmp_path)
    with named_lock(source.lock_name), pytest.raises(Retry):
        tasks.source_refresh.apply(args=[source.pk], throw=True)


def test_it_takes_the_source_lock_when_the_service_is_called_directly(team, tmp_path):
    """The bench, the demo seeding and the CLI call the service, not the task: it serialises
    itself, so a second refresh of the same source never runs beside the first."""
    from memoryadmin.locks import LockBusy, named_lock

    write_source(tmp_path, {"a": record_text("a")})
    source = _add(team, tmp_path)
    runs = RefreshRun.objects.filter(source=source).count()
    with named_lock(source.lock_name), pytest.raises(LockBusy):
        source_refresh(source_id=source.pk)
    assert RefreshRun.objects.filter(source=source).count() == runs
    assert source_refresh(source_id=source.pk).status == RunStatus.SUCCEEDED


def test_it_marks_a_run_that_lost_its_worker_when_the_service_refreshes(team, tmp_path):
    write_source(tmp_path, {"a": record_text("a")})
    source = _add(team, tmp_path)
    lost = RefreshRun.objects.create(source=source, status=RunStatus.RUNNING, trigger="manual")
    run = source_refresh(source_id=source.pk)
    lost.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED
    assert (lost.status, lost.error_code) == (RunStatus.FAILED, "worker-lost")
    assert AuditEvent.objects.filter(action="source.refresh.abandoned").count() == 1


def test_it_stamps_only_the_snapshot_and_skips_the_mirror_when_nothing_changed(
    team, tmp_path, django_assert_max_num_queries
):
    from bundles.models import Chunk, ChunkOrigin

    write_source(tmp_path, {f"r{i}": record_text(f"r{i}") for i in range(30)})
    source = _add(team, tmp_path)
    _refresh(source)
    assert ChunkOrigin.objects.filter(team=team, active=True).count() == 30
    stamped = set(
        Record.objects.filter(snapshot=source.current_snapshot).values_list("retrieved_at")
    )
    before = source.current_snapshot.retrieved_at
    with django_assert_max_num_queries(25):  # no per-record query, no mirror pass
        run = _refresh(source)
    assert not run.changed
    source.current_snapshot.refresh_from_db()
    assert source.current_snapshot.retrieved_at > before
    assert (
        set(Record.objects.filter(snapshot=source.current_snapshot).values_list("retrieved_at"))
        == stamped
    )
    record = selectors.context_records(team).first()
    assert record.snapshot.retrieved_at == source.current_snapshot.retrieved_at
    # A changed record still reaches the brain.
    (tmp_path / "records" / "r3.md").write_text(record_text("r3", title="Edited"))
    _refresh(source)
    assert Chunk.objects.filter(team=team, content__contains="Edited").exists()


def test_a_spooled_refresh_stores_every_record_and_counts_the_manifest(team, tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    """Records past the spool's first batch come back from its file, in manifest order; the
    snapshot counts the manifest's entries after the read has let them go."""
    from sources.fetchers import read

    monkeypatch.setattr(read, "SPOOL_BATCH", 3)
    records = {f"r{i}": record_text(f"r{i}", title=f"Record {i}") for i in range(10)}
    records["r4"] = record_text("other-id")  # rejected: the id is not the manifest's
    write_source(tmp_path, records)
    source = _add(team, tmp_path)
    run = _refresh(source)
    assert run.status == RunStatus.SUCCEEDED and run.parsed_count == 10
    snapshot = source.current_snapshot
    assert (snapshot.manifest_entries, snapshot.record_count, snapshot.rejected_count) == (10, 9, 1)
    stored = dict(Record.objects.filter(snapshot=snapshot).values_list("record_id", "title"))
    assert stored == {f"r{i}": f"Record {i}" for i in range(10) if i != 4}
    # the same bytes again: one fingerprint, so the snapshot is kept
    run = _refresh(source)
    assert run.changed is False and run.reused_count == 9
    # one file edited: a new snapshot of 8 reused records (spooled as their paths) and one read
    (tmp_path / "records" / "r7.md").write_text(record_text("r7", title="Edited"), "utf-8")
    run = _refresh(source)
    assert run.changed is True and (run.reused_count, run.parsed_count) == (8, 2)
    stored = dict(
        Record.objects.filter(snapshot=source.current_snapshot).values_list("record_id", "title")
    )
    assert stored == {f"r{i}": "Edited" if i == 7 else f"Record {i}" for i in range(10) if i != 4}
