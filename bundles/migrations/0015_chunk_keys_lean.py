"""A chunk's team, and an origin's chunk and team, keep no index of their own: the indexes that
lead with them serve the same look-ups (one index less per chunk, two per origin written). An
origin's team keeps no constraint either: its chunk's holds the team, and its check was a third
of the origins' COPY. Only these objects are dropped (memoryadmin.schema_steps)."""

import django.db.models.deletion
from django.db import migrations, models

from memoryadmin.schema_steps import KeyConstraint, KeyIndex, drop_keys


class Migration(migrations.Migration):
    dependencies = [
        ("bundles", "0014_provenance_stale_served"),
        ("memoryadmin", "0005_invitation"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                drop_keys(
                    indexes=(
                        KeyIndex("bundles_chunk", "team_id", "bundles_chunk_team_id_2a7ad62b"),
                        KeyIndex(
                            "bundles_chunkorigin", "chunk_id", "bundles_chunkorigin_chunk_id_fe672301"
                        ),
                        KeyIndex(
                            "bundles_chunkorigin", "team_id", "bundles_chunkorigin_team_id_660ca7ef"
                        ),
                    ),
                    constraints=(
                        KeyConstraint(
                            "bundles_chunkorigin",
                            "team_id",
                            "bundles_chunkorigin_team_id_660ca7ef_fk_memoryadmin_team_id",
                            "memoryadmin_team",
                        ),
                    ),
                )
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="chunk",
                    name="team",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="chunks",
                        to="memoryadmin.team",
                    ),
                ),
                migrations.AlterField(
                    model_name="chunkorigin",
                    name="chunk",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="origins",
                        to="bundles.chunk",
                    ),
                ),
                migrations.AlterField(
                    model_name="chunkorigin",
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
