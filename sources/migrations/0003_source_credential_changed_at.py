from django.db import migrations, models
from django.db.models import F


def stamp_existing(apps, schema_editor):
    """A credential stored before this field existed was given when its source was added."""
    Source = apps.get_model("sources", "Source")
    Source.objects.exclude(credential_encrypted="").update(credential_changed_at=F("created_at"))


class Migration(migrations.Migration):
    dependencies = [
        ("sources", "0002_record_page_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="source",
            name="credential_changed_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(stamp_existing, migrations.RunPython.noop),
    ]
