"""Data migrations that turn plaintext columns into `EncryptedTextField`/`EncryptedJSONField` columns and back.

`encrypt_columns` walks a table in primary-key order, a batch per transaction, and encrypts each stored value
the way the field would have written it (same key, same associated data `<app_label>.<model>.<column>`).
It is meant for a migration with `atomic = False`: a killed run keeps the batches it committed, and running
it again skips them, because a value already in the stored form of an encrypted field is recognised and
left alone:

- with a key: a value shaped exactly like our ciphertext (`enc1:<8 hex>:<base64>`) is taken as encrypted;
  anything else is legacy plaintext and is encrypted as it is;
- without a key (plaintext mode) nothing needs encrypting, but legacy plaintext that begins with `enc1:`
  would read as ciphertext, so it is escaped (`plain:` + value), as the field escapes it. A legacy value
  that already begins with `plain:` cannot be told from an escaped one and reads without that prefix.

`decrypt_columns` (the way back) writes each value's plaintext; a value the configured keys cannot decrypt
stops it with the reason, so nothing is left half-readable.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from django.db import connections, models, transaction

from mailagent.crypto import (
    ENCRYPTED_PREFIX,
    PLAIN_PREFIX,
    EncryptedTextField,
    SecretDecryptionError,
    decrypt_value,
    encrypt_value,
    get_keyring,
)

BATCH_ROWS = 500
CIPHERTEXT = re.compile(r"^enc1:[0-9a-f]{8}:[A-Za-z0-9+/]+={0,2}$")


def looks_encrypted(stored: str) -> bool:
    return CIPHERTEXT.fullmatch(stored) is not None


def _encrypt_stored(stored: str, associated_data: str) -> str:
    keyring = get_keyring()
    if not keyring.enabled:
        return PLAIN_PREFIX + stored if stored.startswith(ENCRYPTED_PREFIX) else stored
    if looks_encrypted(stored):
        return stored
    return encrypt_value(stored, associated_data=associated_data, keyring=keyring)


def _decrypt_stored(stored: str, associated_data: str) -> str:
    if not stored.startswith((ENCRYPTED_PREFIX, PLAIN_PREFIX)):
        return stored  # plaintext already (legacy, or a batch an earlier run decrypted)
    try:
        return decrypt_value(stored, associated_data=associated_data)
    except SecretDecryptionError as exc:
        raise SecretDecryptionError(f"cannot migrate back to plaintext: {exc}") from exc


def _rewrite(
    model: type[models.Model], field_names: Sequence[str], using: str, convert: Callable[[str, str], str]
) -> int:
    connection = connections[using]
    quote = connection.ops.quote_name
    fields: list[EncryptedTextField] = []
    for name in field_names:
        field = model._meta.get_field(name)
        assert isinstance(field, EncryptedTextField), f"{model._meta.label}.{name} is not an encrypted field"
        fields.append(field)
    pk = model._meta.pk
    assert pk is not None
    table, pk_column = quote(model._meta.db_table), quote(str(pk.column))
    columns = ", ".join(quote(str(field.column)) for field in fields)
    select = f"SELECT {pk_column}, {columns} FROM {table}"  # noqa: S608
    update = f"UPDATE {table} SET {', '.join(f'{quote(str(f.column))} = %s' for f in fields)} WHERE {pk_column} = %s"  # noqa: S608
    bindings = [field.associated_data() for field in fields]
    changed_rows = 0
    last: Any = None
    while True:
        with transaction.atomic(using=using), connection.cursor() as cursor:
            if last is None:
                cursor.execute(f"{select} ORDER BY {pk_column} LIMIT %s", [BATCH_ROWS])
            else:
                cursor.execute(f"{select} WHERE {pk_column} > %s ORDER BY {pk_column} LIMIT %s", [last, BATCH_ROWS])
            rows = cursor.fetchall()
            if not rows:
                return changed_rows
            changes = []
            for row_pk, *stored in rows:
                new = [
                    value if value is None else convert(str(value), binding)
                    for value, binding in zip(stored, bindings, strict=True)
                ]
                if new != [value if value is None else str(value) for value in stored]:
                    changes.append([*new, row_pk])
            if changes:
                cursor.executemany(update, changes)
            changed_rows += len(changes)
            last = rows[-1][0]


def encrypt_columns(model: type[models.Model], field_names: Sequence[str], *, using: str) -> int:
    """Encrypt the plaintext stored in these encrypted fields of `model` (a migration's historical model);
    returns how many rows changed."""
    return _rewrite(model, field_names, using, _encrypt_stored)


def decrypt_columns(model: type[models.Model], field_names: Sequence[str], *, using: str) -> int:
    """Write the plaintext of these encrypted fields back (reverse of encrypt_columns); returns rows changed."""
    return _rewrite(model, field_names, using, _decrypt_stored)
