"""IMAP sync against a real Dovecot: the provider, the sync engine and the store together, seeded by APPEND."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from datetime import timedelta
from typing import Any

import pytest
from django.db.models import Count
from django.utils import timezone

from apps.accounts.actions import create_imap_account, fetch_attachment_bytes
from apps.accounts.models import Attachment, MailAccount, MailFolder, Message
from apps.accounts.providers import get_provider
from apps.accounts.providers.base import ProviderError
from apps.accounts.providers.imap.folders import folder_role
from apps.accounts.providers.imap.provider import ImapProvider, decode_part
from apps.accounts.providers.imap.sync import plan_batches
from apps.accounts.sync import sync_account
from tests.fakes.dovecot import DovecotServer, Mailbox, make_message, wait_until
from tests.services import REPO_ROOT, free_port, subprocess_env

pytestmark = pytest.mark.services

PDF_BYTES = b"%PDF-1.4\n" + bytes(range(256)) * 40 + b"\n%%EOF\n"
UTF8_SUBJECT = "Grüße aus Köln — naïve café ✓ 日本語"
PROJECTS = "Projects/Ünïcode"
NOTES_TEXT = "Ärger mit dem Büro = gelöst; naïve ≈ café " * 4


def connect_account(mailbox: Mailbox, user: Any, *, name: str = "work", password: str | None = None) -> MailAccount:
    return create_imap_account(
        owner=user,
        name=name,
        address=mailbox.username,
        host="127.0.0.1",
        port=mailbox.server.port,
        security="none",
        username=mailbox.username,
        password=mailbox.password if password is None else password,
    )


def seed_standard_mailbox(mailbox: Mailbox) -> dict[str, int]:
    """INBOX: 3 messages (one seen, one with a PDF and a UTF-8 subject); Projects: 2; Sent: 1. Returns UIDs."""
    mailbox.create_folder(PROJECTS)
    uids = {
        "plain": mailbox.append("INBOX", make_message(subject="Plain hello", message_id="<plain@example.test>")),
        "seen": mailbox.append(
            "INBOX", make_message(subject="Already read", message_id="<seen@example.test>"), flags=[b"\\Seen"]
        ),
        "pdf": mailbox.append(
            "INBOX",
            make_message(
                subject=UTF8_SUBJECT,
                body="Der Bericht ist angehängt.\n",
                message_id="<pdf@example.test>",
                attachments=[("bericht-ü.pdf", "application/pdf", PDF_BYTES)],
            ),
        ),
        "p1": mailbox.append(PROJECTS, make_message(subject="Project kickoff", message_id="<p1@example.test>")),
        "p2": mailbox.append(
            PROJECTS, make_message(subject="Project notes", message_id="<p2@example.test>"), flags=[b"\\Flagged"]
        ),
        "sent": mailbox.append("Sent", make_message(subject="My reply", message_id="<sent@example.test>")),
    }
    return uids


def counts_by_folder(account: MailAccount) -> dict[str, int]:
    rows = Message.objects.filter(account=account).values("folder").annotate(n=Count("id"))
    return {row["folder"]: row["n"] for row in rows}


def assert_no_duplicates(account: MailAccount) -> None:
    messages = Message.objects.filter(account=account)
    assert messages.count() == messages.values("message_id").distinct().count()
    assert messages.count() == messages.values("provider_id").distinct().count()


# -- connection ----------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_connection_ok_wrong_password_is_auth_and_closed_port_is_network(imap_mailbox: Mailbox, user: Any) -> None:
    good = connect_account(imap_mailbox, user)
    provider = get_provider(good)
    assert isinstance(provider, ImapProvider)
    provider.test_connection()

    bad = connect_account(imap_mailbox, user, name="bad", password="not-the-password")
    with pytest.raises(ProviderError) as failed:
        get_provider(bad).test_connection()
    assert failed.value.category == "auth"

    outcome = sync_account(bad.pk)
    assert (outcome.status, outcome.error_category) == ("error", "auth")
    bad.refresh_from_db()
    assert bad.last_error_category == "auth"

    unreachable = connect_account(imap_mailbox, user, name="down")
    MailAccount.objects.filter(pk=unreachable.pk).update(imap_port=free_port())
    unreachable.refresh_from_db()
    with pytest.raises(ProviderError) as down:
        get_provider(unreachable).test_connection()
    assert down.value.category == "network"


# -- sync ----------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_initial_sync_stores_every_folder_with_attachments_flags_and_roles(imap_mailbox: Mailbox, user: Any) -> None:
    uids = seed_standard_mailbox(imap_mailbox)
    account = connect_account(imap_mailbox, user)

    outcome = sync_account(account.pk)

    assert outcome.status == "ok", outcome.error_message
    assert (outcome.created, outcome.duplicates, outcome.parse_errors) == (6, 0, 0)
    assert counts_by_folder(account) == {"INBOX": 3, PROJECTS: 2, "Sent": 1}
    assert_no_duplicates(account)

    pdf = Message.objects.get(account=account, message_id="pdf@example.test")
    assert pdf.subject == UTF8_SUBJECT
    assert pdf.has_attachments
    inbox_uv = imap_mailbox.uidvalidity("INBOX")
    assert pdf.provider_id == f"INBOX:{inbox_uv}:{uids['pdf']}"
    attachments = list(Attachment.objects.filter(message__account=account))
    assert len(attachments) == 1
    attachment = attachments[0]
    assert attachment.message_id == pdf.pk
    assert attachment.filename == "bericht-ü.pdf"
    assert attachment.mime_type == "application/pdf"
    assert attachment.provider_ref == "2"
    assert attachment.cache_path == ""  # IMAP attachments are fetched on demand

    flags = {m.message_id: (m.seen, m.flagged) for m in Message.objects.filter(account=account)}
    assert flags["seen@example.test"] == (True, False)
    assert flags["plain@example.test"] == (False, False)
    assert flags["p2@example.test"] == (False, True)

    folders = {f.name: f for f in MailFolder.objects.filter(account=account)}
    assert {name: f.role for name, f in folders.items()} == {
        "INBOX": "inbox",
        PROJECTS: "",
        "Sent": "sent",
        "Drafts": "drafts",
        "Trash": "trash",
        "Junk": "spam",
        "Archive": "archive",
    }
    assert folders["INBOX"].uidvalidity == inbox_uv
    assert folders["INBOX"].last_uid == uids["pdf"]
    assert folders[PROJECTS].last_uid == uids["p2"]
    assert folders["Trash"].uidvalidity == imap_mailbox.uidvalidity("Trash")  # empty folders keep their UIDVALIDITY

    again = sync_account(account.pk)
    assert (again.status, again.created, again.duplicates) == ("ok", 0, 0)
    assert Message.objects.filter(account=account).count() == 6


@pytest.mark.django_db
def test_incremental_sync_stores_exactly_the_new_mail(imap_mailbox: Mailbox, user: Any) -> None:
    seed_standard_mailbox(imap_mailbox)
    account = connect_account(imap_mailbox, user)
    assert sync_account(account.pk).created == 6

    new_inbox = [imap_mailbox.append("INBOX", make_message(subject=f"New {i}")) for i in range(2)]
    imap_mailbox.append(PROJECTS, make_message(subject="New project mail"))
    outcome = sync_account(account.pk)

    assert (outcome.status, outcome.created, outcome.duplicates) == ("ok", 3, 0)
    assert counts_by_folder(account) == {"INBOX": 5, PROJECTS: 3, "Sent": 1}
    assert MailFolder.objects.get(account=account, name="INBOX").last_uid == max(new_inbox)
    assert set(Message.objects.filter(pk__in=outcome.created_ids).values_list("subject", flat=True)) == {
        "New 0",
        "New 1",
        "New project mail",
    }
    assert_no_duplicates(account)


@pytest.mark.django_db
@pytest.mark.parametrize("condstore", [True, False], ids=["condstore", "plain-flags"])
def test_flag_changes_on_the_server_reach_stored_messages(
    imap_mailbox: Mailbox, user: Any, condstore: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ImapProvider, "use_condstore", condstore)
    uids = seed_standard_mailbox(imap_mailbox)
    account = connect_account(imap_mailbox, user)
    assert sync_account(account.pk).created == 6
    inbox = MailFolder.objects.get(account=account, name="INBOX")
    assert inbox.sync_token.startswith("modseq:") == condstore

    imap_mailbox.set_flags("INBOX", [uids["plain"]], [b"\\Seen", b"\\Flagged"])
    imap_mailbox.set_flags("INBOX", [uids["seen"]], [b"\\Seen"], add=False)
    imap_mailbox.set_flags(PROJECTS, [uids["p2"]], [b"\\Flagged"], add=False)
    imap_mailbox.append("INBOX", make_message(subject="Arrives with the flag change", message_id="<late@example.test>"))
    outcome = sync_account(account.pk)

    assert (outcome.status, outcome.created, outcome.duplicates) == ("ok", 1, 0)
    flags = {m.message_id: (m.seen, m.flagged) for m in Message.objects.filter(account=account)}
    assert flags["plain@example.test"] == (True, True)
    assert flags["seen@example.test"] == (False, False)
    assert flags["p2@example.test"] == (False, False)
    assert flags["pdf@example.test"] == (False, False)
    assert flags["late@example.test"] == (False, False)
    if condstore:
        inbox.refresh_from_db()
        highest = int(inbox.sync_token.removeprefix("modseq:"))
        assert highest > 0


@pytest.mark.django_db
def test_uidvalidity_change_resyncs_the_folder_without_duplicates(imap_mailbox: Mailbox, user: Any) -> None:
    seed_standard_mailbox(imap_mailbox)
    account = connect_account(imap_mailbox, user)
    assert sync_account(account.pk).created == 6
    before = counts_by_folder(account)
    old_uv = MailFolder.objects.get(account=account, name=PROJECTS).uidvalidity

    new_uv = imap_mailbox.recreate_folder(PROJECTS)
    assert new_uv != old_uv
    outcome = sync_account(account.pk)

    assert outcome.status == "ok", outcome.error_message
    # Recognised from their headers: new locations, no body downloaded again, nothing deleted.
    assert (outcome.created, outcome.located, outcome.removed, outcome.deleted) == (0, 2, 2, 0)
    assert counts_by_folder(account) == before
    assert_no_duplicates(account)
    folder = MailFolder.objects.get(account=account, name=PROJECTS)
    assert (folder.uidvalidity, folder.last_uid) == (new_uv, max(imap_mailbox.uids(PROJECTS)))
    # The stored rows follow the messages to their new UIDs, so later lookups hit the right message.
    provider_ids = set(Message.objects.filter(account=account, folder=PROJECTS).values_list("provider_id", flat=True))
    assert provider_ids == {f"{PROJECTS}:{new_uv}:{uid}" for uid in imap_mailbox.uids(PROJECTS)}

    again = sync_account(account.pk)
    assert (again.created, again.duplicates) == (0, 0)


# -- attachments ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_attachment_bytes_are_fetched_on_demand_and_decoded(imap_mailbox: Mailbox, user: Any) -> None:
    binary = os.urandom(70_000)
    imap_mailbox.append(
        "INBOX",
        make_message(
            subject="Two attachments",
            body="plain part",
            html="<p>html part</p>",
            message_id="<two@example.test>",
            attachments=[
                ("random.bin", "application/octet-stream", binary),
                ("report.pdf", "application/pdf", PDF_BYTES),
            ],
            text_attachments=[("notes.txt", NOTES_TEXT)],
        ),
    )
    account = connect_account(imap_mailbox, user)
    assert sync_account(account.pk).created == 1

    by_name = {a.filename: a for a in Attachment.objects.filter(message__account=account)}
    assert set(by_name) == {"random.bin", "report.pdf", "notes.txt"}
    # multipart/mixed → [multipart/alternative (1.1 text, 1.2 html), attachments 2, 3 and 4]
    assert [by_name[n].provider_ref for n in ("random.bin", "report.pdf", "notes.txt")] == ["2", "3", "4"]

    assert fetch_attachment_bytes(attachment=by_name["random.bin"]) == binary
    assert fetch_attachment_bytes(attachment=by_name["report.pdf"]) == PDF_BYTES
    # quoted-printable on the wire; the line break the MIME writer adds comes back as CRLF
    assert fetch_attachment_bytes(attachment=by_name["notes.txt"]) == NOTES_TEXT.encode() + b"\r\n"
    cached = Attachment.objects.get(pk=by_name["random.bin"].pk)
    assert cached.cache_path and cached.size == len(binary)


@pytest.mark.django_db
def test_attachment_of_a_folder_with_a_new_uidvalidity_asks_for_a_resync(imap_mailbox: Mailbox, user: Any) -> None:
    seed_standard_mailbox(imap_mailbox)
    imap_mailbox.append(
        PROJECTS,
        make_message(
            subject="Plan", message_id="<plan@example.test>", attachments=[("plan.pdf", "application/pdf", PDF_BYTES)]
        ),
    )
    account = connect_account(imap_mailbox, user)
    assert sync_account(account.pk).created == 7
    attachment = Attachment.objects.get(message__account=account, filename="plan.pdf")

    imap_mailbox.recreate_folder(PROJECTS)
    with pytest.raises(ProviderError) as stale:
        get_provider(account).fetch_attachment(Attachment.objects.select_related("message").get(pk=attachment.pk))
    assert stale.value.category == "other"
    assert "resync" in str(stale.value)

    assert sync_account(account.pk).created == 0
    fresh = Attachment.objects.select_related("message").get(pk=attachment.pk)
    assert get_provider(account).fetch_attachment(fresh) == PDF_BYTES


def test_folder_roles_and_batch_planning() -> None:
    assert folder_role("INBOX", (), "/") == "inbox"
    assert folder_role("[Gmail]/Sent Mail", (b"\\HasNoChildren", b"\\Sent"), "/") == "sent"
    assert folder_role("Papierkorb", (b"\\trash",), "/") == "trash"
    assert folder_role("INBOX.Junk", (), ".") == "spam"  # no SPECIAL-USE: well-known names
    assert folder_role("Projects/Archive", (), "/") == ""  # a user's folder that happens to be called Archive
    # Count-bounded and byte-bounded; a message larger than the byte bound goes alone.
    sizes = {1: 10, 2: 10, 3: 100, 4: 5, 5: 5, 6: 5}
    assert plan_batches(sizes, max_count=2, max_bytes=50) == [[1, 2], [3], [4, 5], [6]]
    assert plan_batches({}, max_count=2, max_bytes=50) == []


def test_transfer_encodings_are_undone() -> None:
    assert decode_part(b"Content-Transfer-Encoding: base64\r\n\r\n", b"aGVs\r\nbG8=\r\n") == b"hello"
    assert decode_part(b"Content-Transfer-Encoding: BASE64\r\n\r\n", b"aGVsbG8") == b"hello"  # missing padding
    assert (
        decode_part(b"Content-Transfer-Encoding: quoted-printable\r\n\r\n", b"caf=C3=A9 =\r\nok") == "café ok".encode()
    )
    assert decode_part(b"Content-Transfer-Encoding: 8bit\r\n\r\n", b"raw \xff") == b"raw \xff"
    assert decode_part(b"", b"as is") == b"as is"


# -- crash and resume ----------------------------------------------------------------------------------

BULK_FOLDER = "Bulk"
BULK_COUNT = 600


def run_sync_command(account_name: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "manage.py", "sync", "--account", account_name],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.django_db(transaction=True)
def test_sync_killed_halfway_resumes_without_loss_or_duplicates(
    dovecot: DovecotServer, imap_mailbox: Mailbox, user: Any
) -> None:
    imap_mailbox.create_folder(BULK_FOLDER)
    filler = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 20
    imap_mailbox.append_many(
        BULK_FOLDER,
        (
            make_message(subject=f"Bulk {i:03d}", body=f"{filler}\n{i}\n", message_id=f"<bulk-{i}@example.test>")
            for i in range(BULK_COUNT)
        ),
    )
    server_uids = imap_mailbox.uids(BULK_FOLDER)
    assert len(server_uids) == BULK_COUNT
    account = connect_account(imap_mailbox, user, name="bulk-resume")
    # Small batches so the kill lands between checkpoints; the lock keeps its default lifetime (600 s).
    env = subprocess_env(MAILAGENT_SYNC_BATCH="50")
    stored = Message.objects.filter(account=account)

    child = run_sync_command(account.name, env)
    try:
        caught = wait_until(lambda: stored.count() > 0 or child.poll() is not None, timeout=60, interval=0.005)
        assert caught and child.poll() is None, "the sync ended before storing anything: " + str(child.communicate())
        os.kill(child.pid, signal.SIGKILL)
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL

    killed_at = stored.count()
    assert 0 < killed_at < BULK_COUNT, f"kill landed at {killed_at}; the test needs a partial sync"
    folder = MailFolder.objects.get(account=account, name=BULK_FOLDER)
    assert folder.last_uid < max(server_uids)
    # Every committed checkpoint is backed by the messages before it: nothing at or below it is missing.
    committed_uids = {
        int(pid.rsplit(":", 1)[1]) for pid in stored.filter(folder=BULK_FOLDER).values_list("provider_id", flat=True)
    }
    assert {uid for uid in server_uids if uid <= folder.last_uid} <= committed_uids

    # The dead process's lock is still recorded, far from expiring, but its holder is gone: the next sync
    # takes it over at once instead of answering "busy" for the lock's lifetime.
    account.refresh_from_db()
    expires = account.sync_lock_expires_at
    assert account.sync_lock_token and expires is not None
    assert expires - timezone.now() > timedelta(minutes=5)

    resumed = subprocess.run(
        [sys.executable, "manage.py", "sync", "--account", account.name],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    summary = re.search(r"ok — (\d+) new", resumed.stdout)
    assert summary, resumed.stdout
    assert int(summary[1]) == BULK_COUNT - killed_at
    assert stored.count() == BULK_COUNT
    assert_no_duplicates(account)
    folder.refresh_from_db()
    assert folder.last_uid == max(server_uids)
    assert set(stored.values_list("subject", flat=True)) == {f"Bulk {i:03d}" for i in range(BULK_COUNT)}
