"""Opening a conversation marks it read, “Mark unread” undoes it; local archives say what is true about them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from apps.accounts import actions
from apps.accounts.models import MailAccount, Message, Thread
from tests.accounts.test_pages import import_messages, make_message

pytestmark = pytest.mark.django_db


@pytest.fixture
def mail(user: Any, tmp_path: Path) -> dict[str, Any]:
    account = actions.create_local_account(owner=user, name="Archive")
    import_messages(
        account,
        tmp_path,
        [
            make_message("Budget review", "budget-1@example.com"),
            make_message(
                "Re: Budget review",
                "budget-2@example.com",
                date="Tue, 03 Nov 2026 09:00:00 +0100",
                in_reply_to="budget-1@example.com",
                unread=True,
            ),
            make_message("Newsletter", "news-1@example.com", date="Wed, 04 Nov 2026 08:00:00 +0100"),
        ],
    )
    return {"account": account, "thread": Thread.objects.get(account=account, subject="Budget review")}


@pytest.fixture
def stranger_mail(db: Any, tmp_path: Path) -> dict[str, Any]:
    stranger = get_user_model().objects.create_user(username="stranger", email="s@example.com", password="x" * 20)
    account = actions.create_local_account(owner=stranger, name="Theirs")
    import_messages(account, tmp_path, [make_message("Private", "private-1@example.com")])
    message = Message.objects.get(account=account)
    return {"thread": message.thread, "message": message}


def test_opening_a_thread_marks_it_read_and_mark_unread_brings_it_back(
    logged_in_client: Client, mail: dict[str, Any]
) -> None:
    thread = mail["thread"]
    unread = Message.objects.get(thread=thread, message_id="budget-2@example.com")
    assert not unread.seen
    url = reverse("mail:thread", args=[thread.pk])
    page = logged_in_client.get(f"{url}?folder=INBOX").content.decode()
    # This visit still shows which message was new; the store already has it read.
    assert page.count("is-unread") == 1
    unread.refresh_from_db()
    assert unread.seen
    assert "Opening a conversation marks it read." in page
    assert "Read and unread are stored in mailagent (this is a local archive)." in page
    assert "is-unread" not in logged_in_client.get(url).content.decode()

    response = logged_in_client.post(reverse("mail:thread_mark_unread", args=[thread.pk]), {"folder": "INBOX"})
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('mail:mailbox')}?account={thread.account_id}&folder=INBOX"
    assert not Message.objects.filter(thread=thread, seen=True).exists()
    mailbox = logged_in_client.get(response["Location"]).content.decode()
    assert "marked unread (2 messages)" in mailbox


def test_opening_a_single_message_marks_it_read(logged_in_client: Client, mail: dict[str, Any]) -> None:
    message = Message.objects.get(message_id="budget-2@example.com")
    message.thread, message.seen = None, False
    message.save(update_fields=["thread", "seen"])
    logged_in_client.get(reverse("mail:message", args=[message.pk]))
    message.refresh_from_db()
    assert message.seen


def test_imap_accounts_say_read_state_is_written_back(logged_in_client: Client, user: Any, tmp_path: Path) -> None:
    account = actions.create_imap_account(
        owner=user,
        name="Work",
        address="me@example.com",
        host="127.0.0.1",
        port=1143,
        security="none",
        username="me",
        password="secret",
    )
    import_messages(account, tmp_path, [make_message("Hello", "hello-1@example.com", unread=True)])
    message = Message.objects.get(account=account)
    assert message.thread_id is not None
    page = logged_in_client.get(reverse("mail:thread", args=[message.thread_id])).content.decode()
    assert "Read, unread, flags and moves are written back to the IMAP server" in page
    # The change is in the ledger, on its way to the server (tests/accounts/test_imap_writeback.py follows it).
    assert 'data-testid="server-change"' in page and "Waiting to reach the server" in page


@pytest.mark.parametrize(
    ("provider", "scopes", "said"),
    [
        ("gmail", ["https://www.googleapis.com/auth/gmail.modify"], "written back to Gmail;"),
        ("outlook", ["User.Read", "Mail.Read", "Mail.ReadWrite"], "written back to Outlook / Microsoft 365;"),
        ("outlook", ["https://graph.microsoft.com/Mail.ReadWrite"], "written back to Outlook / Microsoft 365;"),
        # Connected before write-back existed: read scopes only, and the page says so.
        ("gmail", ["https://www.googleapis.com/auth/gmail.readonly"], "Gmail is not told until you connect it again"),
        ("outlook", ["User.Read", "Mail.Read"], "is not told until you connect it again"),
    ],
)
def test_oauth_accounts_say_whether_their_grant_lets_read_state_reach_the_server(
    user: Any, provider: str, scopes: list[str], said: str
) -> None:
    from apps.accounts.views.mail import read_state_note

    account = MailAccount.objects.create(owner=user, name=provider, provider=provider, credentials={"scopes": scopes})
    assert said in read_state_note(account)


def test_read_state_is_per_owner(
    logged_in_client: Client,
    mail: dict[str, Any],
    stranger_mail: dict[str, Any],
) -> None:
    assert logged_in_client.get(reverse("mail:thread", args=[stranger_mail["thread"].pk])).status_code == 404
    assert (
        logged_in_client.post(reverse("mail:thread_mark_unread", args=[stranger_mail["thread"].pk])).status_code == 404
    )
    assert Message.objects.get(pk=stranger_mail["message"].pk).seen


def test_local_archives_say_when_they_were_imported_instead_of_never_synced(
    logged_in_client: Client,
    mail: dict[str, Any],
) -> None:
    account: MailAccount = mail["account"]
    count = Message.objects.filter(account=account).count()
    listing = logged_in_client.get(reverse("mail:accounts")).content.decode()
    detail = logged_in_client.get(reverse("mail:account_detail", args=[account.pk])).content.decode()
    for html in (listing, detail):
        assert "Never synced" not in html
        assert "Included in scheduled syncs" not in html
        assert f"{count} messages, not synced" in html
        assert "imported <time" in html
