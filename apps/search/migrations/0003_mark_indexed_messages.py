"""Messages the index already holds are marked indexed (the outbox field added by mail 0003); the rest stay
pending, so the outbox sweeper indexes mail that an earlier crash or error left out."""

from django.db import migrations
from django.db.models import Exists, F, OuterRef


def mark_indexed(apps, schema_editor):
    Message = apps.get_model("mail", "Message")
    SearchDocument = apps.get_model("search", "SearchDocument")
    held = SearchDocument.objects.filter(kind="message", object_id=OuterRef("pk"))
    Message.objects.filter(indexed_at=None).filter(Exists(held)).update(indexed_at=F("stored_at"))


class Migration(migrations.Migration):
    dependencies = [
        ("search", "0002_vendor_indexes"),
        ("mail", "0003_message_outbox_and_lock_holder"),
    ]

    operations = [migrations.RunPython(mark_indexed, migrations.RunPython.noop)]
