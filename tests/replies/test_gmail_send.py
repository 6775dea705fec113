"""Replies from a Gmail account: users.messages.send on the fake Gmail (real google-api-python-client and
google-auth), the gmail.send scope asked for by incremental consent the first time, threadId kept, the
HTML signature turned into text for a plain reply, and the sent copy stored once even after a sync."""

from __future__ import annotations

import email
from email import policy
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from apps.accounts.models import MailAccount, Message, SignatureMode
from apps.accounts.oauth_connect import connect_oauth_account
from apps.accounts.oauth_settings import GMAIL_SEND_SCOPE
from apps.accounts.sync import sync_account
from apps.replies.models import DraftStatus
from tests.fakes.google_server import FakeGoogleServer
from tests.replies.conftest import confirm_and_send, item_for, original_raw, part_text, start_reply

pytestmark = pytest.mark.django_db


def gmail_account(user: Any, google: FakeGoogleServer) -> MailAccount:
    account, _ = connect_oauth_account(
        owner=user, provider="gmail", address=google.address, display_name="", credentials=google.token_set()
    )
    account.display_name = "Owner"
    account.signature_mode = SignatureMode.PROVIDER
    account.save(update_fields=["display_name", "signature_mode"])
    return account


def synced_original(user: Any, google: FakeGoogleServer) -> tuple[MailAccount, Message, str]:
    thread_id = "thread-q3"
    google.add_message(original_raw(to=f"Owner <{google.address}>"), thread_id=thread_id)
    account = gmail_account(user, google)
    sync_account(account.pk)  # also fetches the provider signature (sendAs)
    account.refresh_from_db()
    return account, Message.objects.get(account=account, message_id="q3-numbers@example.com"), thread_id


def follow_consent(client: Any, location: str) -> Any:
    """The user's browser at Google's consent screen (the fake grants at once) and back to our callback."""
    answer = requests.get(location, allow_redirects=False, timeout=10)
    assert answer.status_code == 302
    back = urlsplit(answer.headers["Location"])
    return client.get(f"{back.path}?{back.query}")


def test_first_send_asks_for_gmail_send_then_sends_in_the_thread_and_stores_once(
    logged_in_client: Any, user: Any, google: FakeGoogleServer
) -> None:
    account, original, thread_id = synced_original(user, google)
    assert account.provider_signature == '<div dir="ltr">Best,<br>Owner</div>'
    draft = start_reply(logged_in_client, item_for(user, original, "Hi Alice,\n\nFriday works."))

    # The account was connected with read scopes only: the confirmation page offers the permission step...
    page = logged_in_client.get(f"/replies/{draft.pk}/confirm/").content.decode()
    assert 'data-testid="needs-consent"' in page and 'name="confirm_token"' not in page
    # ...and a send that gets there anyway is turned into the consent redirect, with nothing sent.
    consent = logged_in_client.post(f"/replies/{draft.pk}/consent/")
    assert consent.status_code == 302
    query = parse_qs(urlsplit(consent["Location"]).query)
    assert GMAIL_SEND_SCOPE in query["scope"][0].split()
    assert query["include_granted_scopes"] == ["true"] and query["login_hint"] == [google.address]
    assert google.sent == []

    back = follow_consent(logged_in_client, consent["Location"])
    assert back.status_code == 302 and back["Location"] == f"/replies/{draft.pk}/confirm/"
    account.refresh_from_db()
    assert GMAIL_SEND_SCOPE in (account.credentials or {})["scopes"]
    assert MailAccount.objects.filter(owner=user).count() == 1  # the same account, not a new one
    assert google.sent == []  # consenting sends nothing by itself

    response = confirm_and_send(logged_in_client, draft)

    assert response.status_code == 302, response.content
    (sent,) = google.sent
    assert sent["threadId"] == thread_id
    mime = email.message_from_bytes(sent["raw"], policy=policy.default)
    assert mime["Subject"] == "Re: Quarterly numbers"
    assert mime["In-Reply-To"] == mime["References"] == "<q3-numbers@example.com>"
    assert [a.addr_spec for a in mime["To"].addresses] == ["alice@example.com"]
    text = part_text(mime, "plain")
    # Gmail's HTML signature becomes text in a plain-text reply.
    assert text == "Hi Alice,\n\nFriday works.\n\n-- \nBest,\nOwner\n"
    assert mime.get_body(("html",)) is None

    draft.refresh_from_db()
    assert draft.status == DraftStatus.SENT
    stored = Message.objects.get(account=account, message_id=draft.message_id)
    assert stored.provider_id == sent["id"] and stored.folder == "SENT"
    assert stored.thread_id == original.thread_id
    # The next sync sees the sent message in Gmail's history and stores nothing twice.
    sync_account(account.pk)
    assert Message.objects.filter(account=account, message_id=draft.message_id).count() == 1
    assert Message.objects.filter(account=account).count() == 2


def test_an_html_item_keeps_the_html_signature_and_a_send_failure_keeps_the_draft(
    logged_in_client: Any, user: Any, google: FakeGoogleServer
) -> None:
    account, original, _ = synced_original(user, google)
    credentials = dict(account.credentials or {})
    credentials["scopes"] = [*credentials["scopes"], GMAIL_SEND_SCOPE]
    # Tokens the fake issues for this grant carry gmail.send too (as after a consent).
    for token in (credentials["token"], credentials["refresh_token"]):
        google.token_scopes[token] = list(credentials["scopes"])
    MailAccount.objects.filter(pk=account.pk).update(credentials=credentials)
    item = item_for(user, original, "<p>Hi Alice,</p><p><b>Friday</b> works.</p><script>x()</script>",
                    mime_type="text/html")  # fmt: skip
    draft = start_reply(logged_in_client, item)
    assert draft.body_format == "html"

    google.fail_sends = "Invalid To header"
    failed = confirm_and_send(logged_in_client, draft)
    assert failed["Location"] == f"/replies/{draft.pk}/"
    draft.refresh_from_db()
    assert draft.status == DraftStatus.FAILED
    assert draft.last_error == "Gmail API error 400 invalidArgument: Invalid To header"
    assert "<b>Friday</b>" in draft.body
    assert not Message.objects.filter(account=account, message_id=draft.message_id).exists()

    google.fail_sends = ""
    assert confirm_and_send(logged_in_client, draft).status_code == 302
    (sent,) = google.sent
    mime = email.message_from_bytes(sent["raw"], policy=policy.default)
    html = part_text(mime, "html")
    assert "<div>Best,<br>Owner</div>" in html  # the HTML signature kept (sanitized) in the HTML part
    assert "<b>Friday</b>" in html and "<script>" not in html
    text = part_text(mime, "plain")
    assert "Friday works." in text and "-- \nBest,\nOwner" in text
