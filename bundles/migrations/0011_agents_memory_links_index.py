"""precheck matches memory links in SQL on PostgreSQL (bundles.agents.precheck.linked_memories):
a GIN index on `front_matter -> 'links'` for `?|` (a memory links to one of the changed paths or
a directory above them), and a partial index of the memories with an irregular link (one that
normpath would change; its predicate is precheck.IRREGULAR_LINKS, word for word). The table is
reviews'; the index serves the brain's read path, so it lives here. Nothing on SQLite.
"""

from django.db import migrations

GIN = "reviews_memory_links_gin"
IRREGULAR = "reviews_memory_irregular_links"
# precheck.IRREGULAR_LINKS without the table name (tests/agents/test_precheck_sql.py checks it).
PREDICATE = (
    "jsonb_path_exists(front_matter, '$.links[*] ? (@ like_regex \"(^|/)\\\\.\\\\.?(/|$)|//|/$\")')"
)


def forwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(
        f"CREATE INDEX IF NOT EXISTS {GIN} ON reviews_memory USING gin ((front_matter -> 'links'))"
    )
    schema_editor.execute(
        f"CREATE INDEX IF NOT EXISTS {IRREGULAR} ON reviews_memory (team_id) WHERE {PREDICATE}"
    )


def backwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(f"DROP INDEX IF EXISTS {GIN}")
    schema_editor.execute(f"DROP INDEX IF EXISTS {IRREGULAR}")


class Migration(migrations.Migration):
    dependencies = [
        ("bundles", "0010_import_runs"),
        ("reviews", "0005_decision_item_text"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
