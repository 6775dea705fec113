"""Secrets at rest: an AES-256-GCM encrypted model field with key rotation.

Stored form: ``enc1:<key id>:<base64(nonce || ciphertext || tag)>``. The key id is the first 8 hex
digits of SHA-256(key), so any configured key can decrypt what it wrote; the first configured key
encrypts. The associated data is ``<app_label>.<model>.<column>``, so ciphertext copied into another
column (or another model) fails authentication instead of decrypting.

``VX_MAILAGENT_KEY`` holds one or more 64-hex-digit keys separated by commas. Missing or invalid →
plaintext mode: values are stored as they are, with a loud warning at startup and on diagnostics. With
DEBUG off the app refuses to start in plaintext mode unless ``MAILAGENT_ALLOW_PLAINTEXT=1`` says so.

A stored value this process cannot decrypt (its key is not configured, or it was damaged) loads as an
``UndecryptableText``/``UndecryptableJSON`` placeholder instead of failing the whole query: pages show
"cannot decrypt: …", saving the row writes the original ciphertext back unchanged, and ``reveal()`` (what
code that uses a secret calls) raises ``SecretDecryptionError``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models
from django.db.models.functions import Cast

logger = logging.getLogger(__name__)

ENCRYPTED_PREFIX = "enc1:"
# Plaintext that happens to look like one of our prefixes is escaped so it is never mistaken for ciphertext.
PLAIN_PREFIX = "plain:"
_HEX_KEY = re.compile(r"^[0-9a-fA-F]{64}$")
NONCE_BYTES = 12


class SecretDecryptionError(Exception):
    """A stored secret could not be decrypted; the ciphertext is never handed out as the value."""


KEY_MISSING_LABEL = "cannot decrypt: the key that encrypted this is not configured"
DAMAGED_LABEL = "cannot decrypt: the stored value is damaged or belongs to another field"
ENCRYPTED_LABEL = "stored encrypted (AES-256-GCM)"
PLAINTEXT_LABEL = "stored in plaintext — set VX_MAILAGENT_KEY"
PLAINTEXT_WITH_KEY_LABEL = "stored in plaintext — run manage.py reencrypt_secrets"


class KeyNotConfiguredError(SecretDecryptionError):
    """The value was encrypted with a key that is not among the configured ones."""


class UndecryptableText(str):
    """Stands for a text secret that could not be decrypted: reads as its "cannot decrypt: …" label."""

    stored: str
    reason: str

    def __new__(cls, *, stored: str, error: SecretDecryptionError) -> UndecryptableText:
        label = KEY_MISSING_LABEL if isinstance(error, KeyNotConfiguredError) else DAMAGED_LABEL
        value = super().__new__(cls, label)
        value.stored = stored
        value.reason = str(error)
        return value


class UndecryptableJSON(dict[str, str]):
    """Stands for an encrypted JSON value that could not be decrypted: `{"undecryptable": <label>}`."""

    stored: str
    reason: str

    def __init__(self, *, stored: str, error: SecretDecryptionError) -> None:
        label = KEY_MISSING_LABEL if isinstance(error, KeyNotConfiguredError) else DAMAGED_LABEL
        super().__init__(undecryptable=label)
        self.stored = stored
        self.reason = str(error)


def is_undecryptable(value: Any) -> bool:
    return isinstance(value, UndecryptableText | UndecryptableJSON)


def reveal(value: Any) -> Any:
    """The secret itself, for code about to use it; a clear error when it could not be decrypted."""
    if is_undecryptable(value):
        raise SecretDecryptionError(value.reason)
    return value


@dataclass(frozen=True)
class Keyring:
    keys: tuple[tuple[str, bytes], ...]  # (key id, key), first one encrypts
    invalid_reason: str = ""

    @property
    def enabled(self) -> bool:
        return bool(self.keys)

    @property
    def mode(self) -> str:
        return "aes-256-gcm" if self.enabled else "plaintext"

    @property
    def current_key_id(self) -> str | None:
        return self.keys[0][0] if self.keys else None

    def key_for(self, key_id: str) -> bytes | None:
        for candidate_id, key in self.keys:
            if candidate_id == key_id:
                return key
        return None


def key_id_for(key: bytes) -> str:
    return hashlib.sha256(key).hexdigest()[:8]


@lru_cache(maxsize=8)
def _parse_keyring(raw: str) -> Keyring:
    parts = [part.strip() for part in raw.split(",") if part.strip()]
    if not parts:
        return Keyring(keys=(), invalid_reason="VX_MAILAGENT_KEY is not set")
    keys: list[tuple[str, bytes]] = []
    for index, part in enumerate(parts, start=1):
        if not _HEX_KEY.match(part):
            return Keyring(
                keys=(),
                invalid_reason=f"VX_MAILAGENT_KEY entry {index} is not 64 hexadecimal characters",
            )
        key = binascii.unhexlify(part)
        keys.append((key_id_for(key), key))
    return Keyring(keys=tuple(keys))


def get_keyring() -> Keyring:
    return _parse_keyring(getattr(settings, "VX_MAILAGENT_KEY", "") or "")


def encryption_status() -> dict[str, Any]:
    keyring = get_keyring()
    status: dict[str, Any] = {
        "mode": keyring.mode,
        "keys": len(keyring.keys),
        "current_key_id": keyring.current_key_id,
    }
    if not keyring.enabled:
        status["warning"] = (
            f"Secrets are stored in PLAINTEXT: {keyring.invalid_reason}. "
            "Set VX_MAILAGENT_KEY to 64 hex characters (e.g. `openssl rand -hex 32`) and run "
            "`manage.py reencrypt_secrets`."
        )
    return status


def generate_key() -> str:
    return os.urandom(32).hex()


def encrypt_value(plaintext: str, *, associated_data: str, keyring: Keyring | None = None) -> str:
    keyring = keyring or get_keyring()
    if not keyring.enabled:
        if plaintext.startswith((ENCRYPTED_PREFIX, PLAIN_PREFIX)):
            return PLAIN_PREFIX + plaintext
        return plaintext
    key_id, key = keyring.keys[0]
    nonce = os.urandom(NONCE_BYTES)
    sealed = AESGCM(key).encrypt(nonce, plaintext.encode("utf-8"), associated_data.encode("utf-8"))
    return f"{ENCRYPTED_PREFIX}{key_id}:{base64.b64encode(nonce + sealed).decode('ascii')}"


def stored_key_id(stored: str) -> str | None:
    """The key id a stored value was written with, or None for plaintext."""
    if not stored.startswith(ENCRYPTED_PREFIX):
        return None
    return stored[len(ENCRYPTED_PREFIX) :].split(":", 1)[0]


def decrypt_value(stored: str, *, associated_data: str, keyring: Keyring | None = None) -> str:
    if stored.startswith(PLAIN_PREFIX):
        return stored[len(PLAIN_PREFIX) :]
    if not stored.startswith(ENCRYPTED_PREFIX):
        return stored  # written in plaintext mode; `reencrypt_secrets` encrypts it
    keyring = keyring or get_keyring()
    try:
        key_id, payload = stored[len(ENCRYPTED_PREFIX) :].split(":", 1)
        blob = base64.b64decode(payload, validate=True)
    except (ValueError, binascii.Error) as exc:
        raise SecretDecryptionError(f"Malformed encrypted value in {associated_data}") from exc
    key = keyring.key_for(key_id)
    if key is None:
        raise KeyNotConfiguredError(
            f"{associated_data} was encrypted with key {key_id}, which is not among the configured "
            f"VX_MAILAGENT_KEY keys ({', '.join(k for k, _ in keyring.keys) or 'none configured'})"
        )
    if len(blob) < NONCE_BYTES + 16:
        raise SecretDecryptionError(f"Truncated encrypted value in {associated_data}")
    try:
        plaintext = AESGCM(key).decrypt(blob[:NONCE_BYTES], blob[NONCE_BYTES:], associated_data.encode("utf-8"))
    except InvalidTag as exc:
        raise SecretDecryptionError(
            f"Authentication failed for {associated_data}: the value was tampered with or belongs to another field"
        ) from exc
    return plaintext.decode("utf-8")


class EncryptedTextField(models.TextField):
    """A TextField whose value is AES-256-GCM encrypted in the database (see module docstring).

    The ciphertext is bound to "<app_label>.<model>.<column>". A model that moves to another app passes its
    old binding as `associated_data`, or every value stored before the move would no longer decrypt."""

    def __init__(self, *args: Any, associated_data: str = "", **kwargs: Any) -> None:
        self.fixed_associated_data = associated_data
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> Any:
        name, path, args, kwargs = super().deconstruct()
        if self.fixed_associated_data:
            kwargs["associated_data"] = self.fixed_associated_data
        return name, path, args, kwargs

    def associated_data(self) -> str:
        return self.fixed_associated_data or f"{self.model._meta.label_lower}.{self.column}"

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> Any:
        if value is None:
            return None
        try:
            return self.decode_plaintext(decrypt_value(value, associated_data=self.associated_data()))
        except SecretDecryptionError as exc:
            logger.warning("%s", exc)
            return self.undecryptable(value, exc)

    def undecryptable(self, stored: str, error: SecretDecryptionError) -> Any:
        return UndecryptableText(stored=stored, error=error)

    def get_prep_value(self, value: Any) -> Any:
        if value is None:
            return None
        if is_undecryptable(value):
            return value.stored  # written back exactly as it was read: a save never destroys it
        return encrypt_value(self.encode_plaintext(value), associated_data=self.associated_data())

    def to_python(self, value: Any) -> Any:
        return value

    def encode_plaintext(self, value: Any) -> str:
        return str(value)

    def decode_plaintext(self, text: str) -> Any:
        return text

    def get_internal_type(self) -> str:
        return "TextField"


class EncryptedJSONField(EncryptedTextField):
    """JSON-serialisable data (token sets, MSAL caches) encrypted as one text value."""

    # django-stubs reads these to type model attributes: any JSON value in, any JSON value out.
    _pyi_private_set_type: Any
    _pyi_private_get_type: Any

    def encode_plaintext(self, value: Any) -> str:
        return json.dumps(value, separators=(",", ":"), sort_keys=True)

    def decode_plaintext(self, text: str) -> Any:
        if text == "":
            return None
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise SecretDecryptionError(f"{self.associated_data()} does not hold valid JSON") from exc

    def undecryptable(self, stored: str, error: SecretDecryptionError) -> Any:
        return UndecryptableJSON(stored=stored, error=error)

    def value_to_string(self, obj: models.Model) -> str:
        return self.encode_plaintext(reveal(self.value_from_object(obj)))


def encrypted_fields() -> list[tuple[type[models.Model], EncryptedTextField]]:
    from django.apps import apps

    found: list[tuple[type[models.Model], EncryptedTextField]] = []
    for model in apps.get_models():
        for field in model._meta.concrete_fields:
            if isinstance(field, EncryptedTextField):
                found.append((model, field))
    return found


@dataclass(frozen=True)
class SecretStorage:
    state: str  # none | encrypted | plaintext | undecryptable
    label: str


def new_secret_storage_label() -> str:
    """How a secret entered now will be stored (for forms)."""
    return ENCRYPTED_LABEL if get_keyring().enabled else PLAINTEXT_LABEL


def secret_storage(instance: models.Model, field_name: str) -> SecretStorage:
    """How this row's secret really sits in the database, read from the stored column itself."""
    field = instance._meta.get_field(field_name)
    assert isinstance(field, EncryptedTextField)
    raw = (
        type(instance)
        ._base_manager.filter(pk=instance.pk)
        .annotate(_raw=stored_column(field.attname))
        .values_list("_raw", flat=True)
        .first()
    )
    return storage_of_stored_value(raw)


def stored_column(attname: str) -> Cast:
    """An annotation reading an encrypted column as stored (ciphertext or plaintext), without decrypting."""
    return Cast(attname, output_field=models.TextField())


def storage_of_stored_value(raw: str | None) -> SecretStorage:
    if not raw:
        return SecretStorage("none", "none")
    keyring = get_keyring()
    key_id = stored_key_id(raw)
    if key_id is None:
        return SecretStorage("plaintext", PLAINTEXT_WITH_KEY_LABEL if keyring.enabled else PLAINTEXT_LABEL)
    if keyring.key_for(key_id) is None:
        return SecretStorage("undecryptable", KEY_MISSING_LABEL)
    return SecretStorage("encrypted", ENCRYPTED_LABEL)


def plaintext_refusal() -> str | None:
    """Why the app must not start (no valid key, DEBUG off, plaintext not explicitly allowed), or None."""
    keyring = get_keyring()
    if keyring.enabled or settings.DEBUG or getattr(settings, "MAILAGENT_ALLOW_PLAINTEXT", False):
        return None
    return (
        f"Refusing to run with DEBUG off and no valid VX_MAILAGENT_KEY ({keyring.invalid_reason}): OAuth tokens, "
        "IMAP passwords and API keys would be stored in plaintext. Set VX_MAILAGENT_KEY to 64 hex characters "
        "(`openssl rand -hex 32`), or set MAILAGENT_ALLOW_PLAINTEXT=1 to accept plaintext storage."
    )


def enforce_secret_storage_policy() -> None:
    """At process start: refuse plaintext mode in production (see plaintext_refusal), warn loudly otherwise."""
    if refusal := plaintext_refusal():
        raise ImproperlyConfigured(refusal)
    status = encryption_status()
    if status["mode"] == "plaintext":
        banner = "!" * 78
        logger.warning("\n%s\n%s\n%s", banner, status["warning"], banner)
