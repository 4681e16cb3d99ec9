"""The redundant keys of the most written tables are gone from the database the migrations
made, and nothing else with them (memoryadmin.schema_steps): a foreign key column still has an
index that leads with it, and the partial index another app made on the same column stays."""

from __future__ import annotations

import pytest
from django.db import connection

POSTGRESQL = connection.vendor == "postgresql"
pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(not POSTGRESQL, reason="reads PostgreSQL's catalog"),
]

# table -> (its foreign key columns, whose own indexes were dropped)
LEAN = {
    "bundles_chunk": ("team_id",),
    "bundles_chunkorigin": ("team_id", "chunk_id"),
    "sources_record": ("snapshot_id",),
    "reviews_memory": ("team_id", "repository_id"),
}


def _indexes(table: str) -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s", [table])
        return dict(cursor.fetchall())


def _foreign_keys(table: str) -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT a.attname FROM pg_constraint c JOIN pg_attribute a"
            " ON a.attrelid = c.conrelid AND a.attnum = ANY(c.conkey)"
            " WHERE c.contype = 'f' AND c.conrelid = %s::regclass",
            [table],
        )
        return {row[0] for row in cursor.fetchall()}


@pytest.mark.parametrize("table", sorted(LEAN))
def test_each_key_column_has_one_index_that_leads_with_it_and_none_of_its_own(table):
    indexes = _indexes(table)
    for column in LEAN[table]:
        own = [name for name, sql in indexes.items() if sql.endswith(f"btree ({column})")]
        assert own == [], own
        leading = [name for name, sql in indexes.items() if f"btree ({column}, " in sql]
        assert leading, f"{table}.{column} has no index that leads with it"


def test_the_partial_index_on_a_memory_team_stays():
    assert "reviews_memory_irregular_links" in _indexes("reviews_memory")


def test_only_the_constraints_another_key_already_holds_are_gone():
    assert _foreign_keys("sources_record") == {"snapshot_id"}
    assert _foreign_keys("bundles_chunkorigin") == {"chunk_id"}
    assert _foreign_keys("bundles_chunk") == {"team_id"}
    assert _foreign_keys("reviews_memory") == {"repository_id"}  # the repository's holds the team


def test_a_memory_ref_keeps_its_index_without_the_like_twin():
    indexes = _indexes("reviews_memory")
    assert indexes["reviews_memory_ref_54f8e917"].endswith("btree (ref)")
    assert not [sql for sql in indexes.values() if "pattern_ops" in sql]
