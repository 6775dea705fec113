"""Secrets at rest: an AES-256-GCM encrypted model field with key rotation.

Stored form: ``enc1:<key id>:<base64(nonce || ciphertext || tag)>``. The key id is the first 8 hex
digits of SHA-256(key), so any configured key can decrypt what it wrote; the first configured key
encrypts. The associated data is ``<app_label>.<model>.<column>``, so ciphertext copied into another
column (or another model) fails authentication instead of decrypting.

``VX_MAILAGENT_KEY`` holds one or more 64-hex-digit keys separated by commas. Missing or invalid →
plaintext mode: values are stored as they are, with a loud warning at startup and on diagnostics.
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
from django.db import models

logger = logging.getLogger(__name__)

ENCRYPTED_PREFIX = "enc1:"
# Plaintext that happens to look like one of our prefixes is escaped so it is never mistaken for ciphertext.
PLAIN_PREFIX = "plain:"
_HEX_KEY = re.compile(r"^[0-9a-fA-F]{64}$")
NONCE_BYTES = 12


class SecretDecryptionError(Exception):
    """A stored secret could not be decrypted; the ciphertext is never handed out as the value."""


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
        raise SecretDecryptionError(
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
    """A TextField whose value is AES-256-GCM encrypted in the database (see module docstring)."""

    def associated_data(self) -> str:
        return f"{self.model._meta.label_lower}.{self.column}"

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> Any:
        if value is None:
            return None
        return self.decode_plaintext(decrypt_value(value, associated_data=self.associated_data()))

    def get_prep_value(self, value: Any) -> Any:
        if value is None:
            return None
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

    def value_to_string(self, obj: models.Model) -> str:
        return self.encode_plaintext(self.value_from_object(obj))


def encrypted_fields() -> list[tuple[type[models.Model], EncryptedTextField]]:
    from django.apps import apps

    found: list[tuple[type[models.Model], EncryptedTextField]] = []
    for model in apps.get_models():
        for field in model._meta.concrete_fields:
            if isinstance(field, EncryptedTextField):
                found.append((model, field))
    return found


def warn_if_insecure() -> None:
    status = encryption_status()
    if status["mode"] == "plaintext":
        banner = "!" * 78
        logger.warning("\n%s\n%s\n%s", banner, status["warning"], banner)
