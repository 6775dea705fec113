# Tags on the server: IMAP keywords per location, tag/untag write-back in the ledger.

from django.db import migrations, models


def reread_imap_flags(apps, schema_editor):
    """Locations stored before keywords were kept have none: forget the CONDSTORE checkpoint of IMAP folders,
    so the next sync reads every message's FLAGS once (a few bytes each, no body) and finds the keywords."""
    MailFolder = apps.get_model("mail", "MailFolder")
    MailFolder.objects.filter(account__provider="imap", sync_token__startswith="modseq:").update(sync_token="")


class Migration(migrations.Migration):

    dependencies = [
        ('mail', '0012_message_tags'),
    ]

    operations = [
        migrations.AddField(
            model_name='mailaction',
            name='tag',
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AddField(
            model_name='messagelocation',
            name='keywords',
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AlterField(
            model_name='mailaction',
            name='kind',
            field=models.CharField(choices=[('read', 'Mark read'), ('unread', 'Mark unread'), ('flag', 'Flag'), ('unflag', 'Remove flag'), ('move', 'Move'), ('archive', 'Archive'), ('trash', 'Move to Trash'), ('tag', 'Add tag'), ('untag', 'Remove tag')], max_length=16),
        ),
        migrations.RunPython(reread_imap_flags, migrations.RunPython.noop),
    ]
