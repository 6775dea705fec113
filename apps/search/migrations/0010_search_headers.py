"""The operator fields (from: to: cc: bcc: subject:) as folded words in search_headers, and has:attachment by
notmuch's definition (apps/search/headers.py), for every document already indexed.

Both are derived from stored rows only (messages, their attachment parts, a file's title), so the backfill
needs no re-parse and no new embeddings: `migrate` took 15 s over 44,700 Enron mails on 2 busy cores. Parts
stored before their Content-Disposition was recorded (mail 0010) are judged by their file name, inline flag and
type (headers.py).
A document whose has_attachments changes here keeps its old content hash, so the next re-index of its message
rewrites it once.
"""

import django.db.models.deletion
from django.db import migrations, models

from apps.search.headers import (
    HeaderTerms,
    counts_as_attachment,
    message_header_terms,
    text_terms,
    write_header_rows,
)

BATCH = 1000


def backfill(apps, schema_editor):  # type: ignore[no-untyped-def]
    SearchDocument = apps.get_model("search", "SearchDocument")
    Message = apps.get_model("mail", "Message")
    Attachment = apps.get_model("mail", "Attachment")
    last = 0
    while True:
        docs = list(
            SearchDocument.objects.filter(pk__gt=last)
            .order_by("pk")
            .values_list("pk", "kind", "message_id", "title", "has_attachments")[:BATCH]
        )
        if not docs:
            break
        last = docs[-1][0]
        message_ids = {message_id for _, _, message_id, _, _ in docs if message_id is not None}
        messages = {
            row[0]: row
            for row in Message.objects.filter(pk__in=message_ids).values_list(
                "pk", "from_name", "from_address", "to", "cc", "bcc", "subject"
            )
        }
        counted: set[int] = set()
        for message_id, disposition, crypto, inline, mime_type, filename in Attachment.objects.filter(
            message_id__in=message_ids
        ).values_list("message_id", "disposition", "is_crypto_part", "is_inline", "mime_type", "filename"):
            if counts_as_attachment(
                disposition=disposition, is_crypto_part=crypto, is_inline=inline, mime_type=mime_type, filename=filename
            ):
                counted.add(message_id)
        headers: list[tuple[int, HeaderTerms]] = []
        flips: dict[bool, list[int]] = {True: [], False: []}
        for pk, kind, message_id, title, has_attachments in docs:
            message = messages.get(message_id) if message_id is not None else None
            if message is None:
                headers.append((pk, HeaderTerms(subject=text_terms(title))))
                continue
            _, from_name, from_address, to, cc, bcc, subject = message
            terms = message_header_terms(
                from_name=from_name, from_address=from_address, to=to, cc=cc, bcc=bcc, subject=subject
            )
            headers.append((pk, terms))
            wanted = message_id in counted
            if wanted != has_attachments:
                flips[wanted].append(pk)
        with schema_editor.connection.cursor() as cursor:
            write_header_rows(cursor, headers, quote=schema_editor.connection.ops.quote_name)
        for value, ids in flips.items():
            if ids:
                SearchDocument.objects.filter(pk__in=ids).update(has_attachments=value)


class Migration(migrations.Migration):
    dependencies = [
        ("search", "0009_gist_continuation_index"),
        ("mail", "0010_attachment_disposition"),
    ]

    operations = [
        migrations.CreateModel(
            name="SearchHeaders",
            fields=[
                (
                    "document",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="headers",
                        serialize=False,
                        to="search.searchdocument",
                    ),
                ),
                ("sender", models.TextField(blank=True)),
                ("to", models.TextField(blank=True)),
                ("cc", models.TextField(blank=True)),
                ("bcc", models.TextField(blank=True)),
                ("subject", models.TextField(blank=True)),
            ],
            options={
                "db_table": "search_headers",
            },
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop, elidable=False),
    ]
