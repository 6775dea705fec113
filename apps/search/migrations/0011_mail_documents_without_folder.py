"""Mail documents no longer carry a folder (filters read the message's locations, so a move or a folder
rename never re-indexes mail). Their content hash is recomputed in place without the folder, and gists of the
old text move to the new hash, so no embedding or gist becomes stale through this change. The hash is computed
from the stored columns, so it also takes in has_attachments as 0010 recomputed it (those documents are not
re-embedded at their next re-index either)."""

from __future__ import annotations

import hashlib
from typing import Any

from django.db import migrations

BATCH = 1000
MAIL_KINDS = ("message", "attachment")


def _content_hash(row: dict[str, Any]) -> str:
    # IndexDocument.content_hash as of this migration, with the folder left empty.
    digest = hashlib.sha1(usedforsecurity=False)
    for part in (
        row["title"],
        row["people"],
        row["body"],
        "",
        row["date"].isoformat() if row["date"] else "",
        row["from_address"],
        row["recipients"],
        str(row["has_attachments"]),
        str(row["account_id"]),
    ):
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()


def forwards(apps: Any, schema_editor: Any) -> None:
    SearchDocument = apps.get_model("search", "SearchDocument")
    SearchGist = apps.get_model("search", "SearchGist")
    fields = ("id", "title", "people", "body", "date", "from_address", "recipients", "has_attachments", "account_id")
    last = 0
    while True:
        rows = list(
            SearchDocument.objects.filter(kind__in=MAIL_KINDS, pk__gt=last)
            .exclude(folder="")
            .order_by("pk")
            .values("content_hash", *fields)[:BATCH]
        )
        if not rows:
            break
        for row in rows:
            new_hash = _content_hash(row)
            SearchGist.objects.filter(document_id=row["id"], content_hash=row["content_hash"]).update(
                content_hash=new_hash
            )
            SearchDocument.objects.filter(pk=row["id"]).update(folder="", content_hash=new_hash)
        last = rows[-1]["id"]


class Migration(migrations.Migration):
    dependencies = [("search", "0010_search_headers")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop, elidable=True)]
