"""A reply from an IMAP account goes out by SMTP (a real aiosmtpd server on loopback) and its exact bytes are
APPENDed to the account's Sent folder on the real Dovecot, flagged \\Seen; the next sync of that folder does
not store it a second time. A failed APPEND leaves the reply sent and says why."""

from __future__ import annotations

from typing import Any

import pytest

from apps.accounts.actions import create_imap_account
from apps.accounts.models import MailAccount, Message
from apps.accounts.providers.base import RemoteMessage
from apps.accounts.providers.imap.writeback import sent_folder
from apps.accounts.store import store_remote_messages
from apps.accounts.sync import sync_account
from apps.replies.models import DraftStatus, ReplyDraft
from tests.fakes.dovecot import Mailbox
from tests.replies.conftest import confirm_and_send, item_for, original_raw, start_reply

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS:UserWarning"),
]


def _account(user: Any, mailbox: Mailbox, smtp: Any, *, imap_password: str | None = None) -> MailAccount:
    account = create_imap_account(
        owner=user,
        name="work",
        address="owner@example.com",
        host="127.0.0.1",
        port=mailbox.server.port,
        security="none",
        username=mailbox.username,
        password=mailbox.password if imap_password is None else imap_password,
    )
    account.smtp_host, account.smtp_port, account.smtp_security = "127.0.0.1", smtp.port, "none"
    account.smtp_username, account.smtp_password = "owner@example.com", "smtp-secret-42"
    account.save()
    return account


def _reply(client: Any, user: Any, account: MailAccount) -> ReplyDraft:
    stored = store_remote_messages(
        account=account, messages=[RemoteMessage(provider_id="INBOX:1:1", raw=original_raw(), folder="INBOX")]
    )
    original = Message.objects.get(pk=stored.created_ids[0])
    draft = start_reply(client, item_for(user, original, "Thanks, the invoice is paid."))
    response = confirm_and_send(client, draft)
    assert response.status_code in (200, 302), response.content
    draft.refresh_from_db()
    return draft


def _crlf(raw: bytes) -> bytes:
    return raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def test_the_sent_reply_lands_in_dovecots_sent_folder_seen_and_a_sync_stores_it_once(
    logged_in_client: Any, user: Any, smtp_server: Any, imap_mailbox: Mailbox
) -> None:
    account = _account(user, imap_mailbox, smtp_server)
    draft = _reply(logged_in_client, user, account)
    assert draft.status == DraftStatus.SENT and draft.last_error == ""
    (delivered,) = smtp_server.received
    with imap_mailbox.client() as client:
        client.select_folder("Sent", readonly=True)
        fetched = client.fetch(client.search(["ALL"]), ["FLAGS", "RFC822"])
    ((uid, data),) = fetched.items()
    assert b"\\Seen" in data[b"FLAGS"]
    assert _crlf(data[b"RFC822"]) == _crlf(delivered["data"])  # the exact bytes the SMTP server got
    local = Message.objects.get(account=account, message_id=draft.message_id)
    assert local.folder == "Sent" and local.provider_id.startswith("Sent:") and local.provider_id.endswith(f":{uid}")

    outcome = sync_account(account.pk)
    assert outcome.status == "ok", outcome.error_message
    assert outcome.created == 0  # the Sent copy is the reply already stored
    assert Message.objects.filter(account=account, message_id=draft.message_id).count() == 1
    assert Message.objects.filter(account=account).count() == 2  # the original and the reply, once each
    assert Message.objects.get(account=account, message_id=draft.message_id).pk == local.pk


def test_a_failed_append_keeps_the_reply_sent_and_says_why(
    logged_in_client: Any, user: Any, smtp_server: Any, imap_mailbox: Mailbox
) -> None:
    account = _account(user, imap_mailbox, smtp_server, imap_password="not-the-password")
    draft = _reply(logged_in_client, user, account)
    assert draft.status == DraftStatus.SENT and len(smtp_server.received) == 1
    assert "Sent, but the copy in the account's Sent folder could not be saved" in draft.last_error
    assert "password" in draft.last_error.lower() or "auth" in draft.last_error.lower()
    logged_in_client.get(f"/replies/{draft.pk}/")  # the one-time message after sending
    page = logged_in_client.get(f"/replies/{draft.pk}/").content.decode()  # and later: the draft keeps saying it
    assert 'data-testid="sent-warning"' in page and "could not be saved" in page
    with imap_mailbox.client() as client:
        client.select_folder("Sent", readonly=True)
        assert client.search(["ALL"]) == []
    # Stored locally once all the same.
    assert Message.objects.filter(account=account, message_id=draft.message_id).count() == 1


def test_the_sent_folder_is_special_use_first_then_a_usual_name_and_never_invented() -> None:
    assert sent_folder([("INBOX", "inbox"), ("Sent Items", "sent"), ("Outbox", "sent!")]) == "Outbox"
    assert sent_folder([("INBOX", "inbox"), ("Sent Items", "sent")]) == "Sent Items"
    assert sent_folder([("INBOX", "inbox"), ("Projects", "")]) == ""
