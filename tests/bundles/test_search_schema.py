"""The keyword index's schema survives every migration.

On SQLite, Django's AlterField on `bundles_chunk` rebuilds the table (create, copy, drop,
rename), and dropping the old table drops the FTS5 sync triggers with it: keyword search
would then find nothing written after the migration. A migration that alters the chunk table
on SQLite must re-create them (see bundles/migrations/0007_chunk_search.py). This test names
that cause; the search tests would only show its effect."""

from __future__ import annotations

import pytest
from django.db import connection

from bundles.agents.ranking import keyword_match
from bundles.models import Chunk

FTS_TRIGGERS = {"bundles_chunk_fts_insert", "bundles_chunk_fts_delete", "bundles_chunk_fts_update"}


@pytest.mark.django_db
def test_the_keyword_index_is_kept_in_step_after_all_migrations(team):  # type: ignore[no-untyped-def]
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT name FROM sqlite_master"
                " WHERE type = 'trigger' AND tbl_name = 'bundles_chunk'"
            )
            names = {name for (name,) in cursor.fetchall()}
        assert names >= FTS_TRIGGERS, f"missing: {sorted(FTS_TRIGGERS - names)}"
    else:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT attgenerated FROM pg_attribute WHERE attrelid = 'bundles_chunk'::regclass"
                " AND attname = 'search_vector'"
            )
            assert cursor.fetchone() == ("s",)
    chunk = Chunk.objects.create(
        team=team, content="Deploys go out on Tuesdays", content_hash="h" * 64, standalone=True
    )
    matched = keyword_match(Chunk.objects.filter(team=team), "tuesdays")
    assert matched is not None
    assert list(matched.values_list("id", flat=True)) == [chunk.pk]
