from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('sources', '0006_snapshot_raw_digest'),
    ]

    operations = [
        migrations.AddField(
            model_name='snapshot',
            name='raw_stats',
            field=models.BinaryField(blank=True, default=b''),
        ),
    ]
