"""The mirror's rows built with less Python per row: the same values stored (round 8, cold
refresh; what the joined check of tags and provenance accepts is in test_mirror_parse)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest

from bundles.models import Chunk, ChunkOrigin
from memoryadmin.bulk import insert_values

WHEN = datetime(2026, 3, 4, 5, 6, 7, 123456, tzinfo=UTC)


# -- insert_values: the row plan -----------------------------------------------------------------

# given out of the table's order, JSON among them, most fields left to their defaults
SHUFFLED = ("metadata", "content", "team", "valid_until", "tags", "content_hash", "memory_type")


def _shuffled(team, content: str, metadata) -> tuple:  # type: ignore[no-untyped-def]
    digest = hashlib.sha256(content.encode()).hexdigest()
    return (metadata, content, team.pk, WHEN, ["t", "ü"], digest, "fact")


@pytest.mark.django_db
def test_fields_given_out_of_order_land_in_their_columns(team):  # type: ignore[no-untyped-def]
    insert_values(
        Chunk,
        SHUFFLED,
        [_shuffled(team, "one\ttab", {"k": [1, None]}), _shuffled(team, "two\\", {})],
    )
    one, two = Chunk.objects.filter(team=team).order_by("content")
    assert (one.content, one.metadata, one.tags, one.valid_until) == (
        "one\ttab",
        {"k": [1, None]},
        ["t", "ü"],
        WHEN,
    )
    assert (two.content, two.metadata) == ("two\\", {})
    # every field not given has its default
    assert (one.zone, one.tier, one.importance, one.standalone, one.secret_findings) == (
        "standard",
        "hot",
        0.5,
        True,
        [],
    )
    assert one.embedding is None and one.is_deleted is False


@pytest.mark.django_db
def test_every_field_given_in_the_tables_order_is_stored_as_given(team):  # type: ignore[no-untyped-def]
    chunk = Chunk.objects.create(
        team=team, content="c", content_hash=hashlib.sha256(b"c").hexdigest(), memory_type="fact"
    )
    names = [
        f.name for f in ChunkOrigin._meta.concrete_fields if not (f.primary_key and f.db_returning)
    ]
    values = {
        "team": team.pk,
        "chunk": chunk.pk,
        "kind": "source",
        "group": "source:1",
        "ref": "source:1:r",
        "active": True,
        "expires_at": None,
        "metadata": {"ref": "source:1:r", "n": 2},
        "updated_at": WHEN,
    }
    assert set(names) == set(values)
    insert_values(ChunkOrigin, names, [tuple(values[n] for n in names)])
    origin = ChunkOrigin.objects.get(team=team)
    assert (origin.ref, origin.metadata, origin.updated_at, origin.chunk_id) == (
        "source:1:r",
        {"ref": "source:1:r", "n": 2},
        WHEN,
        chunk.pk,
    )


@pytest.mark.django_db
def test_datetimes_sent_as_their_text_come_back_the_same_instant(team, monkeypatch):  # type: ignore[no-untyped-def]
    from datetime import timedelta, timezone
    from zoneinfo import ZoneInfo

    from memoryadmin import bulk

    monkeypatch.setattr(bulk, "MOMENT_TEXTS", 2)  # the kept texts are dropped on the way
    moments = [
        WHEN,
        WHEN,  # the same moment again: its text is reused
        datetime(2026, 3, 4, 5, 6, 7, 123456, tzinfo=ZoneInfo("Europe/Paris")),  # same instant?
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=timezone(timedelta(hours=5, minutes=30))),
        datetime(2026, 10, 25, 1, 30, tzinfo=ZoneInfo("Europe/Paris")),  # an hour that repeats
        datetime(2026, 10, 25, 1, 30, fold=1, tzinfo=ZoneInfo("Europe/Paris")),
        datetime(2026, 6, 1, 12, 0, 0, 1, tzinfo=UTC),
    ]
    names = ("team", "content", "content_hash", "memory_type", "created_at", "valid_until")
    rows = [
        (team.pk, f"c{n}", hashlib.sha256(f"c{n}".encode()).hexdigest(), "fact", moment, None)
        for n, moment in enumerate(moments)
    ]
    insert_values(Chunk, names, rows)
    stored = dict(Chunk.objects.filter(team=team).values_list("content", "created_at"))
    assert [stored[f"c{n}"] for n in range(len(moments))] == moments
    assert set(Chunk.objects.filter(team=team).values_list("valid_until", flat=True)) == {None}
