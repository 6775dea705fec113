"""Mail attachments into the library inbox: per-account switch, size/type limits, provenance, once only."""

from __future__ import annotations

from email.message import EmailMessage
from typing import Any

from apps.accounts.actions import create_local_account
from apps.accounts.models import MailAccount
from apps.accounts.providers.base import RemoteMessage
from apps.accounts.store import store_remote_messages
from apps.organization import actions, intake
from apps.organization.models import FileSource, LibraryFile, SavedAttachment, Suggestion
from apps.organization.tasks import scan_libraries_task


def _mail(number: int, attachments: list[tuple[str, bytes]]) -> bytes:
    message = EmailMessage()
    message["From"] = "QNB Bank <ekstre@qnb.example>"
    message["To"] = "owner@example.com"
    message["Subject"] = f"Your statement {number}"
    message["Date"] = "Tue, 07 Apr 2026 10:00:00 +0300"
    message["Message-ID"] = f"<statement-{number}@qnb.example>"
    message.set_content("Your monthly statement is attached.")
    for name, payload in attachments:
        message.add_attachment(payload, maintype="application", subtype="octet-stream", filename=name)
    return message.as_bytes()


def _store(account: MailAccount, number: int, attachments: list[tuple[str, bytes]], capture: Any) -> None:
    with capture(execute=True):
        store_remote_messages(
            account=account,
            messages=[RemoteMessage(provider_id=f"m{number}", raw=_mail(number, attachments), folder="INBOX")],
            keep_payloads=True,
        )


def test_attachments_are_saved_with_provenance_within_limits(
    user: Any, tmp_path: Any, django_capture_on_commit_callbacks: Any
) -> None:
    actions.update_settings(owner=user, changes={"root": str(tmp_path / "lib")})
    account = create_local_account(owner=user, name="Mail")
    # Switch off: nothing is saved.
    _store(account, 1, [("before.txt", b"stored before the switch")], django_capture_on_commit_callbacks)
    assert not LibraryFile.objects.exists()

    intake.set_intake(account=account, enabled=True, max_bytes=1000, allowed_suffixes=["txt", ".pdf"])
    _store(
        account,
        2,
        [("statement.txt", b"QNB statement, closing balance."), ("big.txt", b"x" * 5000), ("run.exe", b"MZ")],
        django_capture_on_commit_callbacks,
    )
    saved = LibraryFile.objects.get()
    assert saved.path == "inbox/statement.txt" and saved.source == FileSource.ATTACHMENT
    assert saved.provenance["sender"] == "ekstre@qnb.example"
    assert saved.provenance["subject"] == "Your statement 2"
    assert saved.provenance["date"].startswith("2026-04-07")
    outcomes = dict(SavedAttachment.objects.values_list("attachment__filename", "outcome"))
    assert outcomes["statement.txt"] == "saved"
    assert "over the 1000-byte limit" in outcomes["big.txt"]
    assert "not in .pdf, .txt" in outcomes["run.exe"]
    assert Suggestion.objects.filter(file=saved).count() == 1

    # The scheduled sweep finds nothing left to do: each attachment is handled once.
    scan_libraries_task()
    assert LibraryFile.objects.filter(path__startswith="inbox/statement").count() == 1
    assert "before.txt" not in outcomes
