"""Write-back to a real Dovecot: decisions made here show in `doveadm fetch`, the next sync agrees, and a
failure is recorded and retried instead of dropped."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from apps.accounts.models import MailAccount, MailAction, MailActionStatus, Message, MessageLocation, Thread
from apps.accounts.writeback import retry_due_mail_actions
from tests.accounts.test_imap_mirror import assert_mirrors, connect, mail, synced
from tests.fakes.dovecot import Mailbox
from tests.services import free_port

pytestmark = pytest.mark.services


def server_flags(box: Mailbox, message_id: str) -> dict[str, tuple[bool, bool]]:
    """{folder: (seen, flagged)} of the message on the server, from doveadm."""
    return {
        folder: (seen, flagged)
        for folder, rows in box.doveadm_state().items()
        for mid, seen, flagged in rows
        if mid == message_id
    }


def thread_of(account: MailAccount, message_id: str) -> Thread:
    thread = Message.objects.get(account=account, message_id=message_id).thread
    assert thread is not None
    return thread


@pytest.mark.django_db(transaction=True)
def test_read_flag_archive_trash_and_undo_reach_the_server(
    imap_mailbox: Mailbox, user: Any, logged_in_client: Client
) -> None:
    box = imap_mailbox
    for n in (1, 2, 3):
        box.append("INBOX", mail(n))
    account = connect(box, user)
    synced(account)

    # Opening a conversation reads it on the server too.
    thread = thread_of(account, "m1@mirror.test")
    assert logged_in_client.get(reverse("mail:thread", args=[thread.pk])).status_code == 200
    assert server_flags(box, "m1@mirror.test") == {"INBOX": (True, False)}
    action = MailAction.objects.get(message__message_id="m1@mirror.test", kind="read")
    assert (action.status, action.requested_by_id, action.origin) == (MailActionStatus.DONE, user.pk, "user")
    assert "UID STORE" in action.provider_response

    # Mark unread, flag: the server has them, and a sync changes nothing back.
    logged_in_client.post(reverse("mail:thread_mark_unread", args=[thread.pk]))
    logged_in_client.post(reverse("mail:thread_action", args=[thread.pk]), {"kind": "flag"})
    assert server_flags(box, "m1@mirror.test") == {"INBOX": (False, True)}
    synced(account)
    assert_mirrors(box, account)

    # Archive: moved on the server; the store follows without downloading it again.
    archive = logged_in_client.post(
        reverse("mail:thread_action", args=[thread.pk]), {"kind": "archive", "folder": "INBOX"}
    )
    assert archive.status_code == 302
    assert server_flags(box, "m1@mirror.test") == {"Archive": (False, True)}
    assert_mirrors(box, account)
    message = Message.objects.get(account=account, message_id="m1@mirror.test")
    assert (message.folder, message.deleted_at) == ("Archive", None)
    assert Message.objects.filter(account=account).count() == 3

    # Undo puts it back where it was.
    done = MailAction.objects.get(message=message, kind="archive")
    assert done.status == MailActionStatus.DONE and done.source_folders == ["INBOX"]
    undo = logged_in_client.post(reverse("mail:mail_action_undo", args=[done.pk]))
    assert undo.status_code == 302
    assert server_flags(box, "m1@mirror.test") == {"INBOX": (False, True)}
    assert MailAction.objects.get(undo_of=done).status == MailActionStatus.DONE
    assert_mirrors(box, account)

    # Trash, and the conversation page lists every server change with its status.
    other = thread_of(account, "m2@mirror.test")
    logged_in_client.post(reverse("mail:thread_action", args=[other.pk]), {"kind": "trash"})
    assert server_flags(box, "m2@mirror.test") == {"Trash": (False, False)}
    assert_mirrors(box, account)
    page = logged_in_client.get(reverse("mail:thread", args=[thread.pk])).content.decode()
    assert 'data-testid="server-changes"' in page and "Done on the server" in page


@pytest.mark.django_db(transaction=True)
def test_a_move_to_a_folder_the_server_does_not_have_is_refused(
    imap_mailbox: Mailbox, user: Any, logged_in_client: Client
) -> None:
    imap_mailbox.append("INBOX", mail(1))
    account = connect(imap_mailbox, user)
    synced(account)
    thread = thread_of(account, "m1@mirror.test")
    response = logged_in_client.post(
        reverse("mail:thread_action", args=[thread.pk]), {"kind": "move", "target": "Nowhere"}, follow=True
    )
    assert "There is no folder &#x27;Nowhere&#x27; in mirror." in response.content.decode()
    assert not MailAction.objects.filter(kind="move").exists()
    assert imap_mailbox.doveadm_state() == {"INBOX": [("m1@mirror.test", True, False)]}


@pytest.mark.django_db(transaction=True)
def test_a_failed_write_back_is_kept_retried_and_then_done(imap_mailbox: Mailbox, user: Any) -> None:
    box = imap_mailbox
    box.append("INBOX", mail(1))
    account = connect(box, user)
    synced(account)
    real_port = account.imap_port
    MailAccount.objects.filter(pk=account.pk).update(imap_port=free_port())
    message = Message.objects.get(account=account)

    from apps.accounts.actions import set_messages_seen

    set_messages_seen(messages=[message], seen=True, requested_by=user)
    action = MailAction.objects.get(message=message)
    assert action.status == MailActionStatus.FAILED
    assert "Cannot talk to IMAP server" in action.error
    assert action.next_attempt_at is not None and action.next_attempt_at > timezone.now()
    # Shown as read here meanwhile; the server does not have it yet.
    assert MessageLocation.objects.get(message=message).seen
    assert server_flags(box, "m1@mirror.test") == {"INBOX": (False, False)}

    # Not before its backoff; then the server is back and the retry does it.
    assert retry_due_mail_actions() == 0
    MailAccount.objects.filter(pk=account.pk).update(imap_port=real_port)
    assert retry_due_mail_actions(now=timezone.now() + dt.timedelta(hours=1)) == 1
    action.refresh_from_db()
    assert (action.status, action.attempts, action.error) == (MailActionStatus.DONE, 2, "")
    assert server_flags(box, "m1@mirror.test") == {"INBOX": (True, False)}
