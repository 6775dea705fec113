"""The local store mirrors the IMAP server: every server-side change, then a sync, then the *whole* state
(each folder's Message-IDs with \\Seen and \\Flagged) compared with `doveadm fetch`, Dovecot's own view."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from apps.accounts.actions import create_imap_account, fetch_attachment_bytes
from apps.accounts.models import Attachment, MailAccount, MailFolder, Message, MessageLocation, MessageOutbox
from apps.search.models import SearchDocument
from apps.search.selectors import build_filters, search_page
from tests.accounts.mirror import assert_state_mirrors, synced
from tests.accounts.test_imap_sync import run_sync_command
from tests.fakes.dovecot import Mailbox, make_message, wait_until
from tests.services import shared_path, subprocess_env

pytestmark = pytest.mark.services

PROJECTS = "Projects/Ünïcode"
RENAMED = "Clients/Ärger"
PDF = b"%PDF-1.4\n" + bytes(range(256)) * 20 + b"\n%%EOF\n"


def connect(mailbox: Mailbox, user: Any) -> MailAccount:
    return create_imap_account(
        owner=user,
        name="mirror",
        address=mailbox.username,
        host="127.0.0.1",
        port=mailbox.server.port,
        security="none",
        username=mailbox.username,
        password=mailbox.password,
    )


def assert_mirrors(mailbox: Mailbox, account: MailAccount) -> None:
    assert_state_mirrors(mailbox.doveadm_state(), account)


def mail(n: int, **extra: Any) -> bytes:
    when = dt.datetime(2024, 3, 1, 9, 0, tzinfo=dt.UTC) + dt.timedelta(hours=n)
    return make_message(subject=f"Message {n}", message_id=f"<m{n}@mirror.test>", date=when, **extra)


def search_ids(account: MailAccount, query: str) -> set[str]:
    """Message-IDs the search page finds for `query` (the syntax of the search box), one entry per message."""
    page = search_page(query, user=account.owner, mode="keyword", per_page=100, group=False)
    return {row.message_id for row in page.rows}


@pytest.mark.django_db(transaction=True)
def test_every_server_side_change_is_mirrored(imap_mailbox: Mailbox, user: Any) -> None:
    box = imap_mailbox
    box.create_folder(PROJECTS)
    box.create_folder("Old")
    inbox = [box.append("INBOX", mail(n), flags=[b"\\Seen"] if n % 3 == 0 else []) for n in range(1, 13)]
    box.append("Archive", mail(20))
    box.append(PROJECTS, mail(30, attachments=[("plan.pdf", "application/pdf", PDF)]))
    box.append(PROJECTS, mail(31))
    box.append("Old", mail(40))
    account = connect(box, user)
    first = synced(account)
    assert first.created == 16
    assert_mirrors(box, account)

    # Flags set and cleared by another client.
    box.set_flags("INBOX", inbox[:4], [b"\\Flagged"])
    box.set_flags("INBOX", [inbox[2]], [b"\\Seen"], add=False)
    synced(account)
    assert_mirrors(box, account)

    # Expunge: the message leaves its folder, the mailbox and search.
    box.expunge("INBOX", inbox[10:12])
    outcome = synced(account)
    assert (outcome.removed, outcome.deleted, outcome.created) == (2, 2, 0)
    assert_mirrors(box, account)
    gone = Message.objects.get(account=account, message_id="m11@mirror.test")
    assert gone.deleted_at is not None
    assert search_ids(account, 'subject:"Message 11"') == set()

    # Move: same message, new folder, no second download; search follows it.
    box.move("INBOX", inbox[4:7], "Archive")
    outcome = synced(account)
    assert (outcome.created, outcome.located, outcome.deleted) == (0, 3, 0)
    assert_mirrors(box, account)
    assert "m5@mirror.test" in search_ids(account, "in:Archive")

    # Copy: one message, two places, each with its own flags.
    box.copy("INBOX", inbox[:2], PROJECTS)
    outcome = synced(account)
    assert (outcome.created, outcome.located) == (0, 2)
    assert_mirrors(box, account)
    assert MessageLocation.objects.filter(message__message_id="m1@mirror.test").count() == 2
    # Found in both folders.
    assert {"m1@mirror.test", "m2@mirror.test"} <= search_ids(account, f'in:"{PROJECTS}"')
    assert {"m1@mirror.test", "m2@mirror.test"} <= search_ids(account, "in:inbox")
    copies = box.uids(PROJECTS)[-2:]
    box.set_flags(PROJECTS, copies, [b"\\Seen"])
    synced(account)
    assert_mirrors(box, account)

    # Rename: the folder keeps its messages (nothing downloaded, nothing re-indexed: the index reads folders
    # from the locations), found under the new name only; the attachment is still fetched.
    in_projects = search_ids(account, f'in:"{PROJECTS}"')
    documents_before = set(SearchDocument.objects.values_list("id", "content_hash", "embedded_with"))
    box.rename_folder(PROJECTS, RENAMED)
    outcome = synced(account)
    assert (outcome.created, outcome.removed, outcome.deleted) == (0, 0, 0)
    assert_mirrors(box, account)
    assert not MailFolder.objects.filter(account=account, name=PROJECTS).exists()
    assert set(SearchDocument.objects.values_list("id", "content_hash", "embedded_with")) == documents_before
    assert not MessageOutbox.objects.filter(message__account=account, indexed_at=None).exists()
    assert search_ids(account, f'in:"{RENAMED}"') == in_projects
    assert search_ids(account, f'in:"{PROJECTS}"') == set()
    by_folder = build_filters(account_ids=None, folder=RENAMED)  # the API's and the command's --folder
    filtered = search_page("message", user=user, mode="keyword", per_page=100, group=False, base=by_folder)
    assert {row.message_id for row in filtered.rows} == in_projects
    attachment = Attachment.objects.get(message__account=account, filename="plan.pdf")
    assert fetch_attachment_bytes(attachment=attachment) == PDF

    # Folder deleted: its only message is gone.
    box.delete_folder("Old")
    outcome = synced(account)
    assert outcome.deleted == 1
    assert_mirrors(box, account)

    # UIDVALIDITY change with flags changed meanwhile: membership and flags re-read, nothing re-downloaded.
    box.set_flags("Archive", box.uids("Archive"), [b"\\Seen", b"\\Flagged"])
    box.recreate_folder("Archive")
    box.expunge("Archive", box.uids("Archive")[:1])
    outcome = synced(account)
    assert outcome.created == 0
    assert_mirrors(box, account)

    # New mail, and a sync with no change at all changes nothing.
    box.append("INBOX", mail(50), flags=[b"\\Flagged"])
    outcome = synced(account)
    assert outcome.created == 1
    assert_mirrors(box, account)
    idle = synced(account)
    assert (idle.created, idle.located, idle.removed, idle.deleted) == (0, 0, 0, 0)
    assert_mirrors(box, account)


@pytest.mark.django_db(transaction=True)
def test_a_moved_message_is_found_again_if_it_comes_back(imap_mailbox: Mailbox, user: Any) -> None:
    """Expunged, then the same message appended elsewhere later: it is restored, not stored twice."""
    box = imap_mailbox
    uid = box.append("INBOX", mail(1, attachments=[("plan.pdf", "application/pdf", PDF)]))
    account = connect(box, user)
    synced(account)
    with box.client() as client:
        client.select_folder("INBOX", readonly=True)
        raw = client.fetch([uid], [b"BODY.PEEK[]"])[uid][b"BODY[]"]
    box.expunge("INBOX", [uid])
    assert synced(account).deleted == 1
    box.append("Archive", raw)
    outcome = synced(account)
    assert (outcome.created, outcome.located) == (0, 1)
    assert_mirrors(box, account)
    message = Message.objects.get(account=account)
    assert (message.deleted_at, message.folder) == (None, "Archive")
    assert fetch_attachment_bytes(attachment=message.attachments.get()) == PDF


@pytest.mark.django_db(transaction=True)
def test_distinct_messages_sharing_a_message_id_are_all_kept(imap_mailbox: Mailbox, user: Any) -> None:
    """The mikel/mail fixtures: broken mailers give different messages one Message-ID; none may be lost."""
    root = shared_path("data", "mime", "mikel-mail")
    files = sorted(path for path in Path(root).rglob("*.eml"))
    assert files
    box = imap_mailbox
    box.append_many("INBOX", [path.read_bytes() for path in files])
    account = connect(box, user)
    synced(account)
    assert_mirrors(box, account)
    server_count = len(box.uids("INBOX"))
    assert MessageLocation.objects.filter(account=account).count() == server_count
    # Eight fixtures carry this Message-ID; two of them are the same bytes (one message), six differ.
    shared_id = "9169D984-4E0B-45EF-82D4-8F5E53AD7012@example.com"
    raws = [path.read_bytes() for path in files]
    distinct = {hashlib.sha256(raw).digest() for raw in raws if f"<{shared_id}>".encode() in raw}
    assert len(distinct) == 7
    shared = Message.objects.filter(account=account, message_id=shared_id)
    assert shared.count() == 7
    with_attachments = shared.filter(attachments__isnull=False).distinct().count()
    assert with_attachments >= 5
    # A second sync finds every one of them again: nothing new, nothing lost.
    again = synced(account)
    assert (again.created, again.removed, again.deleted) == (0, 0, 0)


@pytest.mark.faults
@pytest.mark.django_db(transaction=True)
def test_a_sync_killed_while_applying_moves_and_expunges_resumes_without_loss(imap_mailbox: Mailbox, user: Any) -> None:
    """kill -9 of `manage.py sync` after it removed places (moves, expunges) but before it finished: the
    next sync ends with the server's state, every message once, nothing lost, nothing deleted by mistake."""
    box = imap_mailbox
    box.append_many("INBOX", [mail(n) for n in range(300)])
    account = connect(box, user)
    synced(account)
    inbox = box.uids("INBOX")
    box.move("INBOX", inbox[:150], "Archive")
    box.expunge("INBOX", inbox[150:200])
    # A last folder full of new mail keeps the sync busy after INBOX and Archive are done.
    box.create_folder("Zeta")
    filler = "Lorem ipsum dolor sit amet. " * 200
    box.append_many("Zeta", [mail(1000 + n, body=f"{filler}\n{n}\n") for n in range(300)])

    in_inbox = MessageLocation.objects.filter(account=account, folder__name="INBOX")
    in_zeta = MessageLocation.objects.filter(account=account, folder__name="Zeta")
    child = run_sync_command(account.name, subprocess_env(MAILAGENT_SYNC_BATCH="20"))
    try:
        caught = wait_until(lambda: in_zeta.exists() or child.poll() is not None, timeout=120, interval=0.005)
        assert caught and child.poll() is None, "the sync ended too early: " + str(child.communicate())
        os.kill(child.pid, signal.SIGKILL)
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate(timeout=30)
    # Killed halfway: INBOX's removals are committed, Zeta is partly stored, and nothing is marked deleted yet
    # (a message is deleted only once a complete sync found it nowhere).
    assert in_inbox.count() == 100
    assert 0 < in_zeta.count() < 300
    assert not Message.objects.filter(account=account, deleted_at__isnull=False).exists()

    resumed = synced(account)
    assert resumed.deleted == 50
    assert_mirrors(box, account)
    assert Message.objects.filter(account=account).count() == 600  # 300 + 300 new, each once
    assert Message.objects.filter(account=account, deleted_at=None).count() == 550
