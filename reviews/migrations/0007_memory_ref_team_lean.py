"""A memory's short ref keeps its index but not the `varchar_pattern_ops` twin Django makes for
a `db_index` text column on PostgreSQL (for `LIKE 'x%'`): every look-up of a ref is whole (`=`,
with the team: find_memories, precheck's count of a ref's memories). A memory's team keeps no
constraint: its repository's key holds it (the index writes a memory's team as its repository's).
Only these two objects are dropped (memoryadmin.schema_steps); the ref's own index stays under
its name, now Meta's."""

import django.db.models.deletion
from django.db import migrations, models

from memoryadmin.schema_steps import KeyConstraint, drop_keys

LIKE = "reviews_memory_ref_54f8e917_like"


def drop_like(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f'DROP INDEX IF EXISTS "{LIKE}"')


def make_like(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f'CREATE INDEX IF NOT EXISTS "{LIKE}" ON "reviews_memory" ("ref" varchar_pattern_ops)'
        )


class Migration(migrations.Migration):
    dependencies = [
        ("memoryadmin", "0005_invitation"),
        ("reviews", "0006_memory_keys_lean"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunPython(drop_like, make_like),
                drop_keys(
                    constraints=(
                        KeyConstraint(
                            "reviews_memory",
                            "team_id",
                            "reviews_memory_team_id_a0051148_fk_memoryadmin_team_id",
                            "memoryadmin_team",
                        ),
                    )
                ),
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="memory",
                    name="ref",
                    field=models.CharField(max_length=8),
                ),
                migrations.AddIndex(
                    model_name="memory",
                    index=models.Index(fields=["ref"], name="reviews_memory_ref_54f8e917"),
                ),
                migrations.AlterField(
                    model_name="memory",
                    name="team",
                    field=models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="memoryadmin.team",
                    ),
                ),
            ],
        )
    ]
