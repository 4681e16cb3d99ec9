"""A source's `stale` flag is served from the source, not stored with its chunks: a source going
stale or fresh again writes no chunk or origin row, and every reader (export, search,
get_memory, the Brain page) says stale exactly while the source is stale."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from django.db import connection
from django.urls import reverse

from bundles.models import Chunk, ChunkOrigin
from memoryadmin.audit import Actor
from memoryadmin.models import Scope
from sources.models import Health, Source
from sources.services.lifecycle import source_add, source_approve
from sources.services.refresh import source_refresh
from sources.signals import source_served_changed
from tests.brain.conftest import export
from tests.brain.test_changed_refresh import _rewritten
from tests.sources.helpers import record_text, write_source

TITLES = {"a": "Deploys go out on Tuesdays", "b": "Short answers", "c": "Monorepo"}
BADGE = '<span class="badge warn">stale</span>'
MIGRATION = importlib.import_module("bundles.migrations.0014_provenance_stale_served")


def _records() -> dict[str, str]:
    return {key: record_text(key, title=title) for key, title in TITLES.items()}


def _refresh(source: Source) -> None:
    source_refresh(source_id=source.pk)
    source.refresh_from_db()


def _source(team, root: Path) -> Source:  # type: ignore[no-untyped-def]
    write_source(root, _records())
    source = source_add(actor=Actor.system(), team=team, location=str(root))
    source_approve(actor=Actor.system(), source=source)
    _refresh(source)
    return source


def _go_stale(source: Source, root: Path) -> None:
    (root / "memories.json").write_text("{not json", encoding="utf-8")
    _refresh(source)
    assert source.health == Health.STALE


def _go_fresh(source: Source, root: Path) -> None:
    write_source(root, _records())
    _refresh(source)
    assert source.health == Health.FRESH


def _stored(team) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    """Every stored source provenance: the mirrored chunks' own and the origins'."""
    chunks = Chunk.objects.filter(team=team, standalone=False)
    found = [m["memoryadmin"] for m in chunks.values_list("metadata", flat=True)]
    return found + list(ChunkOrigin.objects.filter(team=team).values_list("metadata", flat=True))


def _served(team, source: Source, client, page) -> dict[str, set[bool]]:  # type: ignore[no-untyped-def]
    """Where the flag is served -> the values it takes over the source's records."""
    seen: dict[str, set[bool]] = {"export": set(), "search": set(), "get_memory": set()}
    for record in export(client)["chunks"]:
        provenance = record["metadata"]["memoryadmin"]
        seen["export"].add(provenance["stale"])
        seen["export"].update(o["stale"] for o in provenance["origins"])
    response = client.get("/api/search/", {"q": "body", "origin": "source"})
    assert response.status_code == 200, response.content
    results = response.json()["results"]
    assert len(results) == len(TITLES)
    seen["search"] = {r["provenance"]["stale"] for r in results}
    for key in TITLES:
        chunk_id = ChunkOrigin.objects.get(ref=f"source:{source.pk}:{key}").chunk_id
        memory = _memory(client, f"brain:{chunk_id}")  # the chunk, with its origin's provenance
        seen["get_memory"].add(memory["provenance"]["stale"])
        seen["get_memory"].add(_memory(client, f"source:{source.pk}:{key}")["stale"])
    html = page.get(reverse("brain", args=[team.slug])).content.decode()
    badges = html.count(BADGE)
    assert badges in (0, len(TITLES)), html
    seen["brain page"] = {badges == len(TITLES)}
    return seen


def _memory(client, ref: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    response = client.get(f"/api/memories/{ref}/")
    assert response.status_code == 200, response.content
    return response.json()["memory"]


def _clients(team, token_client, client, viewer_user):  # type: ignore[no-untyped-def]
    client.force_login(viewer_user)
    return token_client(team, [Scope.BUNDLES_EXPORT, Scope.CONTEXT_READ]), client


def test_a_source_going_stale_and_fresh_again_writes_no_chunk_or_origin_row(team, tmp_path):
    source = _source(team, tmp_path)
    before = {c.pk: (c.updated_at, c.metadata) for c in Chunk.objects.filter(team=team)}
    origins = {o.pk: (o.updated_at, o.metadata) for o in ChunkOrigin.objects.filter(team=team)}
    with _rewritten("bundles_chunk") as chunks, _rewritten("bundles_chunkorigin") as moved:
        _go_stale(source, tmp_path)
    assert (chunks, moved) == (set(), set())
    with _rewritten("bundles_chunk") as chunks, _rewritten("bundles_chunkorigin") as moved:
        _go_fresh(source, tmp_path)
    assert (chunks, moved) == (set(), set())
    assert {c.pk: (c.updated_at, c.metadata) for c in Chunk.objects.filter(team=team)} == before
    after = {o.pk: (o.updated_at, o.metadata) for o in ChunkOrigin.objects.filter(team=team)}
    assert after == origins
    assert not any("stale" in provenance for provenance in _stored(team))


def test_every_reader_says_stale_exactly_while_the_source_is_stale(
    team, tmp_path, token_client, client, viewer_user
):
    source = _source(team, tmp_path)
    api, page = _clients(team, token_client, client, viewer_user)
    fresh = {"export": {False}, "search": {False}, "get_memory": {False}, "brain page": {False}}
    assert _served(team, source, api, page) == fresh
    _go_stale(source, tmp_path)
    stale = {name: {True} for name in fresh}
    assert _served(team, source, api, page) == stale
    _go_fresh(source, tmp_path)
    assert _served(team, source, api, page) == fresh


def test_a_stored_stale_flag_is_not_served_and_not_rewritten(
    team, tmp_path, token_client, client, viewer_user
):
    """Rows an earlier version wrote with `stale` (before migration 0014 removed it): the
    source's state is served in its place, and the mirror does not rewrite them for it."""
    source = _source(team, tmp_path)
    api, page = _clients(team, token_client, client, viewer_user)
    fresh = {"export": {False}, "search": {False}, "get_memory": {False}, "brain page": {False}}
    stale = {name: {True} for name in fresh}
    _legacy(team, stale=True)  # stored "stale" on a source that is fresh
    assert _served(team, source, api, page) == fresh
    with _rewritten("bundles_chunk") as chunks, _rewritten("bundles_chunkorigin") as moved:
        _go_stale(source, tmp_path)
    assert (chunks, moved) == (set(), set())
    _legacy(team, stale=False)  # stored "not stale" on a source that is stale
    assert _served(team, source, api, page) == stale
    with _rewritten("bundles_chunk") as chunks, _rewritten("bundles_chunkorigin") as moved:
        _go_fresh(source, tmp_path)
        _go_stale(source, tmp_path)
    assert (chunks, moved) == (set(), set())
    assert _served(team, source, api, page) == stale


def _legacy(team, *, stale: bool) -> None:  # type: ignore[no-untyped-def]
    for origin in ChunkOrigin.objects.filter(team=team):
        ChunkOrigin.objects.filter(pk=origin.pk).update(
            metadata={**origin.metadata, "stale": stale}
        )
        mine = Chunk.objects.get(pk=origin.chunk_id).metadata["memoryadmin"]
        Chunk.objects.filter(pk=origin.chunk_id).update(
            metadata={"memoryadmin": {**mine, "stale": stale}}
        )


def _migrate(statements: dict[str, list[str]]) -> None:
    with connection.cursor() as cursor:
        for statement in statements[connection.vendor]:
            cursor.execute(statement)


def test_the_migration_removes_the_stored_flag_and_going_back_restores_it(team, tmp_path):
    first = _source(team, tmp_path / "one")
    second = _source(team, tmp_path / "two")  # the same texts: origins of the same chunks
    _go_stale(second, tmp_path / "two")
    own = Chunk.objects.create(
        team=team,
        content="Entered by hand",
        content_hash="0" * 64,
        memory_type="fact",
        metadata={"stale": True, "memoryadmin": "stale"},  # not ours to touch
    )
    _legacy(team, stale=True)
    _migrate(MIGRATION.FORWARD)
    assert not any("stale" in provenance for provenance in _stored(team))
    assert Chunk.objects.get(pk=own.pk).metadata == {"stale": True, "memoryadmin": "stale"}
    kept = ChunkOrigin.objects.get(ref=f"source:{first.pk}:a").metadata
    assert kept["record_id"] == "a" and kept["source_id"] == first.pk

    _migrate(MIGRATION.BACKWARD)
    by_source = {
        o.metadata["source_id"]: o.metadata["stale"] for o in ChunkOrigin.objects.filter(team=team)
    }
    assert by_source == {first.pk: False, second.pk: True}
    owners = {
        m["memoryadmin"]["stale"]
        for m in Chunk.objects.filter(team=team)
        .exclude(pk=own.pk)
        .values_list("metadata", flat=True)
    }
    assert owners == {False}  # each chunk's owner is the first source's origin, not stale
    assert Chunk.objects.get(pk=own.pk).metadata == {"stale": True, "memoryadmin": "stale"}
    _migrate(MIGRATION.FORWARD)
    assert not any("stale" in provenance for provenance in _stored(team))


def test_the_brain_page_reads_the_badge_in_its_one_prefetch(
    team, tmp_path, client, viewer_user, django_assert_max_num_queries
):
    source = _source(team, tmp_path)
    _go_stale(source, tmp_path)
    client.force_login(viewer_user)
    url = reverse("brain", args=[team.slug])
    with django_assert_max_num_queries(25):  # as tests/bundles/test_views.py: flat
        html = client.get(url).content.decode()
    assert html.count(BADGE) == len(TITLES)


def test_going_stale_or_fresh_with_the_same_records_asks_the_brain_for_nothing(team, tmp_path):
    source = _source(team, tmp_path / "src")
    asked: list[int] = []

    def receiver(sender, source, **kwargs):  # type: ignore[no-untyped-def]
        asked.append(source.pk)

    source_served_changed.connect(receiver)
    try:
        _go_stale(source, tmp_path / "src")
        _go_stale(source, tmp_path / "src")  # still stale
        _go_fresh(source, tmp_path / "src")
    finally:
        source_served_changed.disconnect(receiver)
    assert asked == []  # a denied source still withdraws: tests/brain/test_sources.py
