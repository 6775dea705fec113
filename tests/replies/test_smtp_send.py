"""Replies from an IMAP account go out through its SMTP server: a real aiosmtpd server on loopback in this
process, reached through the real views (editor → confirmation → send)."""

from __future__ import annotations

import email
from email import policy
from typing import Any

import pytest

from apps.accounts.actions import create_imap_account
from apps.accounts.models import MailAccount, Message, SignatureMode
from apps.accounts.providers.base import RemoteMessage
from apps.accounts.store import store_remote_messages
from apps.replies.models import DraftStatus, ReplyDraft
from tests.replies.conftest import confirm_and_send, confirm_token, item_for, original_raw, part_text, start_reply

pytestmark = [
    pytest.mark.django_db,
    # AUTH without TLS is what the account's "None (loopback/testing only)" security means.
    pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS:UserWarning"),
]


def imap_account(user: Any, smtp: Any) -> MailAccount:
    account = create_imap_account(
        owner=user,
        name="work",
        address="owner@example.com",
        display_name="Owner Person",
        host="127.0.0.1",
        port=1,
        security="none",
        username="owner@example.com",
        password="imap-secret",
    )
    account.smtp_host, account.smtp_port, account.smtp_security = "127.0.0.1", smtp.port, "none"
    account.smtp_username, account.smtp_password = "owner@example.com", "smtp-secret-42"
    account.signature_mode, account.signature_text = SignatureMode.CUSTOM, "Owner Person\nExample Ltd"
    account.save()
    return account


def store_original(account: MailAccount, raw: bytes, provider_id: str = "INBOX:1:1") -> Message:
    result = store_remote_messages(
        account=account, messages=[RemoteMessage(provider_id=provider_id, raw=raw, folder="INBOX")]
    )
    return Message.objects.get(pk=result.created_ids[0])


def test_reply_all_through_smtp_has_threading_headers_signature_and_is_stored_once(
    logged_in_client: Any, user: Any, smtp_server: Any
) -> None:
    account = imap_account(user, smtp_server)
    original = store_original(
        account,
        original_raw(
            to="Owner <owner@example.com>, Bob <bob@example.com>",
            cc="Carol <carol@example.com>, owner@example.com",
            references="<q3-start@example.com>",
        ),
    )
    item = item_for(user, original, "Hi Alice,\n\nThe numbers are attached to the report.\n")
    draft = start_reply(logged_in_client, item, mode="reply_all")

    response = confirm_and_send(logged_in_client, draft)

    assert response.status_code == 302
    (received,) = smtp_server.received
    assert received["login"] == "owner@example.com"  # logged in with the (encrypted) stored password
    assert sorted(received["to"]) == ["alice@example.com", "bob@example.com", "carol@example.com"]
    sent = email.message_from_bytes(received["data"], policy=policy.default)
    assert sent["Subject"] == "Re: Quarterly numbers"
    assert sent["In-Reply-To"] == "<q3-numbers@example.com>"
    assert sent["References"] == "<q3-start@example.com> <q3-numbers@example.com>"
    assert [a.addr_spec for a in sent["To"].addresses] == ["alice@example.com", "bob@example.com"]
    assert [a.addr_spec for a in sent["Cc"].addresses] == ["carol@example.com"]
    assert sent["From"].addresses[0].addr_spec == "owner@example.com"
    body = part_text(sent, "plain")
    assert body == "Hi Alice,\n\nThe numbers are attached to the report.\n\n-- \nOwner Person\nExample Ltd\n"

    draft.refresh_from_db()
    assert draft.status == DraftStatus.SENT and draft.sent_message is not None
    stored = Message.objects.filter(account=account, message_id=draft.message_id)
    assert stored.count() == 1
    copy = stored.get()
    assert copy.thread_id == original.thread_id  # threaded with the original
    assert response["Location"] == f"/mail/threads/{copy.thread_id}/#message-{copy.pk}"
    # A later sync fetching the server's copy of the same message stores nothing new.
    again = store_remote_messages(
        account=account, messages=[RemoteMessage(provider_id="Sent:1:7", raw=received["data"], folder="Sent")]
    )
    assert again.created == 0
    assert Message.objects.filter(account=account, message_id=draft.message_id).count() == 1
    # Sending again is refused: it was sent.
    token = confirm_token_after_sent(logged_in_client, draft)
    assert token is None
    retry = logged_in_client.post(f"/replies/{draft.pk}/send/", {"confirm_token": "x"})
    assert retry.status_code == 302 and len(smtp_server.received) == 1


def confirm_token_after_sent(client: Any, draft: ReplyDraft) -> str | None:
    page = client.get(f"/replies/{draft.pk}/confirm/")
    return None if page.status_code == 302 else "token"


def test_nothing_is_sent_without_the_confirmation_of_this_revision(
    logged_in_client: Any, user: Any, smtp_server: Any
) -> None:
    account = imap_account(user, smtp_server)
    original = store_original(account, original_raw())
    draft = start_reply(logged_in_client, item_for(user, original, "Sure."))

    # The editor's Send only leads to the confirmation page.
    editor = logged_in_client.post(
        f"/replies/{draft.pk}/",
        {"to": "alice@example.com", "cc": "", "subject": "Re: Quarterly numbers", "body": "Sure.", "action": "send",
         "include_signature": "on"},
    )  # fmt: skip
    assert editor.status_code == 302 and editor["Location"] == f"/replies/{draft.pk}/confirm/"
    # Posting to send without a token, with a forged one, or with the token of an older revision sends nothing.
    stale = confirm_token(logged_in_client, draft)
    logged_in_client.post(
        f"/replies/{draft.pk}/",
        {"to": "alice@example.com", "subject": "Re: Quarterly numbers", "body": "Sure, by Friday.", "action": "save"},
    )
    for token in ("", "forged", stale):
        refused = logged_in_client.post(f"/replies/{draft.pk}/send/", {"confirm_token": token})
        assert refused.status_code == 302 and refused["Location"] == f"/replies/{draft.pk}/confirm/"
    assert smtp_server.received == []
    assert ReplyDraft.objects.get(pk=draft.pk).status == DraftStatus.DRAFT
    # GET on send does nothing either.
    assert logged_in_client.get(f"/replies/{draft.pk}/send/").status_code == 405

    assert confirm_and_send(logged_in_client, draft).status_code == 302
    (received,) = smtp_server.received
    assert b"Sure, by Friday." in received["data"]


def test_a_refused_send_keeps_the_draft_with_the_reason(logged_in_client: Any, user: Any, smtp_server: Any) -> None:
    account = imap_account(user, smtp_server)
    original = store_original(account, original_raw(sender="Nobody <nobody@example.com>"))
    smtp_server.refuse.add("nobody@example.com")
    draft = start_reply(logged_in_client, item_for(user, original, "Hello?"))

    response = confirm_and_send(logged_in_client, draft)

    assert response.status_code == 302 and response["Location"] == f"/replies/{draft.pk}/"
    draft.refresh_from_db()
    assert draft.status == DraftStatus.FAILED
    assert "refused every recipient" in draft.last_error and "550 5.1.1 No such user here" in draft.last_error
    assert draft.body == "Hello?" and draft.sent_message is None
    page = logged_in_client.get(response["Location"]).content.decode()
    assert "550 5.1.1 No such user here" in page and "Your text is kept" in page
    assert not Message.objects.filter(account=account, message_id=draft.message_id).exists()

    # A wrong SMTP password is a clear failure too, and the draft survives it.
    MailAccount.objects.filter(pk=account.pk).update(smtp_password="wrong")
    smtp_server.refuse.clear()
    confirm_and_send(logged_in_client, draft)
    draft.refresh_from_db()
    assert draft.status == DraftStatus.FAILED and "refused the login" in draft.last_error
    assert smtp_server.received == []


def test_an_imap_account_without_smtp_is_sent_to_the_settings_and_the_password_is_write_only(
    logged_in_client: Any, user: Any, smtp_server: Any
) -> None:
    account = imap_account(user, smtp_server)
    MailAccount.objects.filter(pk=account.pk).update(smtp_host="", smtp_password="")
    original = store_original(account, original_raw())
    draft = start_reply(logged_in_client, item_for(user, original, "Yes."))

    page = logged_in_client.get(f"/replies/{draft.pk}/confirm/").content.decode()
    assert "No outgoing (SMTP) server is set up" in page and 'name="confirm_token"' not in page
    settings_url = f"/replies/accounts/{account.pk}/smtp/"
    assert settings_url in page

    saved = logged_in_client.post(
        settings_url,
        {"host": "127.0.0.1", "port": smtp_server.port, "security": "none", "username": "owner@example.com",
         "password": "smtp-secret-42", "next": f"/replies/{draft.pk}/confirm/"},
    )  # fmt: skip
    assert saved.status_code == 302 and saved["Location"] == f"/replies/{draft.pk}/confirm/"
    account.refresh_from_db()
    assert account.smtp_password == "smtp-secret-42"
    form = logged_in_client.get(settings_url).content.decode()
    assert "smtp-secret-42" not in form and "A password is stored" in form
    # Saving without a password keeps the stored one.
    logged_in_client.post(settings_url, {"host": "127.0.0.1", "port": smtp_server.port, "security": "none",
                                         "username": "owner@example.com", "password": ""})  # fmt: skip
    account.refresh_from_db()
    assert account.smtp_password == "smtp-secret-42"

    assert confirm_and_send(logged_in_client, draft).status_code == 302
    assert len(smtp_server.received) == 1
