"""Mail attachments into the library inbox: per-account and per-filter switch, size/type limits, provenance, once
only."""

from __future__ import annotations

from email.message import EmailMessage
from typing import Any

from django.urls import reverse

from apps.accounts.actions import create_local_account
from apps.accounts.models import MailAccount
from apps.accounts.providers.base import RemoteMessage
from apps.accounts.store import store_remote_messages
from apps.organization import actions, intake
from apps.organization.models import FileSource, LibraryFile, SavedAttachment, Suggestion
from apps.organization.roots import library_base
from apps.organization.tasks import scan_libraries_task


def _mail(number: int, attachments: list[tuple[str, bytes]], sender: str = "QNB Bank <ekstre@qnb.example>") -> bytes:
    message = EmailMessage()
    message["From"] = sender
    message["To"] = "owner@example.com"
    message["Subject"] = f"Your statement {number}"
    message["Date"] = "Tue, 07 Apr 2026 10:00:00 +0300"
    message["Message-ID"] = f"<statement-{number}@qnb.example>"
    message.set_content("Your monthly statement is attached.")
    for name, payload in attachments:
        message.add_attachment(payload, maintype="application", subtype="octet-stream", filename=name)
    return message.as_bytes()


def _store(
    account: MailAccount, number: int, attachments: list[tuple[str, bytes]], capture: Any, sender: str = ""
) -> None:
    raw = _mail(number, attachments, sender) if sender else _mail(number, attachments)
    with capture(execute=True):
        store_remote_messages(
            account=account,
            messages=[RemoteMessage(provider_id=f"m{number}", raw=raw, folder="INBOX")],
            keep_payloads=True,
        )


def test_attachments_are_saved_with_provenance_within_limits(
    user: Any, tmp_path: Any, django_capture_on_commit_callbacks: Any
) -> None:
    actions.update_settings(owner=user, changes={"root": str(library_base(user.pk) / "lib")})
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


def test_a_filter_with_the_switch_saves_the_attachments_of_the_mail_it_matches(
    user: Any,
    tmp_path: Any,
    logged_in_client: Any,
    director: Any,
    add_filter: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    actions.update_settings(owner=user, changes={"root": str(library_base(user.pk) / "lib")})
    account = create_local_account(owner=user, name="Mail")
    intake.set_intake(account=account, enabled=False, allowed_suffixes=["pdf", "txt"])
    bank = add_filter(director("Bank"), "from", r"qnb\.example")
    # Switched on from the filter's edit page in Settings → Filters.
    page = logged_in_client.get(reverse("settings:filter", args=[bank.pk])).content.decode()
    assert "Save attachments to the library inbox" in page
    response = logged_in_client.post(
        reverse("settings:filter", args=[bank.pk]),
        {
            "director": bank.director_id,
            "field": "from",
            "regex": r"qnb\.example",
            "enabled": "on",
            "save_attachments": "on",
        },
    )
    assert response.status_code == 302
    bank.refresh_from_db()
    assert bank.save_attachments and bank.enabled

    # The account switch is off: only mail the filter matches has its attachments saved, within the limits.
    _store(
        account, 1, [("statement.pdf", b"%PDF-1.4 statement"), ("tool.exe", b"MZ")], django_capture_on_commit_callbacks
    )
    _store(account, 2, [("menu.txt", b"lunch menu")], django_capture_on_commit_callbacks, sender="cafe@lunch.example")
    saved = LibraryFile.objects.get()
    assert saved.path == "inbox/statement.pdf" and saved.source == FileSource.ATTACHMENT
    assert saved.provenance["sender"] == "ekstre@qnb.example" and saved.provenance["subject"] == "Your statement 1"
    outcomes = dict(SavedAttachment.objects.values_list("attachment__filename", "outcome"))
    assert outcomes["statement.pdf"] == "saved" and "not in .pdf, .txt" in outcomes["tool.exe"]
    assert "menu.txt" not in outcomes

    # The sweep (a lost task's safety net) saves nothing more and records the unmatched mail as not covered.
    scan_libraries_task()
    assert LibraryFile.objects.count() == 1
    outcomes = dict(SavedAttachment.objects.values_list("attachment__filename", "outcome"))
    assert outcomes["menu.txt"] == "skipped: no filter with the switch matched"

    # Switched off (through the filters API, which shows and takes the switch too): nothing saved any more.
    assert logged_in_client.get(f"/api/filters/{bank.pk}").json()["saveAttachments"] is True
    response = logged_in_client.put(
        f"/api/filters/{bank.pk}", {"saveAttachments": False}, content_type="application/json"
    )
    assert response.status_code == 200 and response.json()["saveAttachments"] is False
    _store(account, 3, [("april.pdf", b"%PDF-1.4 april")], django_capture_on_commit_callbacks)
    assert not LibraryFile.objects.filter(path="inbox/april.pdf").exists()
