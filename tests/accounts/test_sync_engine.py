"""The sync engine's guarantees, exercised through its real sink and store."""

from __future__ import annotations

from datetime import timedelta
from email.message import EmailMessage
from typing import Any

import pytest
from django.utils import timezone

from apps.accounts.actions import create_imap_account, create_local_account
from apps.accounts.models import MailAccount, MailFolder, Message, MessageLocation
from apps.accounts.providers.base import Checkpoint, FolderInfo, RemoteMessage
from apps.accounts.sync import (
    AccountSink,
    SyncLockLost,
    acquire_sync_lock,
    release_sync_lock,
    renew_sync_lock,
    sync_account,
)

pytestmark = pytest.mark.django_db


def raw(message_id: str, subject: str = "hi") -> bytes:
    message = EmailMessage()
    message["From"] = "a@example.com"
    message["Subject"] = subject
    message["Message-ID"] = f"<{message_id}>"
    message["Date"] = "Mon, 02 Nov 2026 10:00:00 +0000"
    message.set_content("body")
    return bytes(message)


def test_one_lock_per_account_and_expired_locks_are_taken_over(user: Any) -> None:
    account = create_local_account(owner=user, name="a")
    token = acquire_sync_lock(account.pk)
    assert token
    assert acquire_sync_lock(account.pk) is None
    MailAccount.objects.filter(pk=account.pk).update(sync_lock_expires_at=timezone.now() - timedelta(seconds=1))
    thief = acquire_sync_lock(account.pk)
    assert thief and thief != token
    with pytest.raises(SyncLockLost):
        renew_sync_lock(account.pk, token)
    release_sync_lock(account.pk, token)  # a stale holder cannot release the new lock
    assert acquire_sync_lock(account.pk) is None
    release_sync_lock(account.pk, thief)
    assert acquire_sync_lock(account.pk)


def test_busy_account_is_not_synced_twice(user: Any) -> None:
    account = create_local_account(owner=user, name="b")
    acquire_sync_lock(account.pk)
    assert sync_account(account.pk).status == "busy"
    assert sync_account(999_999).status == "missing"


def test_batches_commit_with_their_checkpoint_and_replays_are_duplicates(user: Any) -> None:
    account = create_local_account(owner=user, name="c")
    sink = AccountSink(account, lock_token=None, chunk_size=2)
    sink.ensure_folder(FolderInfo(name="INBOX", role="inbox"))
    batch = [RemoteMessage(provider_id=f"INBOX:1:{uid}", raw=raw(f"m{uid}@x"), folder="INBOX") for uid in (1, 2, 3)]
    result = sink.store_batch(batch, Checkpoint(folder="INBOX", uidvalidity=1, last_uid=3))
    assert result.created == 3
    folder = MailFolder.objects.get(account=account, name="INBOX")
    assert (folder.uidvalidity, folder.last_uid) == (1, 3)
    again = sink.store_batch(batch, Checkpoint(folder="INBOX", uidvalidity=1, last_uid=3))
    assert again.created == 0 and again.duplicates == 3


def test_a_known_message_in_a_new_place_gets_a_location_not_a_second_row(user: Any) -> None:
    account = create_local_account(owner=user, name="d")
    sink = AccountSink(account, lock_token=None)
    sink.store_batch([RemoteMessage(provider_id="INBOX:1:10", raw=raw("z@x"), folder="INBOX")])
    sink.reset_folder("INBOX", uidvalidity=2)
    result = sink.store_batch([RemoteMessage(provider_id="INBOX:2:1", raw=raw("z@x"), folder="INBOX")])
    message = Message.objects.get(account=account)
    assert (result.created, result.duplicates, result.located) == (0, 1, 1)
    places = dict(MessageLocation.objects.filter(message=message).values_list("provider_id", "pk"))
    assert set(places) == {"INBOX:1:10", "INBOX:2:1"}
    # The old UIDVALIDITY's place goes: the message follows to its live one.
    sink.remove_places([places["INBOX:1:10"]])
    message.refresh_from_db()
    assert (message.provider_id, message.folder, message.deleted_at) == ("INBOX:2:1", "INBOX", None)
    # The same message in another folder is one message in two places.
    sink.store_batch([RemoteMessage(provider_id="Archive:5:1", raw=raw("z@x"), folder="Archive")])
    assert Message.objects.filter(account=account).count() == 1
    assert set(message.locations.values_list("folder__name", flat=True)) == {"INBOX", "Archive"}
    # Another message with the same Message-ID but other content is another message.
    other = sink.store_batch([RemoteMessage(provider_id="INBOX:2:2", raw=raw("z@x", subject="else"), folder="INBOX")])
    assert other.created == 1
    assert Message.objects.filter(account=account, message_id="z@x").count() == 2


def test_flag_updates_touch_only_changed_messages(user: Any) -> None:
    account = create_local_account(owner=user, name="e")
    sink = AccountSink(account, lock_token=None)
    sink.store_batch([RemoteMessage(provider_id=f"p{i}", raw=raw(f"f{i}@x"), folder="INBOX") for i in range(3)])
    sink.update_flags({"p0": (True, False), "p1": (False, True), "missing": (True, True)})
    flags = dict(Message.objects.filter(account=account).values_list("provider_id", "seen"))
    assert flags == {"p0": True, "p1": False, "p2": False}
    assert Message.objects.get(provider_id="p1").flagged


def test_unreachable_imap_server_is_recorded_as_network_error(user: Any) -> None:
    from tests.services import free_port

    account = create_imap_account(
        owner=user,
        name="dead",
        address="me@example.com",
        host="127.0.0.1",
        port=free_port(),
        security="none",
        username="me",
        password="pw",
    )
    outcome = sync_account(account.pk)
    assert outcome.status == "error"
    assert outcome.error_category == "network"
    account.refresh_from_db()
    assert account.last_sync_status == "error" and account.last_error_category == "network"
    assert account.sync_lock_token == ""  # released even on failure


def test_a_sync_asked_for_while_the_account_is_busy_runs_once_the_holder_is_done(user: Any) -> None:
    # A write-back's follow-up sync during the routing's sync was dropped as "busy": the moved copy stayed
    # unknown here until the next fetch cycle. Now the request is recorded and the holder queues one more pass.
    account = create_local_account(owner=user, name="again")
    token = acquire_sync_lock(account.pk)
    assert token
    assert sync_account(account.pk).status == "busy"
    assert MailAccount.objects.get(pk=account.pk).sync_again_requested
    release_sync_lock(account.pk, token)
    # The holder released before it could see the request: the next caller does the pass itself.
    outcome = sync_account(account.pk)
    assert outcome.status == "ok"
    assert not MailAccount.objects.get(pk=account.pk).sync_again_requested
