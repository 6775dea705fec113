"""Local imports: real corpora (../shared/data), mbox/Maildir/zip layouts, exact counts, re-runs store nothing."""

from __future__ import annotations

import mailbox
import subprocess
import sys
import tarfile
import zipfile
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest

from apps.accounts.actions import create_local_account
from apps.accounts.importers import MailImportError, import_path
from apps.accounts.models import Attachment, MailFolder, Message, Thread
from apps.accounts.signals import messages_stored
from tests.services import REPO_ROOT, shared_path, subprocess_env

pytestmark = pytest.mark.django_db

# Four Enron mailboxes whose inboxes share byte-identical copies of messages without a Message-ID.
ENRON_BOXES = ("mckay-b", "mckay-j", "mclaughlin-e", "mims-thurston-p")
ENRON_FILES = 763
ENRON_UNIQUE = 736


@pytest.fixture(scope="module")
def enron_sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    archive_path = shared_path("data", "enron", "enron-inbox.tar.gz")
    target = tmp_path_factory.mktemp("enron")
    with tarfile.open(archive_path, "r:gz") as archive:
        members = [m for m in archive if m.isfile() and m.name.split("/")[1] in ENRON_BOXES]
        archive.extractall(target, members=members, filter="data")
    return target / "maildir"


def make_message(subject: str, message_id: str | None, *, body: str = "hello", **headers: str) -> bytes:
    message = EmailMessage()
    message["From"] = headers.pop("From", "Ada <ada@example.com>")
    message["To"] = "bob@example.com"
    message["Subject"] = subject
    message["Date"] = headers.pop("Date", "Mon, 02 Nov 2026 10:00:00 +0100")
    if message_id:
        message["Message-ID"] = f"<{message_id}>"
    for name, value in headers.items():
        message[name.replace("_", "-")] = value
    message.set_content(body)
    return bytes(message)


def test_enron_mailboxes_import_with_exact_counts_and_rerun_stores_nothing(
    user: Any, enron_sample: Path, django_capture_on_commit_callbacks: Any
) -> None:
    account = create_local_account(owner=user, name="enron")
    announced: list[int] = []

    def receiver(sender: Any, account_id: int, message_ids: list[int], **kwargs: Any) -> None:
        announced.extend(message_ids)

    messages_stored.connect(receiver)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            first = import_path(account, enron_sample)
    finally:
        messages_stored.disconnect(receiver)
    assert first.messages == ENRON_FILES
    assert first.imported == ENRON_UNIQUE
    assert first.duplicates == ENRON_FILES - ENRON_UNIQUE
    assert Message.objects.filter(account=account).count() == ENRON_UNIQUE
    assert sorted(announced) == sorted(Message.objects.filter(account=account).values_list("pk", flat=True))
    second = import_path(account, enron_sample)
    assert second.imported == 0
    assert second.duplicates == ENRON_FILES
    assert Message.objects.filter(account=account).count() == ENRON_UNIQUE
    folders = set(MailFolder.objects.filter(account=account).values_list("name", flat=True))
    assert {f"{box}/inbox" for box in ENRON_BOXES} <= folders
    assert MailFolder.objects.get(account=account, name="mckay-j/inbox").role == "inbox"
    assert not Message.objects.filter(account=account, date__isnull=True).exists()
    assert Thread.objects.filter(account=account, message_count__gt=1).exists()


def test_mime_corpus_every_message_imports(user: Any) -> None:
    corpus = shared_path("data", "mime")
    account = create_local_account(owner=user, name="mime")
    summary = import_path(account, corpus)
    message_files = summary.files - 3  # README, LICENSE and one empty file are not mail
    stored = Message.objects.filter(account=account)
    assert summary.skipped == 3, summary.errors
    assert sorted(error.split(":")[0] for error in summary.errors) == ["LICENSE", "README", "sample_output_multipart"]
    # 423 message files (one is an mbox holding two), many shared by notmuch's corpora: 350 distinct
    # Message-IDs, but 374 distinct messages: 24 files reuse another message's Message-ID with different
    # content (mikel/mail's fixtures, notmuch's duplicate-id tests), and each is kept (apps/accounts/identity.py).
    assert message_files == 424 - 1
    assert (summary.messages, summary.imported, summary.duplicates) == (424, 374, 50)
    assert stored.count() == 374
    # A message whose parts could not all be parsed is still stored with its raw headers.
    assert not stored.filter(raw_headers="").exists()
    assert Attachment.objects.filter(message__account=account).count() > 20
    again = import_path(account, corpus)
    assert again.imported == 0


def test_mbox_maildir_eml_and_zip_layouts(user: Any, tmp_path: Path) -> None:
    account = create_local_account(owner=user, name="archive")
    box = mailbox.mbox(str(tmp_path / "Archive.mbox"))
    for index in range(3):
        box.add(make_message(f"mbox {index}", f"mbox-{index}@example.com"))
    box.flush()
    box.close()
    (tmp_path / "tree").mkdir()
    maildir = mailbox.Maildir(str(tmp_path / "tree" / "Work"), create=True)
    key = maildir.add(make_message("maildir read", "md-1@example.com"))
    msg = maildir.get_message(key)
    msg.set_subdir("cur")
    msg.set_flags("SF")
    maildir[key] = msg
    maildir.add(make_message("maildir new", "md-2@example.com"))
    (tmp_path / "tree" / "loose").mkdir()
    (tmp_path / "tree" / "loose" / "1").write_bytes(make_message("loose file", None))
    with zipfile.ZipFile(tmp_path / "upload.zip", "w") as archive:
        archive.writestr("a.eml", make_message("zipped eml", "zip-1@example.com"))
        archive.writestr("sub/b.mbox", (tmp_path / "Archive.mbox").read_bytes())
        archive.writestr("__MACOSX/._a.eml", b"junk")

    assert import_path(account, tmp_path / "Archive.mbox").imported == 3
    tree = import_path(account, tmp_path / "tree")
    assert tree.imported == 3
    flagged = Message.objects.get(account=account, subject="maildir read")
    assert flagged.seen and flagged.flagged and flagged.folder == "Work"
    assert not Message.objects.get(account=account, subject="maildir new").seen
    zipped = import_path(account, tmp_path / "upload.zip")
    assert zipped.imported == 1 and zipped.duplicates == 3
    assert Message.objects.filter(account=account).count() == 7


def test_threading_by_references_reply_subject_and_late_parent(user: Any, tmp_path: Path) -> None:
    account = create_local_account(owner=user, name="threads")
    root = make_message("Budget 2027", "root@example.com", Date="Mon, 02 Nov 2026 10:00:00 +0000")
    reply = make_message(
        "Re: Budget 2027",
        "reply@example.com",
        In_Reply_To="<root@example.com>",
        References="<root@example.com>",
        Date="Mon, 02 Nov 2026 11:00:00 +0000",
    )
    by_subject = make_message("RE: budget 2027", "subject@example.com", Date="Tue, 03 Nov 2026 09:00:00 +0000")
    orphan_reply = make_message(
        "Re: Offsite", "child@example.com", In_Reply_To="<parent@example.com>", Date="Wed, 04 Nov 2026 09:00:00 +0000"
    )
    unrelated = make_message("Re: Budget 2027", "old@example.com", Date="Fri, 01 Jan 2021 09:00:00 +0000")
    (tmp_path / "a").write_bytes(root)
    (tmp_path / "b").write_bytes(reply)
    (tmp_path / "c").write_bytes(by_subject)
    (tmp_path / "d").write_bytes(orphan_reply)
    (tmp_path / "e").write_bytes(unrelated)
    import_path(account, tmp_path)
    budget = Message.objects.get(message_id="root@example.com").thread
    assert budget is not None
    assert budget.subject == "Budget 2027"
    assert set(budget.messages.values_list("message_id", flat=True)) == {
        "root@example.com",
        "reply@example.com",
        "subject@example.com",
    }
    assert budget.message_count == 3
    assert Message.objects.get(message_id="old@example.com").thread != budget
    late = tmp_path / "late"
    late.mkdir()
    (late / "p").write_bytes(make_message("Offsite", "parent@example.com", Date="Tue, 03 Nov 2026 09:00:00 +0000"))
    import_path(account, late)
    parent = Message.objects.get(message_id="parent@example.com")
    assert parent.thread == Message.objects.get(message_id="child@example.com").thread
    assert parent.thread is not None and parent.thread.message_count == 2


def test_attachments_are_cached_at_import(user: Any, tmp_path: Path) -> None:
    from apps.accounts.actions import fetch_attachment_bytes

    message = EmailMessage()
    message["From"] = "a@example.com"
    message["Subject"] = "with file"
    message["Message-ID"] = "<att@example.com>"
    message.set_content("see attached")
    message.add_attachment(b"%PDF-1.4 fake but bytes", maintype="application", subtype="pdf", filename="Rechnung.pdf")
    (tmp_path / "m.eml").write_bytes(bytes(message))
    account = create_local_account(owner=user, name="files")
    import_path(account, tmp_path / "m.eml")
    attachment = Attachment.objects.get(message__account=account)
    assert attachment.filename == "Rechnung.pdf" and attachment.mime_type == "application/pdf"
    assert attachment.provider_ref == "2"
    assert fetch_attachment_bytes(attachment=attachment) == b"%PDF-1.4 fake but bytes"


def test_missing_path_and_busy_account_are_clear_errors(user: Any, tmp_path: Path) -> None:
    from apps.accounts.sync import acquire_sync_lock, release_sync_lock

    account = create_local_account(owner=user, name="x")
    with pytest.raises(MailImportError, match="does not exist"):
        import_path(account, tmp_path / "nope")
    token = acquire_sync_lock(account.pk)
    assert token
    (tmp_path / "m").write_bytes(make_message("s", "busy@example.com"))
    with pytest.raises(MailImportError, match="right now"):
        import_path(account, tmp_path / "m")
    release_sync_lock(account.pk, token)
    assert import_path(account, tmp_path / "m").imported == 1


@pytest.mark.django_db(transaction=True)
def test_import_mail_command_prints_a_summary(user: Any, enron_sample: Path) -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", "import_mail", str(enron_sample / "mckay-j"), "--account", "cli"],
        cwd=REPO_ROOT,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "imported 26, duplicates skipped 0, parse errors 0" in result.stdout
    assert "100%" in result.stderr  # the tqdm progress bar
    again = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "import_mail",
            str(enron_sample / "mckay-j"),
            "--account",
            "cli",
            "--no-progress",
        ],
        cwd=REPO_ROOT,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "imported 0, duplicates skipped 26" in again.stdout
