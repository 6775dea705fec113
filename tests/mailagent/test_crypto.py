from __future__ import annotations

import os
import subprocess
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import override_settings

from apps.accounts.models import MailAccount, Provider
from mailagent.crypto import (
    DAMAGED_LABEL,
    KEY_MISSING_LABEL,
    SecretDecryptionError,
    decrypt_value,
    encrypt_value,
    encryption_status,
    generate_key,
    is_undecryptable,
    reveal,
    stored_key_id,
)
from tests.services import current_database_url

pytestmark = pytest.mark.django_db

KEY_A = "a1" * 32
KEY_B = "b2" * 32
SECRET = {"password": "hunter2-SUPER-secret-value", "refresh_token": "1//refresh-token-xyz"}


def raw_credentials(account_id: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT credentials FROM mail_mailaccount WHERE id = %s", [account_id])
        return str(cursor.fetchone()[0])


def make_account(user: Any, name: str = "work") -> MailAccount:
    return MailAccount.objects.create(owner=user, name=name, provider=Provider.IMAP, credentials=SECRET)


@pytest.mark.django_db(transaction=True)
def test_roundtrip_and_no_plaintext_in_the_database(user: Any) -> None:
    account = make_account(user)
    raw = raw_credentials(account.pk)
    assert raw.startswith("enc1:")
    assert "hunter2" not in raw and "refresh-token" not in raw
    assert MailAccount.objects.get(pk=account.pk).credentials == SECRET
    connection.close()  # flush everything to disk, then look at the bytes themselves
    if connection.vendor == "sqlite":
        # Read by another process: closing a file descriptor of the database in this one would drop every
        # POSIX lock this process holds on it, and the next process to close the database would then delete
        # the WAL under this process's open connections ("disk I/O error" for every later test).
        path = current_database_url().removeprefix("sqlite:///")
        files = [path + suffix for suffix in ("", "-wal", "-shm") if os.path.exists(path + suffix)]
        blob = subprocess.run(["cat", *files], check=True, capture_output=True).stdout
        assert b"hunter2-SUPER-secret-value" not in blob
        assert b"enc1:" in blob


def test_same_value_encrypts_differently_each_time() -> None:
    first = encrypt_value("x", associated_data="a.b.c")
    second = encrypt_value("x", associated_data="a.b.c")
    assert first != second
    assert decrypt_value(first, associated_data="a.b.c") == "x"


def test_ciphertext_cannot_move_to_another_column() -> None:
    sealed = encrypt_value("secret", associated_data="mail.mailaccount.credentials")
    with pytest.raises(SecretDecryptionError, match="Authentication failed"):
        decrypt_value(sealed, associated_data="orchestration.apiconfig.api_key")


def test_tampered_ciphertext_never_returns_garbage(user: Any) -> None:
    account = make_account(user)
    raw = raw_credentials(account.pk)
    body = raw[:-6] + ("A" if raw[-6] != "A" else "B") + raw[-5:]
    with connection.cursor() as cursor:
        cursor.execute("UPDATE mail_mailaccount SET credentials = %s WHERE id = %s", [body, account.pk])
    loaded = MailAccount.objects.get(pk=account.pk).credentials
    assert is_undecryptable(loaded) and loaded == {"undecryptable": DAMAGED_LABEL}
    with pytest.raises(SecretDecryptionError, match="Authentication failed"):
        reveal(loaded)


def test_unknown_key_is_a_clear_error(user: Any) -> None:
    with override_settings(VX_MAILAGENT_KEY=KEY_A):
        account = make_account(user)
    with override_settings(VX_MAILAGENT_KEY=KEY_B):
        loaded = MailAccount.objects.get(pk=account.pk).credentials
        assert loaded == {"undecryptable": KEY_MISSING_LABEL}
        with pytest.raises(SecretDecryptionError, match="not among the configured"):
            reveal(loaded)


def test_rotation_old_key_still_decrypts_and_reencrypt_moves_everything(user: Any) -> None:
    with override_settings(VX_MAILAGENT_KEY=KEY_A):
        first = make_account(user, "one")
        second = make_account(user, "two")
        old_id = stored_key_id(raw_credentials(first.pk))
    with override_settings(VX_MAILAGENT_KEY=f"{KEY_B},{KEY_A}"):
        assert MailAccount.objects.get(pk=first.pk).credentials == SECRET
        new_id = encryption_status()["current_key_id"]
        assert new_id != old_id
        out = StringIO()
        call_command("reencrypt_secrets", stdout=out, stderr=StringIO())
        # Two accounts, two secrets each (IMAP credentials, SMTP password: an empty one is encrypted too, so a
        # stored row does not reveal whether a password is set).
        assert "Re-encrypted 4 value(s)" in out.getvalue()
        assert stored_key_id(raw_credentials(first.pk)) == new_id
        assert stored_key_id(raw_credentials(second.pk)) == new_id
        out = StringIO()
        call_command("reencrypt_secrets", stdout=out, stderr=StringIO())
        assert "Re-encrypted 0 value(s); 4 already current" in out.getvalue()
    with override_settings(VX_MAILAGENT_KEY=KEY_B):  # the old key can now be retired
        assert MailAccount.objects.get(pk=second.pk).credentials == SECRET


@pytest.mark.parametrize("bad_key", ["", "not-hex", "ab" * 31, "zz" * 32])
def test_missing_or_invalid_key_means_plaintext_mode_with_a_warning(user: Any, bad_key: str, staff_client: Any) -> None:
    with override_settings(VX_MAILAGENT_KEY=bad_key):
        status = encryption_status()
        assert status["mode"] == "plaintext"
        assert "PLAINTEXT" in status["warning"]
        account = make_account(user)
        assert "hunter2" in raw_credentials(account.pk)
        assert MailAccount.objects.get(pk=account.pk).credentials == SECRET
        page = staff_client.get("/runs/diagnostics/").content.decode()
        assert 'data-testid="encryption-warning"' in page
        assert staff_client.get("/api/diagnostics/runtime").json()["encryption"]["mode"] == "plaintext"
        with pytest.raises(CommandError, match="no key"):
            call_command("reencrypt_secrets", stdout=StringIO())
    # Plaintext written without a key is encrypted once a key exists.
    call_command("reencrypt_secrets", stdout=StringIO(), stderr=StringIO())
    assert raw_credentials(account.pk).startswith("enc1:")
    assert MailAccount.objects.get(pk=account.pk).credentials == SECRET


def test_plaintext_that_looks_like_ciphertext_is_escaped() -> None:
    with override_settings(VX_MAILAGENT_KEY=""):
        stored = encrypt_value("enc1:deadbeef:xyz", associated_data="a.b.c")
        assert decrypt_value(stored, associated_data="a.b.c") == "enc1:deadbeef:xyz"


def test_encrypted_value_without_key_is_an_error() -> None:
    sealed = encrypt_value("secret", associated_data="a.b.c")
    with override_settings(VX_MAILAGENT_KEY=""), pytest.raises(SecretDecryptionError, match="none configured"):
        decrypt_value(sealed, associated_data="a.b.c")


def test_generated_keys_are_valid() -> None:
    key = generate_key()
    with override_settings(VX_MAILAGENT_KEY=key):
        assert encryption_status()["mode"] == "aes-256-gcm"
