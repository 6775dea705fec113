"""Rewrite every encrypted value under the current (first) VX_MAILAGENT_KEY.

Every EncryptedTextField/EncryptedJSONField of every model: secrets, provider payloads, log details,
transcripts, memories, workspace items and Inbox entries. Rows are read a batch at a time in primary-key
order (a transcript table does not fit in memory at once) and each batch is rewritten in one transaction."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.db.models import QuerySet, TextField
from django.db.models.functions import Cast
from tqdm import tqdm

from mailagent.crypto import (
    SecretDecryptionError,
    decrypt_value,
    encrypted_fields,
    get_keyring,
    stored_key_id,
)

BATCH_ROWS = 500


def stored_batches(stored: QuerySet[Any], attname: str) -> Iterator[list[tuple[Any, str]]]:
    """(pk, the column as stored) in primary-key order, BATCH_ROWS at a time."""
    raw = stored.annotate(_raw=Cast(attname, output_field=TextField())).order_by("pk")
    last_pk: Any = None
    while True:
        batch = raw if last_pk is None else raw.filter(pk__gt=last_pk)
        rows = list(batch.values_list("pk", "_raw")[:BATCH_ROWS])
        if not rows:
            return
        yield rows
        last_pk = rows[-1][0]


class Command(BaseCommand):
    help = (
        "Re-encrypt everything stored encrypted (secrets, payloads, logs, transcripts, memories, workspace items, "
        "Inbox entries) with the first key in VX_MAILAGENT_KEY (after adding a key or leaving plaintext)."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--check", action="store_true", help="Only report which keys values are stored under.")

    def handle(self, *args: Any, **options: Any) -> None:
        keyring = get_keyring()
        if not keyring.enabled and not options["check"]:
            raise CommandError("VX_MAILAGENT_KEY is missing or invalid: there is no key to encrypt with.")
        rewritten = unchanged = 0
        by_key: dict[str, int] = {}
        for model, field in encrypted_fields():
            label = f"{model._meta.label}.{field.name}"
            stored = model._base_manager.exclude(**{f"{field.attname}__isnull": True})
            total = stored.count()
            ad = field.associated_data()
            with tqdm(total=total, desc=label, unit="value", disable=not total) as progress:
                for rows in stored_batches(stored, field.attname):
                    progress.update(len(rows))
                    stale: list[tuple[Any, str]] = []
                    for pk, raw in rows:
                        key_id = stored_key_id(raw) or "plaintext"
                        by_key[key_id] = by_key.get(key_id, 0) + 1
                        if options["check"] or key_id == keyring.current_key_id:
                            unchanged += 1
                            continue
                        try:
                            stale.append((pk, decrypt_value(raw, associated_data=ad, keyring=keyring)))
                        except SecretDecryptionError as exc:
                            raise CommandError(f"{label} pk={pk}: {exc}") from exc
                    with transaction.atomic():
                        for pk, plaintext in stale:
                            # update() runs the field's get_prep_value, which encrypts under the current key.
                            value = field.decode_plaintext(plaintext)
                            model._base_manager.filter(pk=pk).update(**{field.attname: value})
                    rewritten += len(stale)
        summary = ", ".join(f"{key}: {count}" for key, count in sorted(by_key.items())) or "no secrets stored"
        self.stdout.write(f"Stored under: {summary}")
        if not options["check"]:
            self.stdout.write(self.style.SUCCESS(f"Re-encrypted {rewritten} value(s); {unchanged} already current."))
