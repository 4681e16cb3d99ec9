"""A record's snapshot keeps no index of its own (the unique (snapshot, record_id) and the
indexes in Meta lead with it), and its source no constraint (the snapshot's holds the source;
its check was a third of the records' COPY). Only these objects are dropped
(memoryadmin.schema_steps)."""

import django.db.models.deletion
from django.db import migrations, models

from memoryadmin.schema_steps import KeyConstraint, KeyIndex, drop_keys


class Migration(migrations.Migration):
    dependencies = [
        ("sources", "0008_record_snapshot_timed"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                drop_keys(
                    indexes=(
                        KeyIndex("sources_record", "snapshot_id", "sources_record_snapshot_id_7de19635"),
                    ),
                    constraints=(
                        KeyConstraint(
                            "sources_record",
                            "source_id",
                            "sources_record_source_id_e7cbee0c_fk_sources_source_id",
                            "sources_source",
                        ),
                    ),
                )
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="record",
                    name="snapshot",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="records",
                        to="sources.snapshot",
                    ),
                ),
                migrations.AlterField(
                    model_name="record",
                    name="source",
                    field=models.ForeignKey(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="sources.source",
                    ),
                ),
            ],
        )
    ]
