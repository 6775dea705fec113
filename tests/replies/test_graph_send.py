"""Replies from an Outlook account: Microsoft Graph /me/sendMail with the MIME on the fake identity platform
+ Graph (real MSAL), Mail.Send asked for by incremental consent when the user first sends, and the sent copy
stored once even after the Sent Items delta brings it back."""

from __future__ import annotations

import email
from email import policy
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from apps.accounts.models import MailAccount, Message
from apps.accounts.sync import sync_account
from apps.replies import selectors
from apps.replies.models import DraftStatus
from tests.fakes.graph_server import FakeGraphServer, connect_outlook, follow_consent
from tests.replies.conftest import confirm_and_send, item_for, original_raw, part_text, start_reply

pytestmark = pytest.mark.django_db


def test_send_without_mail_send_goes_through_consent_then_sends_once(
    logged_in_client: Any, user: Any, graph: FakeGraphServer
) -> None:
    graph.add_message(
        graph.folder_id("inbox"),
        original_raw(to=f"Owner <{graph.address}>", cc="Bob <bob@example.com>", references="<q3-start@example.com>"),
    )
    account = connect_outlook(logged_in_client, graph)
    assert "Mail.Send" not in account.credentials["scopes"]  # connecting never asks to send
    sync_account(account.pk)
    original = Message.objects.get(account=account, message_id="q3-numbers@example.com")
    account.refresh_from_db()
    account.signature_text = "Owner\nExample Ltd"
    account.save(update_fields=["signature_text"])
    draft = start_reply(logged_in_client, item_for(user, original, "Hi Alice,\n\nFriday works."), mode="reply_all")

    # A confirmed send (token from the confirmation page) without the permission goes to Microsoft's consent.
    response = logged_in_client.post(f"/replies/{draft.pk}/send/", {"confirm_token": selectors.confirm_token(draft)})
    assert response.status_code == 302
    assert response["Location"].startswith(f"{graph.https_base}/{graph.tenant}/oauth2/v2.0/authorize?")
    assert "Mail.Send" in parse_qs(urlsplit(response["Location"]).query)["scope"][0].split()
    assert graph.sent == []
    draft.refresh_from_db()
    assert draft.status == DraftStatus.DRAFT  # nothing was attempted

    back = logged_in_client.get(follow_consent(graph, response["Location"]))
    assert back.status_code == 302 and back["Location"] == f"/replies/{draft.pk}/confirm/"
    account.refresh_from_db()
    assert "Mail.Send" in account.credentials["scopes"]
    assert MailAccount.objects.filter(owner=user).count() == 1
    assert graph.sent == []

    graph.expire_access_tokens()  # the send refreshes its token (for Mail.Send, which is now consented)
    sent_response = confirm_and_send(logged_in_client, draft)

    assert sent_response.status_code == 302
    (mime_bytes,) = graph.sent
    mime = email.message_from_bytes(mime_bytes, policy=policy.default)
    assert mime["Subject"] == "Re: Quarterly numbers"
    assert mime["In-Reply-To"] == "<q3-numbers@example.com>"
    assert mime["References"] == "<q3-start@example.com> <q3-numbers@example.com>"
    assert [a.addr_spec for a in mime["To"].addresses] == ["alice@example.com"]
    assert [a.addr_spec for a in mime["Cc"].addresses] == ["bob@example.com"]
    text = part_text(mime, "plain")
    assert text == "Hi Alice,\n\nFriday works.\n\n-- \nOwner\nExample Ltd\n"

    draft.refresh_from_db()
    assert draft.status == DraftStatus.SENT and mime["Message-ID"] == f"<{draft.message_id}>"
    stored = Message.objects.get(account=account, message_id=draft.message_id)
    assert stored.thread_id == original.thread_id
    # The Sent Items delta brings the same message back: recognised by its Message-ID, not stored twice,
    # and the local copy takes over Graph's id.
    sync_account(account.pk)
    copies = Message.objects.filter(account=account, message_id=draft.message_id)
    assert copies.count() == 1
    assert copies.get().provider_id in graph.messages


def test_a_lost_permission_leads_to_consent_and_a_graph_refusal_keeps_the_draft(
    logged_in_client: Any, user: Any, graph: FakeGraphServer
) -> None:
    graph.add_message(graph.folder_id("inbox"), original_raw(to=f"Owner <{graph.address}>"))
    account = connect_outlook(logged_in_client, graph)
    sync_account(account.pk)
    original = Message.objects.get(account=account, message_id="q3-numbers@example.com")
    draft = start_reply(logged_in_client, item_for(user, original, "Sure."))
    # The stored grant says Mail.Send, but Microsoft no longer has that consent (AADSTS65001 on refresh).
    credentials = dict(MailAccount.objects.get(pk=account.pk).credentials or {})
    MailAccount.objects.filter(pk=account.pk).update(credentials={**credentials, "scopes": ["Mail.Send"]})

    again = confirm_and_send(logged_in_client, draft)

    assert again["Location"].startswith(f"{graph.https_base}/{graph.tenant}/oauth2/v2.0/authorize?")
    draft.refresh_from_db()
    assert draft.status == DraftStatus.FAILED and "has not allowed mailagent to send" in draft.last_error
    assert graph.sent == []
    logged_in_client.get(follow_consent(graph, again["Location"]))

    graph.fail_sends = "The recipient alice@example.com is not valid."
    failed = confirm_and_send(logged_in_client, draft)

    assert failed["Location"] == f"/replies/{draft.pk}/"
    draft.refresh_from_db()
    assert draft.status == DraftStatus.FAILED and draft.body == "Sure."
    assert draft.last_error == (
        "Microsoft Graph sendMail failed: HTTP 400 ErrorInvalidRecipients: "
        "The recipient alice@example.com is not valid."
    )
    page = logged_in_client.get(f"/replies/{draft.pk}/").content.decode()
    assert "The last send failed" in page and "is not valid" in page
    assert graph.sent == []
