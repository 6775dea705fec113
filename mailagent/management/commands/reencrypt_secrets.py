"""Rewrite every encrypted value under the current (first) VX_MAILAGENT_KEY."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.db.models import TextField
from django.db.models.functions import Cast
from tqdm import tqdm

from mailagent.crypto import (
    SecretDecryptionError,
    decrypt_value,
    encrypted_fields,
    get_keyring,
    stored_key_id,
)


class Command(BaseCommand):
    help = "Re-encrypt all secrets with the first key in VX_MAILAGENT_KEY (after adding a key or leaving plaintext)."

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
            raw_rows = (
                model._default_manager.exclude(**{f"{field.attname}__isnull": True})
                .annotate(_raw=Cast(field.attname, output_field=TextField()))
                .values_list("pk", "_raw")
            )
            rows = list(raw_rows)
            for pk, raw in tqdm(rows, desc=label, unit="value", disable=not rows):
                key_id = stored_key_id(raw) or "plaintext"
                by_key[key_id] = by_key.get(key_id, 0) + 1
                if options["check"] or key_id == keyring.current_key_id:
                    unchanged += 1
                    continue
                ad = field.associated_data()
                try:
                    plaintext = decrypt_value(raw, associated_data=ad, keyring=keyring)
                except SecretDecryptionError as exc:
                    raise CommandError(f"{label} pk={pk}: {exc}") from exc
                with transaction.atomic():
                    # update() runs the field's get_prep_value, which encrypts under the current key.
                    model._default_manager.filter(pk=pk).update(**{field.attname: field.decode_plaintext(plaintext)})
                rewritten += 1
        summary = ", ".join(f"{key}: {count}" for key, count in sorted(by_key.items())) or "no secrets stored"
        self.stdout.write(f"Stored under: {summary}")
        if not options["check"]:
            self.stdout.write(self.style.SUCCESS(f"Re-encrypted {rewritten} value(s); {unchanged} already current."))
