"""A memory's team and repository keep no index of their own: the queue's index leads with the
team and the unique (repository, memory_id) with the repository (two indexes less to keep per
memory indexed). Only those two indexes are dropped (memoryadmin.schema_steps)."""

import django.db.models.deletion
from django.db import migrations, models

from memoryadmin.schema_steps import KeyIndex, drop_keys


class Migration(migrations.Migration):
    dependencies = [
        ("memoryadmin", "0005_invitation"),
        ("reviews", "0005_decision_item_text"),
        ("bundles", "0011_agents_memory_links_index"),  # its partial index on team_id stays
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                drop_keys(
                    indexes=(
                        KeyIndex("reviews_memory", "repository_id", "reviews_memory_repository_id_520c89ee"),
                        KeyIndex("reviews_memory", "team_id", "reviews_memory_team_id_a0051148"),
                    )
                )
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="memory",
                    name="repository",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="memories",
                        to="reviews.repository",
                    ),
                ),
                migrations.AlterField(
                    model_name="memory",
                    name="team",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="memoryadmin.team",
                    ),
                ),
            ],
        )
    ]
