"""Keyword search over the brain's chunks, kept in step by the database itself.

PostgreSQL: a stored generated `tsvector` column (english configuration, the first 100,000
characters: a tsvector holds at most 1 MB) with a GIN index. SQLite: an external-content FTS5
table over `bundles_chunk.content`, kept in step by triggers. No Python path (ORM, COPY, raw
SQL) can forget to update either: the database does it in the writer's transaction.

The column is not on the Django model (SQLite has no tsvector); `bundles.agents.search` reads
it with SQL of its own. On SQLite, a later migration that makes Django rebuild `bundles_chunk`
(an AlterField) drops the triggers with the old table: such a migration must run
`SEARCH_SQLITE` again (tests/agents/test_search.py checks that a new chunk is found).
"""

from django.db import migrations

SEARCH_POSTGRES = [
    "ALTER TABLE bundles_chunk ADD COLUMN search_vector tsvector "
    "GENERATED ALWAYS AS (to_tsvector('english'::regconfig, left(content, 100000))) STORED",
    "CREATE INDEX chunk_search_vector ON bundles_chunk USING gin (search_vector)",
]
UNDO_POSTGRES = [
    "DROP INDEX IF EXISTS chunk_search_vector",
    "ALTER TABLE bundles_chunk DROP COLUMN IF EXISTS search_vector",
]

SEARCH_SQLITE = [
    "CREATE VIRTUAL TABLE IF NOT EXISTS bundles_chunk_fts USING fts5(content, "
    "content='bundles_chunk', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')",
    "CREATE TRIGGER IF NOT EXISTS bundles_chunk_fts_insert AFTER INSERT ON bundles_chunk BEGIN "
    "INSERT INTO bundles_chunk_fts(rowid, content) VALUES (new.id, new.content); END",
    "CREATE TRIGGER IF NOT EXISTS bundles_chunk_fts_delete AFTER DELETE ON bundles_chunk BEGIN "
    "INSERT INTO bundles_chunk_fts(bundles_chunk_fts, rowid, content) "
    "VALUES ('delete', old.id, old.content); END",
    "CREATE TRIGGER IF NOT EXISTS bundles_chunk_fts_update "
    "AFTER UPDATE OF content ON bundles_chunk BEGIN "
    "INSERT INTO bundles_chunk_fts(bundles_chunk_fts, rowid, content) "
    "VALUES ('delete', old.id, old.content); "
    "INSERT INTO bundles_chunk_fts(rowid, content) VALUES (new.id, new.content); END",
    "INSERT INTO bundles_chunk_fts(bundles_chunk_fts) VALUES ('rebuild')",
]
UNDO_SQLITE = [
    "DROP TRIGGER IF EXISTS bundles_chunk_fts_insert",
    "DROP TRIGGER IF EXISTS bundles_chunk_fts_delete",
    "DROP TRIGGER IF EXISTS bundles_chunk_fts_update",
    "DROP TABLE IF EXISTS bundles_chunk_fts",
]


def _run(statements_by_vendor):  # type: ignore[no-untyped-def]
    def run(apps, schema_editor):  # type: ignore[no-untyped-def]
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("bundles", "0006_chunk_secret_findings"),
    ]

    operations = [
        migrations.RunPython(
            _run({"postgresql": SEARCH_POSTGRES, "sqlite": SEARCH_SQLITE}),
            _run({"postgresql": UNDO_POSTGRES, "sqlite": UNDO_SQLITE}),
        ),
    ]
