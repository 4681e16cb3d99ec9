"""memoryadmin.bulk: COPY on PostgreSQL, bulk_create elsewhere; the same rows either way."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest

from bundles.models import Chunk
from memoryadmin.bulk import bulk_insert, insert_new, insert_values, update_values

pytestmark = pytest.mark.django_db

WHEN = datetime(2026, 3, 4, 5, 6, 7, 123456, tzinfo=UTC)


def _chunk(team, content: str, **extra) -> Chunk:
    return Chunk(
        team=team,
        content=content,
        content_hash=hashlib.sha256(content.encode()).hexdigest(),
        memory_type="fact",
        tags=["a", "ü"],
        metadata={"nested": {"list": [1, 2.5, None, True]}, "quote": 'it\'s "x"\t\\'},
        embedding=b"\x00\x01\xff",
        created_at=WHEN,
        **extra,
    )


def test_it_inserts_every_field_as_the_orm_would(team):
    assert bulk_insert(Chunk, [_chunk(team, "tab\there\nnewline \\ back")]) == 1
    chunk = Chunk.objects.get(team=team)
    assert chunk.content == "tab\there\nnewline \\ back"
    assert chunk.tags == ["a", "ü"]
    assert chunk.metadata == {"nested": {"list": [1, 2.5, None, True]}, "quote": 'it\'s "x"\t\\'}
    assert bytes(chunk.embedding) == b"\x00\x01\xff"
    assert chunk.created_at == WHEN
    assert chunk.valid_until is None
    assert chunk.standalone is True  # the model's default


def test_it_skips_conflicting_rows_when_asked(team):
    bulk_insert(Chunk, [_chunk(team, "one")])
    bulk_insert(Chunk, [_chunk(team, "two"), _chunk(team, "one")], ignore_conflicts=True)
    assert sorted(Chunk.objects.filter(team=team).values_list("content", flat=True)) == [
        "one",
        "two",
    ]


def test_it_refuses_a_conflict_it_was_not_told_to_ignore(team):
    from django.db import IntegrityError, transaction

    bulk_insert(Chunk, [_chunk(team, "one")])
    with pytest.raises(IntegrityError), transaction.atomic():
        bulk_insert(Chunk, [_chunk(team, "one")])
    assert Chunk.objects.filter(team=team).count() == 1


@pytest.mark.django_db(transaction=True)
def test_it_streams_the_rows_django_would_give_outside_a_transaction(team):
    import json

    from memoryadmin.bulk import stream_rows

    bulk_insert(Chunk, [_chunk(team, "one"), _chunk(team, "two")])
    values = (
        Chunk.objects.filter(team=team)
        .order_by("id")
        .values_list("id", "content", "tags", "metadata", "embedding", "created_at", "valid_until")
    )
    expected = [tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in values]
    got = [
        tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)
        for row in stream_rows(values, itersize=1, json_loads=json.loads)
    ]
    assert got == expected
    assert got[0][2] == ["a", "ü"] and got[0][5] == WHEN


def test_it_prepares_plain_values_as_is_and_the_rest_through_the_field(team):
    from django.db import models

    from memoryadmin.bulk import _preparer

    if _connection().vendor != "postgresql":
        pytest.skip("the COPY preparation is PostgreSQL's (elsewhere bulk_create prepares)")
    chunk = _chunk(team, "one")
    by_name = {f.name: f for f in Chunk._meta.concrete_fields}
    for name in (
        "content",
        "team",
        "created_at",
        "valid_until",
        "standalone",
        "metadata",
        "embedding",
    ):
        field = by_name[name]
        expected = field.get_db_prep_save(field.pre_save(chunk, True), connection=_connection())
        prepared = _preparer(field)(chunk)
        assert type(prepared) is type(expected), name
        assert getattr(prepared, "obj", prepared) == getattr(expected, "obj", expected), name

    class Upper(models.CharField):
        def get_prep_value(self, value):
            return value.upper()

    upper = Upper(max_length=10)
    upper.attname = "content"
    assert _preparer(upper)(chunk) == "ONE"  # a subclass prepares its own way


def _connection():
    from django.db import connection

    return connection


# -- insert_values / update_values: plain rows, no model instance per row ---------------------

VALUE_FIELDS = ("team", "content", "content_hash", "memory_type", "tags", "metadata", "created_at")


def _values(team, content: str) -> tuple:
    digest = hashlib.sha256(content.encode()).hexdigest()
    return (team.pk, content, digest, "fact", ["a", "ü"], {"n": {"l": [1, 2.5, None]}}, WHEN)


def test_it_inserts_plain_rows_with_the_other_fields_defaulted(team):
    insert_values(Chunk, VALUE_FIELDS, [_values(team, "tab\there \\ back")])
    chunk = Chunk.objects.get(team=team)
    assert (chunk.content, chunk.tags, chunk.metadata) == (
        "tab\there \\ back",
        ["a", "ü"],
        {"n": {"l": [1, 2.5, None]}},
    )
    assert chunk.created_at == WHEN
    assert (chunk.standalone, chunk.zone, chunk.secret_findings) == (True, "standard", [])


def test_it_returns_only_the_rows_it_inserted_past_conflicts(team):
    from django.db import connection

    insert_values(Chunk, VALUE_FIELDS, [_values(team, "one")])
    returned = insert_values(
        Chunk,
        VALUE_FIELDS,
        [_values(team, "two"), _values(team, "one")],
        ignore_conflicts=True,
        returning=("id", "content"),
    )
    two = Chunk.objects.get(team=team, content="two")
    # PostgreSQL returns the inserted rows; elsewhere nothing (callers look them up)
    assert returned == ([(two.pk, "two")] if connection.vendor == "postgresql" else [])
    assert Chunk.objects.filter(team=team).count() == 2


def test_it_sets_fields_of_existing_rows_json_included(team):
    insert_values(Chunk, VALUE_FIELDS, [_values(team, "one"), _values(team, "two")])
    one, two = Chunk.objects.filter(team=team).order_by("content")
    assert (
        update_values(
            Chunk,
            ("memory_type", "metadata", "valid_until"),
            [(one.pk, "decision", {"x": ["y"]}, WHEN), (two.pk, "fact", {}, None)],
        )
        == 2
    )
    one.refresh_from_db()
    two.refresh_from_db()
    assert (one.memory_type, one.metadata, one.valid_until) == ("decision", {"x": ["y"]}, WHEN)
    assert (two.memory_type, two.metadata, two.valid_until) == ("fact", {}, None)
    assert update_values(Chunk, ("memory_type",), []) == 0


def test_two_column_lists_for_one_table_share_no_scratch_table_in_a_transaction(team):
    """The scratch table is per column list: a narrower COPY before a wider one in the same
    transaction (an import, then a mirror) must not find a table shaped by the first."""
    from django.db import connection, transaction

    from memoryadmin.bulk import copy_rows

    if connection.vendor != "postgresql":
        pytest.skip("COPY and its scratch tables are PostgreSQL's")
    fields = [f for f in Chunk._meta.concrete_fields if not f.primary_key]
    narrow = [f for f in fields if f.name != "valid_until"]  # nullable: left out of the first

    def row(content: str, given: list) -> list:
        chunk = _chunk(team, content, valid_until=WHEN)
        return [f.get_db_prep_save(getattr(chunk, f.attname), connection) for f in given]

    conflict = "ON CONFLICT DO NOTHING RETURNING content"
    with transaction.atomic():
        first = copy_rows(
            Chunk, [f.column for f in narrow], [row("one", narrow)], conflict=conflict
        )
        second = copy_rows(
            Chunk, [f.column for f in fields], [row("two", fields)], conflict=conflict
        )
    assert (first, second) == ([("one",)], [("two",)])
    assert dict(Chunk.objects.filter(team=team).values_list("content", "valid_until")) == {
        "one": None,
        "two": WHEN,
    }


# -- insert_new: rows a look-up found missing --------------------------------------------------


def test_it_inserts_new_rows_and_returns_their_ids_by_key(team):
    from django.db import connection

    returned = insert_new(
        Chunk, VALUE_FIELDS, [_values(team, "one"), _values(team, "two")], key="content"
    )
    stored = dict(Chunk.objects.filter(team=team).values_list("id", "content"))
    assert sorted(stored.values()) == ["one", "two"]
    # PostgreSQL returns the inserted rows; elsewhere nothing (callers look them up)
    assert returned == (sorted(stored.items()) if connection.vendor == "postgresql" else [])
    chunk = Chunk.objects.get(team=team, content="one")
    assert (chunk.tags, chunk.metadata, chunk.created_at) == (
        ["a", "ü"],
        {"n": {"l": [1, 2.5, None]}},
        WHEN,
    )
    assert (chunk.standalone, chunk.zone, chunk.secret_findings) == (True, "standard", [])


def test_a_row_inserted_meanwhile_is_skipped_as_a_conflict(team):
    """A concurrent insert of the same text: the straight COPY's unique violation rolls back
    to its savepoint and the rows take the scratch path, which skips that one."""
    from django.db import connection, transaction

    insert_values(Chunk, VALUE_FIELDS, [_values(team, "one")])
    with transaction.atomic():
        returned = insert_new(
            Chunk, VALUE_FIELDS, [_values(team, "two"), _values(team, "one")], key="content"
        )
        assert Chunk.objects.filter(team=team).count() == 2  # the transaction goes on
    two = Chunk.objects.get(team=team, content="two")
    assert returned == ([(two.pk, "two")] if connection.vendor == "postgresql" else [])


def test_any_other_integrity_error_is_raised(team):
    from django.db import IntegrityError, connection, transaction

    if connection.vendor != "postgresql":
        pytest.skip("the straight COPY is PostgreSQL's (SQLite's INSERT OR IGNORE skips all)")
    row = (team.pk, None, "0" * 64, "fact", [], {}, WHEN)  # content is NOT NULL
    with pytest.raises(IntegrityError), transaction.atomic():
        insert_new(Chunk, VALUE_FIELDS, [row], key="content_hash")
    assert not Chunk.objects.filter(team=team).exists()
