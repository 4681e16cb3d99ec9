"""A changed refresh rewrites only the rows of the records that changed: a source record's
`retrieved_at` is not stored with its chunk or origin but served from the source's current
snapshot (bundles.provenance), in the export and in agent results."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.db import connection

from bundles.models import Chunk, ChunkOrigin
from bundles.services.chunks import chunk_upsert
from formats import memoryai as protocol
from memoryadmin.audit import Actor
from memoryadmin.models import Scope
from sources.models import Source
from sources.services.lifecycle import source_add, source_approve
from sources.services.refresh import source_refresh
from tests.brain.conftest import export
from tests.sources.helpers import record_text, write_source

TITLES = {"a": "Deploys go out on Tuesdays", "b": "Short answers", "c": "Monorepo"}


def _records(**changes: str) -> dict[str, str]:
    return {
        key: record_text(key, title=changes.get(key, title), extra="tags: ['ops']\n")
        for key, title in TITLES.items()
    }


def _refresh(source: Source) -> None:
    source_refresh(source_id=source.pk)
    source.refresh_from_db()


def _source(team, root: Path) -> Source:  # type: ignore[no-untyped-def]
    write_source(root, _records())
    source = source_add(actor=Actor.system(), team=team, location=str(root))
    source_approve(actor=Actor.system(), source=source)
    _refresh(source)
    return source


@contextmanager
def _rewritten(table: str) -> Iterator[set[int]]:
    """The ids of the table's rows that an UPDATE touched inside the block: PostgreSQL writes
    a new row version (a new ctid) on every UPDATE; SQLite logs them with a temporary trigger."""
    found: set[int] = set()
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"SELECT id, ctid::text FROM {table}")  # noqa: S608 (a test's table)
            before = dict(cursor.fetchall())
        else:
            cursor.execute("CREATE TEMP TABLE IF NOT EXISTS rewritten_log (tbl TEXT, row_id INT)")
            log = f"INSERT INTO rewritten_log VALUES ('{table}', old.id)"  # noqa: S608
            cursor.execute(
                f"CREATE TEMP TRIGGER rewritten_{table} AFTER UPDATE ON {table} BEGIN {log}; END"
            )
    yield found
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"SELECT id, ctid::text FROM {table}")  # noqa: S608 (a test's table)
            found.update(
                pk for pk, ctid in cursor.fetchall() if pk in before and before[pk] != ctid
            )
        else:
            cursor.execute("SELECT row_id FROM rewritten_log WHERE tbl = %s", [table])
            found.update(row[0] for row in cursor.fetchall())
            cursor.execute(f"DROP TRIGGER rewritten_{table}")
            cursor.execute("DELETE FROM rewritten_log WHERE tbl = %s", [table])


def _chunk_of(source: Source, key: str) -> Chunk:
    return ChunkOrigin.objects.get(ref=f"source:{source.pk}:{key}").chunk


def _read_time(source: Source) -> str:
    assert source.current_snapshot is not None
    return protocol.format_timestamp(source.current_snapshot.created_at)  # type: ignore[return-value]


def _served_times(client, source: Source) -> dict[str, set[str]]:  # type: ignore[no-untyped-def]
    """record id -> the retrieved_at values the export and the search give its text."""
    times: dict[str, set[str]] = {}
    for record in export(client)["chunks"]:
        provenance = record["metadata"]["memoryadmin"]
        found = times.setdefault(provenance["record_id"], set())
        found.add(provenance["retrieved_at"])
        found.update(o["retrieved_at"] for o in provenance["origins"])
    response = client.get("/api/search/", {"q": "body", "origin": "source"})
    assert response.status_code == 200, response.content
    results = {r["ref"]: r for r in response.json()["results"]}
    for key in TITLES:
        times[key].add(results[f"source:{source.pk}:{key}"]["provenance"]["retrieved_at"])
    return times


def test_a_changed_refresh_rewrites_only_the_changed_records_rows(team, tmp_path, token_client):
    source = _source(team, tmp_path)
    client = token_client(team, [Scope.BUNDLES_EXPORT, Scope.CONTEXT_READ])
    first = _read_time(source)
    assert _served_times(client, source) == {key: {first} for key in TITLES}
    kept = {key: _chunk_of(source, key) for key in ("a", "c")}
    old_b = _chunk_of(source, "b")
    origins = {o.ref: o for o in ChunkOrigin.objects.filter(team=team)}

    write_source(tmp_path, _records(b="Shorter answers"))
    snapshot = source.current_snapshot_id
    with _rewritten("bundles_chunk") as chunks, _rewritten("bundles_chunkorigin") as moved:
        _refresh(source)
    assert source.current_snapshot_id != snapshot  # a new snapshot: a changed refresh

    new_b = _chunk_of(source, "b")
    assert new_b.pk != old_b.pk and new_b.content.startswith("Shorter answers")
    assert chunks <= {old_b.pk}  # withdrawn; the new text was inserted, the others untouched
    assert Chunk.objects.get(pk=old_b.pk).withdrawn_at is not None
    assert moved == {origins[f"source:{source.pk}:b"].pk}
    for before in kept.values():
        after = Chunk.objects.get(pk=before.pk)
        assert (after.updated_at, after.metadata) == (before.updated_at, before.metadata)
    # Nothing stored carries a read time; every served one is the new snapshot's.
    stored = [*Chunk.objects.filter(team=team).values_list("metadata", flat=True)]
    stored += [*ChunkOrigin.objects.filter(team=team).values_list("metadata", flat=True)]
    assert not any("retrieved_at" in m.get("memoryadmin", m) for m in stored)
    second = _read_time(source)
    assert second != first
    assert _served_times(client, source) == {key: {second} for key in TITLES}


def test_a_changed_tag_rewrites_that_chunk_and_marks_it_for_since_exports(team, tmp_path):
    source = _source(team, tmp_path)
    before = {key: _chunk_of(source, key) for key in TITLES}
    records = _records()
    records["c"] = record_text("c", title=TITLES["c"], extra="tags: ['ops', 'repo']\n")
    write_source(tmp_path, records)
    with _rewritten("bundles_chunk") as chunks, _rewritten("bundles_chunkorigin") as moved:
        _refresh(source)
    assert chunks == {before["c"].pk} and moved == set()
    after = Chunk.objects.get(pk=before["c"].pk)
    assert after.tags == ["ops", "repo"] and after.updated_at > before["c"].updated_at
    assert Chunk.objects.get(pk=before["a"].pk).updated_at == before["a"].updated_at


def test_a_stored_read_time_is_served_as_the_current_one_and_left_alone(
    team, tmp_path, token_client
):
    """Rows an earlier version wrote with `retrieved_at` are not rewritten for it."""
    source = _source(team, tmp_path)
    client = token_client(team, [Scope.BUNDLES_EXPORT, Scope.CONTEXT_READ])
    legacy = "2020-01-01T00:00:00Z"
    for origin in ChunkOrigin.objects.filter(team=team):
        ChunkOrigin.objects.filter(pk=origin.pk).update(
            metadata={**origin.metadata, "retrieved_at": legacy}
        )
        mine = origin.chunk.metadata["memoryadmin"]
        Chunk.objects.filter(pk=origin.chunk_id).update(
            metadata={"memoryadmin": {**mine, "retrieved_at": legacy}}
        )
    assert _served_times(client, source) == {key: {_read_time(source)} for key in TITLES}

    write_source(tmp_path, _records(b="Shorter answers"))
    old_b = _chunk_of(source, "b")
    with _rewritten("bundles_chunk") as chunks, _rewritten("bundles_chunkorigin") as moved:
        _refresh(source)
    assert chunks <= {old_b.pk}
    assert moved == {ChunkOrigin.objects.get(ref=f"source:{source.pk}:b").pk}
    assert _served_times(client, source) == {key: {_read_time(source)} for key in TITLES}


def test_an_imported_text_a_source_also_serves_exports_the_current_read_time(
    team, tmp_path, token_client
):
    client = token_client(team, [Scope.BUNDLES_EXPORT])
    text = f"{TITLES['a']}\n\nSome body text."
    chunk_upsert(team=team, actor=Actor.system(), content=text, memory_type="fact")
    source = _source(team, tmp_path)
    held = Chunk.objects.get(team=team, content=text)
    assert held.standalone and "retrieved_at" not in held.metadata["memoryadmin"]
    write_source(tmp_path, _records(c="Monorepo rules"))
    _refresh(source)
    record = next(c for c in export(client)["chunks"] if c["content"] == text)
    assert record["metadata"]["memoryadmin"]["retrieved_at"] == _read_time(source)
    assert Chunk.objects.get(pk=held.pk).metadata == held.metadata
