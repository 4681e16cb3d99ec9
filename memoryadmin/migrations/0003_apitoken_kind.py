"""Tell personal tokens (made by a person, acting for them) from team tokens (no person).

Existing rows keep their meaning: a token with a creator is personal; one without was made by
the system (`token_create` command, `seed_demo`) and is a team token. A creator can not have been
deleted since: the audit event of the token's creation protects the account.
"""

from __future__ import annotations

from django.db import migrations, models


def mark_team_tokens(apps, schema_editor):  # type: ignore[no-untyped-def]
    ApiToken = apps.get_model("memoryadmin", "ApiToken")
    ApiToken.objects.filter(created_by__isnull=True).update(kind="team")


class Migration(migrations.Migration):
    dependencies = [("memoryadmin", "0002_audit_append_only")]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="kind",
            field=models.CharField(
                choices=[("personal", "Personal"), ("team", "Team")],
                default="personal",
                max_length=16,
            ),
        ),
        migrations.RunPython(mark_team_tokens, migrations.RunPython.noop),
    ]
