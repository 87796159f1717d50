"""Where each event's time came from (record | parent | mtime | received); older rows keep '' (Event.ts_from)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('experiments', '0005_cursor_per_experiment'),
    ]

    operations = [
        migrations.AddField(
            model_name='event',
            name='ts_source',
            field=models.CharField(blank=True, choices=[('record', 'record'), ('parent', 'parent'), ('mtime', 'mtime'), ('received', 'received')], db_default='', help_text="where occurred_at came from: record | parent (the record it belongs to) | mtime (the file's) | received", max_length=8),
        ),
        migrations.AlterField(
            model_name='event',
            name='occurred_at',
            field=models.DateTimeField(blank=True, help_text="when it happened (see ts_source); the event's ts", null=True),
        ),
    ]
