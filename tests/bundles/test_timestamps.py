"""Timestamps outside years 1-9999 in UTC: refused where they come in, survived where they are
read (a row written around the checks degrades to null instead of failing the export/page)."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest
from django.db import connection
from django.db.models import Q
from django.urls import reverse

from bundles.imports import bundle_import
from bundles.models import Chunk, Entity, MemoryEdge
from memoryadmin.audit import Actor
from memoryadmin.models import Scope
from tests.bundles.helpers import chunk, make_bundle, response_json

IMPORT = "/v1/brain/import"
EARLY = "0001-01-01T00:00:00+14:00"  # 31 December of year 0 in UTC
LATE = "9999-12-31T23:30:00-01:00"  # year 10000 in UTC
FIRST = datetime(1, 1, 1, tzinfo=UTC)
LAST = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)


@pytest.fixture
def client(team, token_client):  # type: ignore[no-untyped-def]
    return token_client(team, [Scope.BUNDLES_IMPORT, Scope.BUNDLES_EXPORT])


def _edge(a: int, b: int, **extra: object) -> dict:
    return {"chunk_a": a, "chunk_b": b, "edge_type": "causal", "weight": 0.5, **extra}


def _bundle(section: str, field: str, value: str) -> dict:
    chunks = [chunk(1, "kept one"), chunk(2, "kept two")]
    edges: list[dict] = []
    entities: list[dict] = []
    if section == "chunks":
        chunks.append(chunk(3, "bad time", **{field: value}))
    elif section == "memory_edges":
        edges = [_edge(1, 2, **{field: value}), _edge(2, 1)]
    else:
        entities = [{"name": "bad", field: value}, {"name": "good"}]
    return make_bundle(chunks=chunks, edges=edges, entities=entities)


FIELDS = [
    ("chunks", "created_at"),
    ("chunks", "accessed_at"),
    ("chunks", "valid_until"),
    ("memory_edges", "created_at"),
    ("memory_edges", "updated_at"),
    ("entities", "first_seen"),
    ("entities", "last_seen"),
]


def _out_of_range_rows(team) -> int:  # type: ignore[no-untyped-def]
    count = 0
    for model, fields in (
        (Chunk, ("created_at", "accessed_at", "valid_until")),
        (MemoryEdge, ("created_at", "updated_at")),
        (Entity, ("first_seen", "last_seen")),
    ):
        for field in fields:
            out = Q(**{f"{field}__lt": FIRST}) | Q(**{f"{field}__gt": LAST})
            count += model.objects.filter(team=team).filter(out).count()
    return count


@pytest.mark.parametrize("value", [EARLY, LATE], ids=["before-year-1", "after-9999"])
@pytest.mark.parametrize(("section", "field"), FIELDS, ids=[f"{s}.{f}" for s, f in FIELDS])
def test_it_skips_a_record_whose_timestamp_leaves_the_years_1_to_9999_in_utc(
    client, team, section, field, value
):
    response = client.post(IMPORT, _bundle(section, field, value), format="json")
    assert response.status_code == 200, response.content
    report = response.json()["report"]
    assert any("timestamp-range" in w or "outside years 1 to 9999" in w for w in report["warnings"])
    assert _out_of_range_rows(team) == 0
    if section == "chunks":
        assert report["chunks"]["skipped_invalid"] == 1 and report["chunks"]["inserted"] == 2
    elif section == "memory_edges":
        assert report["memory_edges"] == {"upserted": 1, "skipped": 1}
    else:
        assert list(Entity.objects.filter(team=team).values_list("name", flat=True)) == ["good"]
    # and the brain stays readable everywhere
    assert client.post("/v1/brain/export", {"scope": "full"}, format="json").status_code == 200
    stream = client.post("/v1/brain/export/stream", {"scope": "full"}, format="json")
    assert stream.status_code == 200


@pytest.mark.parametrize("path", ["/v1/brain/export", "/v1/brain/export/stream"])
@pytest.mark.parametrize("value", [EARLY, LATE], ids=["before-year-1", "after-9999"])
def test_it_refuses_an_export_since_outside_the_years_1_to_9999_with_400(client, path, value):
    response = client.post(path, {"scope": "since", "since": value}, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "timestamp-range"


def test_it_refuses_a_bundle_whose_manifest_since_is_out_of_range_with_422(client, team):
    bundle = make_bundle(chunks=[chunk(1, "x")])
    bundle["manifest"]["since"] = EARLY
    response = client.post(IMPORT, bundle, format="json")
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "timestamp-range"
    assert not Chunk.objects.filter(team=team).exists()


def _corrupt(table: str, column: str, pk: int) -> None:
    """Write a timestamp no driver reads back, as a row from before the import checked."""
    # PostgreSQL stores the first as 0001-12-31 10:00 BC; SQLite keeps the text as given
    postgresql = connection.vendor == "postgresql"
    value = "0001-01-01 00:00:00+14" if postgresql else "0000-12-31 10:00:00"
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET {column} = %s WHERE id = %s", [value, pk])  # noqa: S608


def test_it_exports_and_shows_a_stored_out_of_range_timestamp_as_null(client, team, admin_user):
    bundle_import(
        team=team,
        actor=Actor.system(),
        bundle=make_bundle(
            chunks=[chunk(1, "old row"), chunk(2, "fine row")],
            edges=[_edge(1, 2)],
            entities=[{"name": "ancient", "first_seen": "2026-01-01T00:00:00Z"}],
        ),
    )
    bad = Chunk.objects.get(team=team, content="old row")
    _corrupt(Chunk._meta.db_table, "created_at", bad.pk)
    _corrupt(Chunk._meta.db_table, "valid_until", bad.pk)
    _corrupt(MemoryEdge._meta.db_table, "created_at", MemoryEdge.objects.get(team=team).pk)
    _corrupt(Entity._meta.db_table, "first_seen", Entity.objects.get(team=team).pk)

    response = client.post("/v1/brain/export", {"scope": "full"}, format="json")
    assert response.status_code == 200
    bundle = response_json(response)
    rows = {c["content"]: c for c in bundle["chunks"]}
    assert rows["old row"]["created_at"] is None and rows["old row"]["valid_until"] is None
    assert rows["fine row"]["created_at"] == "2026-01-02T03:04:05Z"
    assert bundle["memory_edges"][0]["created_at"] is None
    assert bundle["entities"][0]["first_seen"] is None
    stream = client.post("/v1/brain/export/stream", {"scope": "full"}, format="json")
    lines = [orjson.loads(line) for line in b"".join(stream.streaming_content).splitlines()]
    assert lines[-1]["counts_match"] is True
    streamed = {
        line["record"]["content"]: line["record"]
        for line in lines[1:-1]
        if line["kind"] == "chunks"
    }
    assert streamed["old row"]["created_at"] is None

    client.force_login(admin_user)
    page = client.get(reverse("brain", args=[team.slug]))
    assert page.status_code == 200
    assert "old row" in page.content.decode()
