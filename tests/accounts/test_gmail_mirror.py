"""The local store mirrors Gmail: another client deletes, archives, labels, trashes, marks spam and flags mail,
then a sync, then the *whole* state (each folder's Message-IDs with seen and flagged, from MessageLocation)
compared with the fake's own view; and decisions made here (read, flag, archive, trash, move) reach Gmail
through the write-back ledger and survive the next sync."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from email.message import EmailMessage
from typing import Any

import pytest

from apps.accounts.models import MailAccount, MailAction, MailActionStatus, MailFolder, Message
from apps.accounts.oauth import connect_oauth_account
from apps.accounts.providers.gmail.provider import GmailProvider
from apps.accounts.writeback import request_mail_actions
from tests.accounts.mirror import assert_state_mirrors, synced
from tests.conftest import _serve_fake
from tests.fakes.google_server import GMAIL_MODIFY_SCOPE, FakeGoogleServer

pytestmark = pytest.mark.django_db

Capture = Callable[..., AbstractContextManager[list[Callable[[], Any]]]]


@pytest.fixture
def google(settings: Any) -> Iterator[FakeGoogleServer]:
    # Small pages: listing and history must follow page tokens.
    yield from _serve_fake(FakeGoogleServer(max_page_size=3), settings)


@pytest.fixture(autouse=True)
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(GmailProvider, "batch_size", 2)


def mail(n: int) -> bytes:
    message = EmailMessage()
    message["From"] = f"Sender {n} <sender{n}@example.com>"
    message["To"] = "owner@gmail.test"
    message["Subject"] = f"Message {n}"
    message["Message-ID"] = f"<g{n}@mirror.test>"
    message["Date"] = f"Mon, 02 Nov 2026 10:{n % 60:02d}:00 +0000"
    message.set_content(f"Body of message {n}\n")
    return bytes(message)


def connect(user: Any, google: FakeGoogleServer, **token_options: Any) -> MailAccount:
    account, _ = connect_oauth_account(
        owner=user,
        provider="gmail",
        address=google.address,
        display_name="",
        credentials=google.token_set(**token_options),
    )
    return account


def raw_fetches(google: FakeGoogleServer) -> int:
    with google.lock:
        return google.raw_fetches


def assert_mirrors(google: FakeGoogleServer, account: MailAccount) -> None:
    assert_state_mirrors(google.state(), account)


def gmail_id(google: FakeGoogleServer, n: int) -> str:
    return next(m.id for m in google.messages.values() if f"<g{n}@mirror.test>".encode() in m.raw)


def seed(google: FakeGoogleServer) -> None:
    google.add_label("Label_7", "Projects")
    google.add_label("Label_8", "Receipts")
    for n in range(1, 9):
        google.add_message(mail(n), labels=["INBOX", "UNREAD"] if n % 2 else ["INBOX"])
    google.add_message(mail(9), labels=["SENT"])
    google.add_message(mail(10), labels=["Label_7"])
    google.add_message(mail(11), labels=[])
    google.add_message(mail(12), labels=["TRASH", "INBOX"])  # trashed: kept its other labels
    google.add_message(mail(13), labels=["SPAM", "UNREAD"])


def test_every_change_made_in_gmail_is_mirrored(user: Any, google: FakeGoogleServer) -> None:
    seed(google)
    account = connect(user, google)
    assert synced(account).created == 12  # all but spam, the trash included
    assert_mirrors(google, account)
    roles = dict(MailFolder.objects.filter(account=account).values_list("name", "role"))
    assert (roles[""], roles["TRASH"]) == ("archive", "trash")
    fetched = raw_fetches(google)

    # Flags changed by another client.
    google.modify_labels(gmail_id(google, 1), remove=["UNREAD"], add=["STARRED"])
    google.modify_labels(gmail_id(google, 2), add=["UNREAD"])
    synced(account)
    assert_mirrors(google, account)

    # Deleted for good: the message leaves the mailbox.
    google.delete_message(gmail_id(google, 3))
    outcome = synced(account)
    assert (outcome.removed, outcome.deleted, outcome.created) == (1, 1, 0)
    assert_mirrors(google, account)
    assert Message.objects.get(account=account, message_id="g3@mirror.test").deleted_at is not None

    # Archived (INBOX removed), labelled then taken out of the inbox, trashed: moves, nothing downloaded.
    google.modify_labels(gmail_id(google, 4), remove=["INBOX"])
    google.modify_labels(gmail_id(google, 5), add=["Label_8"])
    google.modify_labels(gmail_id(google, 5), remove=["INBOX", "UNREAD"])
    google.modify_labels(gmail_id(google, 6), add=["TRASH"])
    google.modify_labels(gmail_id(google, 10), add=["INBOX", "STARRED"])
    outcome = synced(account)
    assert (outcome.created, outcome.located, outcome.deleted) == (0, 4, 0)
    assert_mirrors(google, account)
    moved = Message.objects.get(account=account, message_id="g5@mirror.test")
    assert (moved.folder, moved.seen) == ("Label_8", True)

    # Marked spam: out of the mirror. Back from spam: restored from the stored row, not downloaded.
    google.modify_labels(gmail_id(google, 7), add=["SPAM"], remove=["INBOX"])
    assert synced(account).deleted == 1
    assert_mirrors(google, account)
    google.modify_labels(gmail_id(google, 7), remove=["SPAM"], add=["INBOX"])
    outcome = synced(account)
    assert (outcome.created, outcome.located, outcome.deleted) == (0, 1, 0)
    assert_mirrors(google, account)
    assert Message.objects.get(account=account, message_id="g7@mirror.test").deleted_at is None

    # Added and deleted between two syncs: never downloaded. Added, then labelled: stored where it ends up.
    google.delete_message(google.add_message(mail(20)))
    google.modify_labels(google.add_message(mail(21)), add=["Label_7", "STARRED"], remove=["INBOX"])
    outcome = synced(account)
    assert (outcome.created, outcome.deleted) == (1, 0)
    assert_mirrors(google, account)
    assert raw_fetches(google) - fetched == 1  # only message 21, ever, since the first sync

    # Nothing changed: nothing happens.
    quiet = synced(account)
    assert (quiet.created, quiet.located, quiet.removed, quiet.deleted) == (0, 0, 0, 0)
    assert_mirrors(google, account)


def test_a_full_resync_after_the_history_expired_catches_deletes_and_moves(user: Any, google: FakeGoogleServer) -> None:
    seed(google)
    account = connect(user, google)
    synced(account)
    google.delete_message(gmail_id(google, 1))
    google.modify_labels(gmail_id(google, 2), remove=["INBOX"], add=["Label_7", "STARRED"])
    google.modify_labels(gmail_id(google, 12), remove=["TRASH"])  # restored from Trash to the inbox
    google.modify_labels(gmail_id(google, 8), add=["SPAM"])
    google.add_message(mail(30), labels=["INBOX"])
    google.expire_history()
    fetched = raw_fetches(google)

    outcome = synced(account)

    assert (outcome.created, outcome.deleted) == (1, 2)
    assert_mirrors(google, account)
    assert raw_fetches(google) - fetched == 1  # the new one; the rest only had their labels read
    assert Message.objects.filter(account=account, message_id="g30@mirror.test").count() == 1
    assert synced(account).created == 0  # back on the history feed
    assert_mirrors(google, account)


def labels_of(google: FakeGoogleServer, n: int) -> set[str]:
    return set(google.messages[gmail_id(google, n)].labels)


def test_read_flag_archive_trash_move_and_undo_reach_gmail(
    user: Any, google: FakeGoogleServer, django_capture_on_commit_callbacks: Capture
) -> None:
    seed(google)
    account = connect(user, google)
    synced(account)

    def act(n: int, kind: str, folder: str = "") -> MailAction:
        message = Message.objects.get(account=account, message_id=f"g{n}@mirror.test")
        with django_capture_on_commit_callbacks(execute=True):
            (action,) = request_mail_actions(messages=[message], kind=kind, folder=folder, requested_by=user)
        action.refresh_from_db()
        assert action.status == MailActionStatus.DONE, action.error
        return action

    read = act(1, "read")
    assert "UNREAD" not in labels_of(google, 1)
    assert "messages.modify -UNREAD" in read.provider_response
    act(1, "flag")
    assert "STARRED" in labels_of(google, 1)
    act(2, "unread")
    assert "UNREAD" in labels_of(google, 2)
    synced(account)
    assert_mirrors(google, account)

    # Archive = out of the inbox; the ledger's sync moved the location to All Mail.
    archive = act(3, "archive")
    assert labels_of(google, 3) == {"UNREAD"} and archive.target_folder == ""
    assert Message.objects.get(account=account, message_id="g3@mirror.test").folder == ""
    assert_mirrors(google, account)

    trash = act(4, "trash")
    assert "TRASH" in labels_of(google, 4) and "messages.trash" in trash.provider_response
    assert_mirrors(google, account)

    moved = act(5, "move", folder="Label_7")
    assert labels_of(google, 5) == {"Label_7", "UNREAD"}
    assert "+Label_7 -INBOX" in moved.provider_response
    assert_mirrors(google, account)

    # Undo the trash: out of Trash and back in the inbox.
    from apps.accounts.writeback import undo_mail_action

    with django_capture_on_commit_callbacks(execute=True):
        undo = undo_mail_action(action=trash, requested_by=user)
    undo.refresh_from_db()
    assert undo.status == MailActionStatus.DONE, undo.error
    assert "TRASH" not in labels_of(google, 4) and "INBOX" in labels_of(google, 4)
    assert "messages.untrash" in undo.provider_response
    synced(account)
    assert_mirrors(google, account)
    assert Message.objects.filter(account=account).count() == 12  # nothing stored twice

    # Gmail puts no SENT label on a message: refused for good, not retried, and the server is unchanged.
    message = Message.objects.get(account=account, message_id="g6@mirror.test")
    with django_capture_on_commit_callbacks(execute=True):
        (refused,) = request_mail_actions(messages=[message], kind="move", folder="SENT", requested_by=user)
    refused.refresh_from_db()
    assert (refused.status, refused.error) == (MailActionStatus.GAVE_UP, "Gmail cannot move mail into SENT")
    assert labels_of(google, 6) == {"INBOX"}


def test_a_grant_without_gmail_modify_fails_the_write_back_and_says_why(
    user: Any, google: FakeGoogleServer, django_capture_on_commit_callbacks: Capture
) -> None:
    google.add_message(mail(1))
    account = connect(user, google)
    synced(account)
    # An account connected before write-back existed: its tokens carry the read scopes only.
    for token in list(google.token_scopes):
        google.token_scopes[token] = [s for s in google.token_scopes[token] if s != GMAIL_MODIFY_SCOPE]
    message = Message.objects.get(account=account)
    with django_capture_on_commit_callbacks(execute=True):
        (action,) = request_mail_actions(messages=[message], kind="read", requested_by=user)
    action.refresh_from_db()
    assert action.status == MailActionStatus.FAILED
    assert "permission" in action.error
    assert "UNREAD" in google.messages[message.provider_id].labels
