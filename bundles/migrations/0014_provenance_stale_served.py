"""A source provenance's `stale` is served from the source, no longer stored (bundles.provenance).

Removes the stored key from every source provenance: a chunk's `metadata.memoryadmin` and a
source origin's `metadata`. One UPDATE per table, only of the rows that hold the key (a
sequential scan, no Python loop: fast on millions of chunks). Going back puts the key in again
from each source's current health, as the mirror wrote it.
"""

from django.db import migrations

FORWARD = {
    "postgresql": [
        "UPDATE bundles_chunk SET metadata = metadata #- '{memoryadmin,stale}' "
        "WHERE metadata -> 'memoryadmin' ->> 'origin' = 'source' "
        "AND jsonb_exists(metadata -> 'memoryadmin', 'stale')",
        "UPDATE bundles_chunkorigin SET metadata = metadata - 'stale' "
        "WHERE kind = 'source' AND jsonb_exists(metadata, 'stale')",
    ],
    "sqlite": [
        "UPDATE bundles_chunk SET metadata = json_remove(metadata, '$.memoryadmin.stale') "
        "WHERE json_extract(metadata, '$.memoryadmin.origin') = 'source' "
        "AND json_type(metadata, '$.memoryadmin.stale') IS NOT NULL",
        "UPDATE bundles_chunkorigin SET metadata = json_remove(metadata, '$.stale') "
        "WHERE kind = 'source' AND json_type(metadata, '$.stale') IS NOT NULL",
    ],
}

# The source a provenance names, when it is one of the row's team: is it stale now?
_PG_STALE = (
    "EXISTS (SELECT 1 FROM sources_source s WHERE s.team_id = {row}.team_id "
    "AND s.health = 'stale' AND s.id = CASE WHEN jsonb_typeof({p} -> 'source_id') = 'number' "
    "THEN ({p} ->> 'source_id')::numeric END)"
)
_SQLITE_STALE = (
    "CASE WHEN EXISTS (SELECT 1 FROM sources_source s WHERE s.team_id = {row}.team_id "
    "AND s.health = 'stale' AND s.id = json_extract({p}, '$.source_id')) "
    "THEN json('true') ELSE json('false') END"
)
BACKWARD = {
    "postgresql": [
        "UPDATE bundles_chunk SET metadata = jsonb_set(metadata, '{memoryadmin,stale}', "
        "to_jsonb("
        + _PG_STALE.format(row="bundles_chunk", p="bundles_chunk.metadata -> 'memoryadmin'")
        + ")) WHERE metadata -> 'memoryadmin' ->> 'origin' = 'source'",
        "UPDATE bundles_chunkorigin SET metadata = jsonb_set(metadata, '{stale}', to_jsonb("
        + _PG_STALE.format(row="bundles_chunkorigin", p="bundles_chunkorigin.metadata")
        + ")) WHERE kind = 'source'",
    ],
    "sqlite": [
        "UPDATE bundles_chunk SET metadata = json_set(metadata, '$.memoryadmin.stale', "
        + _SQLITE_STALE.format(
            row="bundles_chunk", p="json_extract(bundles_chunk.metadata, '$.memoryadmin')"
        )
        + ") WHERE json_extract(metadata, '$.memoryadmin.origin') = 'source'",
        "UPDATE bundles_chunkorigin SET metadata = json_set(metadata, '$.stale', "
        + _SQLITE_STALE.format(row="bundles_chunkorigin", p="bundles_chunkorigin.metadata")
        + ") WHERE kind = 'source'",
    ],
}


def _run(statements_by_vendor):  # type: ignore[no-untyped-def]
    def run(apps, schema_editor):  # type: ignore[no-untyped-def]
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("bundles", "0013_importedchunk_no_row_checks"),
        ("sources", "0006_snapshot_raw_digest"),  # going back reads sources_source
    ]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
