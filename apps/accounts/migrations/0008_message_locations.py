"""Message identity by content and one location per place a message is in.

Existing rows are converted in place, without re-downloading anything: each message gets the new
Message-ID + content-fingerprint key (computed from its stored fields) and one location from its folder
and provider id; folders that only existed as a message's folder name get their MailFolder row."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

from apps.accounts.identity import dedupe_key_for_row

BATCH = 1000


def imap_uid(provider_id: str) -> int | None:
    parts = provider_id.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        return int(parts[2])
    return None


def forwards(apps, schema_editor):
    Message = apps.get_model("mail", "Message")
    MailFolder = apps.get_model("mail", "MailFolder")
    MessageLocation = apps.get_model("mail", "MessageLocation")
    Attachment = apps.get_model("mail", "Attachment")
    fields = ["id", "account_id", "message_id", "date", "from_address", "subject", "to", "cc", "body_text",
              "folder", "provider_id", "seen", "flagged", "dedupe_key"]
    last = 0
    taken: set[tuple[int, str]] = set()
    while True:
        rows = list(Message.objects.filter(pk__gt=last).order_by("pk").values(*fields)[:BATCH])
        if not rows:
            break
        last = rows[-1]["id"]
        ids = [row["id"] for row in rows]
        attachments: dict[int, list[tuple[str, int]]] = {}
        for message_id, filename, size in Attachment.objects.filter(message_id__in=ids).values_list(
            "message_id", "filename", "size"
        ):
            attachments.setdefault(message_id, []).append((filename, size))
        changed = []
        locations = []
        for row in rows:
            key = dedupe_key_for_row(row, attachments.get(row["id"], []))
            # Old keys were unique Message-IDs, so new keys can only meet each other (two stored messages without
            # a Message-ID whose content is the same): the later one keeps a key of its own, nothing is merged.
            if (row["account_id"], key) in taken:
                key = f"{key}~{row['id']}"
            taken.add((row["account_id"], key))
            changed.append(Message(pk=row["id"], dedupe_key=key))
            folder, _ = MailFolder.objects.get_or_create(account_id=row["account_id"], name=row["folder"])
            locations.append(
                MessageLocation(
                    account_id=row["account_id"], message_id=row["id"], folder_id=folder.pk,
                    provider_id=row["provider_id"], uid=imap_uid(row["provider_id"]),
                    seen=row["seen"], flagged=row["flagged"],
                )
            )
        Message.objects.bulk_update(changed, ["dedupe_key"], batch_size=500)
        MessageLocation.objects.bulk_create(locations, batch_size=500, ignore_conflicts=True)


class Migration(migrations.Migration):
    dependencies = [
        ("mail", "0007_message_id_thread_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="message",
            name="deleted_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RemoveConstraint(model_name="message", name="mail_message_unique_provider_id"),
        migrations.AddIndex(
            model_name="message",
            index=models.Index(fields=["account", "provider_id"], name="mail_message_provider_id"),
        ),
        migrations.CreateModel(
            name="MessageLocation",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("provider_id", models.CharField(max_length=512)),
                ("uid", models.BigIntegerField(blank=True, null=True)),
                ("seen", models.BooleanField(default=False)),
                ("flagged", models.BooleanField(default=False)),
                ("provisional", models.BooleanField(default=False)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("account", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="locations", to="mail.mailaccount")),
                ("folder", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="locations", to="mail.mailfolder")),
                ("message", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="locations", to="mail.message")),
            ],
            options={
                "indexes": [
                    models.Index(fields=["account", "provider_id"], name="mail_location_provider_id"),
                    models.Index(fields=["folder", "uid"], name="mail_location_folder_uid"),
                ],
                "constraints": [
                    models.UniqueConstraint(fields=("folder", "provider_id"), name="mail_location_unique_provider_id")
                ],
            },
        ),
        migrations.RunPython(forwards, migrations.RunPython.noop, elidable=False),
    ]
