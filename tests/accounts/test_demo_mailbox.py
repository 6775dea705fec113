"""The generated demo mailbox: exact counts, threads, the Turkish and German documents, valid PDFs, re-runs."""

from __future__ import annotations

import datetime as dt
import io
import re
from typing import Any

import pytest

from apps.accounts.actions import fetch_attachment_bytes
from apps.accounts.demo_mailbox.bills import GERMAN_INVOICE_SUBJECT, TURKISH_STATEMENT_SUBJECT
from apps.accounts.demo_mailbox.generator import build_demo_messages
from apps.accounts.demo_mailbox.importing import import_demo_mailbox
from apps.accounts.demo_mailbox.model import DEMO_ACCOUNT_NAME
from apps.accounts.demo_mailbox.pdf import build_pdf
from apps.accounts.demo_mailbox.threads import MEETING_THREAD_SIZE, PROPOSAL_THREAD_SIZE, SUPPORT_THREAD_SIZE
from apps.accounts.models import Attachment, MailAccount, MailFolder, Message, Provider, Thread

pytestmark = pytest.mark.django_db

EXPECTED_MESSAGES = 200


@pytest.fixture
def demo(user: Any) -> tuple[MailAccount, str]:
    out = io.StringIO()
    import_demo_mailbox(owner=user, stdout=out)
    return MailAccount.objects.get(owner=user, name=DEMO_ACCOUNT_NAME), out.getvalue()


# --- a tiny PDF reader: enough to prove the files are well-formed and their text is extractable ----


def pdf_objects(data: bytes) -> dict[int, int]:
    """Object number → byte offset, read from the xref table that startxref points at."""
    startxref = re.search(rb"startxref\s+(\d+)\s+%%EOF\s*$", data)
    assert startxref, "no startxref/%%EOF at the end"
    xref_at = int(startxref.group(1))
    assert data[xref_at : xref_at + 4] == b"xref"
    header = re.match(rb"xref\s+0 (\d+)\s*\n", data[xref_at:])
    assert header
    size = int(header.group(1))
    table = data[xref_at + header.end() :]
    offsets: dict[int, int] = {}
    for number in range(size):
        entry = table[number * 20 : (number + 1) * 20]
        assert len(entry) == 20 and entry.endswith((b" \n", b"\r\n")), f"xref entry {number} is not 20 bytes"
        offset, _generation, kind = entry[:18].split()
        if kind == b"n":
            offsets[number] = int(offset)
    trailer = data[xref_at + header.end() + size * 20 :]
    assert trailer.startswith(b"trailer")
    assert f"/Size {size}".encode() in trailer
    return offsets


def _unescape_pdf_string(raw: bytes) -> str:
    out = bytearray()
    index = 0
    while index < len(raw):
        byte = raw[index]
        if byte == 0x5C:  # backslash
            nxt = raw[index + 1 : index + 4]
            octal = re.match(rb"[0-7]{1,3}", nxt)
            if octal:
                out.append(int(octal.group(0), 8))
                index += 1 + len(octal.group(0))
                continue
            out.append(raw[index + 1])
            index += 2
            continue
        out.append(byte)
        index += 1
    return out.decode("cp1252")


def pdf_text(data: bytes) -> str:
    """Every Tj string of every content stream, one per line (what a text extractor reads)."""
    offsets = pdf_objects(data)
    lines: list[str] = []
    for number, offset in sorted(offsets.items()):
        assert data[offset:].startswith(f"{number} 0 obj".encode()), f"xref offset of object {number} is wrong"
        body = data[offset:]
        match = re.match(rb"\d+ 0 obj\s*<< /Length (\d+) >>\nstream\n", body)
        if not match:
            continue
        length = int(match.group(1))
        stream = body[match.end() : match.end() + length]
        assert body[match.end() + length :].startswith(b"\nendstream"), "stream /Length is wrong"
        lines += [_unescape_pdf_string(s) for s in re.findall(rb"\(((?:\\.|[^\\)])*)\) Tj", stream)]
    return "\n".join(lines)


# --- tests ----------------------------------------------------------------------------------------


def test_demo_import_stores_the_exact_message_count_in_three_folders(demo: tuple[MailAccount, str]) -> None:
    account, output = demo
    assert account.provider == Provider.LOCAL
    assert Message.objects.filter(account=account).count() == EXPECTED_MESSAGES
    assert f"{EXPECTED_MESSAGES} messages imported" in output
    assert "0 with parse errors" in output
    assert not Message.objects.filter(account=account).exclude(parse_error="").exists()
    folders = dict(MailFolder.objects.filter(account=account).values_list("name", "role"))
    assert folders == {"INBOX": "inbox", "Sent": "", "Newsletters": ""}
    by_folder = {
        name: Message.objects.filter(account=account, folder=name).count() for name in ("INBOX", "Sent", "Newsletters")
    }
    assert sum(by_folder.values()) == EXPECTED_MESSAGES
    assert by_folder["Newsletters"] == 24
    # Some mail is waiting: unread and flagged messages exist, but most has been read.
    unread = Message.objects.filter(account=account, seen=False).count()
    assert 5 <= unread <= 40
    assert Message.objects.filter(account=account, flagged=True).count() >= 3
    dates = [date for date in Message.objects.filter(account=account).values_list("date", flat=True) if date]
    assert len(dates) == EXPECTED_MESSAGES
    assert (max(dates) - min(dates)).days >= 100


def test_proposal_thread_groups_replies_and_shows_who_never_answered(demo: tuple[MailAccount, str]) -> None:
    account, _ = demo
    thread = Thread.objects.get(account=account, subject="Proposal: Nordlicht customer portal redesign (Q1 2027)")
    messages = list(thread.messages.order_by("date"))
    assert thread.message_count == PROPOSAL_THREAD_SIZE == len(messages) == 6
    first = messages[0]
    assert first.folder == "Sent" and first.in_reply_to == ""
    for reply in messages[1:]:
        assert first.message_id in reply.references.split()
        assert reply.in_reply_to
    recipients = {person["address"] for person in first.to + first.cc}
    repliers = {message.from_address for message in messages[1:]} - {first.from_address}
    silent = recipients - repliers
    assert silent == {"priya.raman@nordlicht-retail.example", "tom.becker@nordlicht-retail.example"}
    assert first.attachments.get().mime_type == "application/pdf"


def test_meeting_thread_carries_an_ics_invite_and_support_thread_is_complete(demo: tuple[MailAccount, str]) -> None:
    account, _ = demo
    meeting = Thread.objects.get(account=account, subject="Kick-off meeting: which slot works?")
    assert meeting.message_count == MEETING_THREAD_SIZE
    invite = Attachment.objects.get(message__thread=meeting)
    assert invite.mime_type == "text/calendar"
    assert invite.filename.endswith(".ics")
    ics = fetch_attachment_bytes(attachment=invite).decode()
    assert "BEGIN:VCALENDAR" in ics and "METHOD:REQUEST" in ics and "DTSTART:20261203T083000Z" in ics

    support = Thread.objects.get(account=account, subject__startswith="Complaint: standing desk delivered damaged")
    assert support.message_count == SUPPORT_THREAD_SIZE
    last = support.messages.order_by("-date").first()
    assert last is not None and last.flagged and not last.seen


def test_turkish_statement_is_findable_with_due_date_amount_and_pdf(demo: tuple[MailAccount, str]) -> None:
    account, _ = demo
    statement = Message.objects.get(account=account, subject=TURKISH_STATEMENT_SUBJECT)
    assert "Son Ödeme Tarihi: 15.12.2026" in statement.body_text
    assert "Dönem Borcu: 12.345,67 TL" in statement.body_text
    assert statement.from_address == "ekstre@marmarabank.example"
    assert statement.has_attachments and statement.flagged and not statement.seen
    assert Message.objects.filter(account=account, subject__icontains="Hesap Özeti").count() == 2
    pdf = statement.attachments.get()
    assert pdf.mime_type == "application/pdf"
    data = fetch_attachment_bytes(attachment=pdf)
    assert data.startswith(b"%PDF-")
    text = pdf_text(data)
    # WinAnsiEncoding keeps Ö; the Turkish letters it lacks (dotless i, s/g with marks) are transliterated.
    assert "Son Ödeme Tarihi: 15.12.2026" in text
    assert "Dönem Borcu: 12.345,67 TL" in text
    assert "Kredi Karti Hesap Özeti" in text


def test_german_invoice_has_due_date_amount_and_pdf(demo: tuple[MailAccount, str]) -> None:
    account, _ = demo
    invoice = Message.objects.get(account=account, subject=GERMAN_INVOICE_SUBJECT)
    assert "Rechnung Nr. 2026-1187" in invoice.body_text
    assert "Zahlbar bis 05.12.2026" in invoice.body_text
    assert "1.428,00 EUR" in invoice.body_text
    pdf = invoice.attachments.get()
    assert pdf.mime_type == "application/pdf" and pdf.filename == "Rechnung_2026-1187.pdf"
    text = pdf_text(fetch_attachment_bytes(attachment=pdf))
    assert "Rechnung Nr. 2026-1187" in text
    assert "Zahlbar bis 05.12.2026 ohne Abzug." in text
    assert "Rechnungsbetrag:" in text and "1.428,00 EUR" in text


def test_every_pdf_is_well_formed(demo: tuple[MailAccount, str]) -> None:
    account, _ = demo
    pdfs = list(Attachment.objects.filter(message__account=account, mime_type="application/pdf"))
    assert len(pdfs) >= 5
    for attachment in pdfs:
        data = fetch_attachment_bytes(attachment=attachment)
        assert attachment.size == len(data)
        assert data.startswith(b"%PDF-1.4\n")
        assert b"\nxref\n" in data and b"\ntrailer\n" in data and data.rstrip().endswith(b"%%EOF")
        assert pdf_text(data).strip()


def test_newsletters_have_html_with_a_plain_alternative(demo: tuple[MailAccount, str]) -> None:
    account, _ = demo
    newsletters = Message.objects.filter(account=account, folder="Newsletters")
    assert newsletters.count() == 24
    for message in newsletters:
        assert message.body_html.strip()
        assert message.body_text.strip()
        assert "<script" not in message.body_html.lower()


def test_second_import_adds_nothing(demo: tuple[MailAccount, str], user: Any) -> None:
    account, _ = demo
    threads = Thread.objects.filter(account=account).count()
    out = io.StringIO()
    import_demo_mailbox(owner=user, stdout=out)
    assert "0 messages imported" in out.getvalue()
    assert f"{EXPECTED_MESSAGES} already present" in out.getvalue()
    assert MailAccount.objects.filter(owner=user, name=DEMO_ACCOUNT_NAME).count() == 1
    assert Message.objects.filter(account=account).count() == EXPECTED_MESSAGES
    assert Thread.objects.filter(account=account).count() == threads


def test_generation_is_deterministic_and_ids_are_unique() -> None:
    first = [mail.to_email().as_bytes() for mail in build_demo_messages()]
    second = [mail.to_email().as_bytes() for mail in build_demo_messages()]
    assert first == second
    assert len(first) == EXPECTED_MESSAGES
    ids = [mail.message_id for mail in build_demo_messages()]
    assert len(set(ids)) == len(ids)


def test_build_pdf_escapes_and_paginates() -> None:
    lines = [f"Line {n} (with parentheses) and a back\\slash" for n in range(120)]
    data = build_pdf(title="Test", lines=lines, created=dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    assert b"/Count 3" in data
    text = pdf_text(data)
    assert "Line 0 (with parentheses) and a back\\slash" in text
    assert "Line 119 (with parentheses) and a back\\slash" in text
