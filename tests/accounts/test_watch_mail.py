"""`manage.py watch_mail`, the real process: IMAP IDLE brings new mail and expunges in seconds."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import pytest
from django.utils import timezone

from apps.accounts.models import MailAccount, Message, MessageOutbox
from tests.accounts.test_imap_mirror import assert_mirrors, connect, mail, synced
from tests.fakes.dovecot import Mailbox, wait_until
from tests.services import REPO_ROOT, subprocess_env

pytestmark = pytest.mark.services


def account_synced_since(account_id: int, moment: Any) -> bool:
    return MailAccount.objects.filter(pk=account_id, last_sync_at__gt=moment).exists()


def stored_and_handled(account_id: int, message_id: str) -> bool:
    """Stored, indexed and routed (the outbox records both in the transactions that did them)."""
    return MessageOutbox.objects.filter(
        message__account_id=account_id,
        message__message_id=message_id,
        indexed_at__isnull=False,
        routed_at__isnull=False,
    ).exists()


@pytest.mark.django_db(transaction=True)
def test_idle_brings_new_mail_and_expunges_without_a_fetcher(imap_mailbox: Mailbox, user: Any) -> None:
    box = imap_mailbox
    first = box.append("INBOX", mail(1))
    account = connect(box, user)
    synced(account)
    watcher_started = timezone.now()
    watcher = subprocess.Popen(
        [sys.executable, "manage.py", "watch_mail", "--account", account.name],
        cwd=REPO_ROOT,
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        # The watcher syncs once before it holds IDLE: wait for that sync, then change the server.
        assert wait_until(lambda: account_synced_since(account.pk, watcher_started), timeout=60)
        time.sleep(1)
        started = time.monotonic()
        box.append("INBOX", mail(2))
        assert wait_until(lambda: stored_and_handled(account.pk, "m2@mirror.test"), timeout=60), "new mail not pushed"
        print(f"\nwatch_mail: appended mail stored, indexed and routed after {time.monotonic() - started:.1f} s")

        started = time.monotonic()
        box.expunge("INBOX", [first])
        assert wait_until(
            lambda: Message.objects.filter(message_id="m1@mirror.test", deleted_at__isnull=False).exists(), timeout=60
        ), "expunge not pushed"
        print(f"watch_mail: expunge mirrored after {time.monotonic() - started:.1f} s")
        assert_mirrors(box, account)

        # Changes outside INBOX (NOTIFY): a move to Archive, then a flag set there.
        started = time.monotonic()
        second = box.uids("INBOX")[-1]
        box.move("INBOX", [second], "Archive")
        assert wait_until(
            lambda: Message.objects.filter(message_id="m2@mirror.test", folder="Archive").exists(), timeout=60
        ), "move not pushed"
        box.set_flags("Archive", box.uids("Archive"), [b"\\Flagged"])
        assert wait_until(
            lambda: Message.objects.filter(message_id="m2@mirror.test", flagged=True).exists(), timeout=60
        ), "a flag set in Archive not pushed"
        print(f"watch_mail: move and a flag in Archive mirrored after {time.monotonic() - started:.1f} s")
        assert_mirrors(box, account)
    finally:
        watcher.terminate()
        output = watcher.communicate(timeout=30)[0].decode(errors="replace")
    assert watcher.returncode == 0, output
    assert "watch_mail stopped" in output
