# ruff: noqa: RUF001  (Turkish, German and typographic characters are the point of the demo content)
"""A demo mailbox generated in code: ~200 realistic messages for a first look at the app.

The mailbox belongs to Deniz Kaya, a freelance product consultant in Berlin. Everything is fictional
(all domains are under `.example`) and deterministic: the same seed and anchor produce byte-identical
messages, and stable Message-IDs make a second import store nothing.

The messages are written as .eml files into a temporary zip (one directory per folder, in delivery
order) and imported through the ordinary importer, so the demo exercises the same parse → dedupe →
thread → store path as real mail.
"""

from __future__ import annotations

import datetime as dt
import random
import tempfile
import zipfile
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import format_datetime, formataddr
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

DEMO_ACCOUNT_NAME = "Demo"
DEMO_MESSAGE_COUNT = 200
DEMO_SEED = 26_1120
# Fixed so the content (due dates, meeting days) stays coherent and the bytes deterministic.
DEMO_ANCHOR = dt.datetime(2026, 11, 20, 16, 30, tzinfo=dt.UTC)
DEMO_DOMAIN = "demo.mailagent.example"
PROPOSAL_THREAD_SIZE = 6
MEETING_THREAD_SIZE = 5
SUPPORT_THREAD_SIZE = 6
TURKISH_STATEMENT_SUBJECT = "Kredi Kartı Hesap Özeti - Kasım 2026"
GERMAN_INVOICE_SUBJECT = "Rechnung Nr. 2026-1187 – Schreiber & Partner IT-Dienstleistungen"

try:
    BERLIN: dt.tzinfo = ZoneInfo("Europe/Berlin")
except ZoneInfoNotFoundError:  # no tz database: a fixed CET offset is close enough for a demo
    BERLIN = dt.timezone(dt.timedelta(hours=1))


# --- minimal PDF writer ---------------------------------------------------------------------------

# Characters WinAnsiEncoding (cp1252) lacks; everything else keeps its accent in the PDF text.
_PDF_TRANSLITERATION = str.maketrans(
    {"ı": "i", "İ": "I", "ş": "s", "Ş": "S", "ğ": "g", "Ğ": "G", "–": "-", "—": "-", "€": "EUR"}
)
PDF_LINES_PER_PAGE = 48


def _pdf_string(text: str) -> bytes:
    """A PDF literal string in WinAnsiEncoding, with non-ASCII bytes as octal escapes."""
    encoded = text.translate(_PDF_TRANSLITERATION).encode("cp1252", errors="replace")
    out = bytearray(b"(")
    for byte in encoded:
        if byte in b"()\\":
            out += b"\\" + bytes([byte])
        elif 32 <= byte < 127:
            out.append(byte)
        else:
            out += f"\\{byte:03o}".encode("ascii")
    out += b")"
    return bytes(out)


def build_pdf(*, title: str, lines: list[str], created: dt.datetime) -> bytes:
    """A small but valid PDF 1.4: Helvetica text pages, a correct xref table and trailer.

    Text is drawn line by line with Tj operators so any text extractor recovers the lines in order.
    """
    pages = [lines[i : i + PDF_LINES_PER_PAGE] for i in range(0, len(lines), PDF_LINES_PER_PAGE)] or [[]]
    # Object numbers: 1 catalog, 2 pages, 3 Helvetica, 4 Helvetica-Bold, 5 info, then page/content pairs.
    objects: dict[int, bytes] = {}
    page_ids = [6 + 2 * index for index in range(len(pages))]
    kids = b" ".join(f"{pid} 0 R".encode() for pid in page_ids)
    objects[1] = b"<< /Type /Catalog /Pages 2 0 R >>"
    objects[2] = b"<< /Type /Pages /Kids [" + kids + b"] /Count " + str(len(pages)).encode() + b" >>"
    objects[3] = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
    objects[4] = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>"
    stamp = created.astimezone(dt.UTC).strftime("D:%Y%m%d%H%M%SZ")
    objects[5] = (
        b"<< /Title "
        + _pdf_string(title)
        + b" /Producer (mailagent demo mailbox) /CreationDate ("
        + stamp.encode()
        + b") >>"
    )
    for number, (page_id, page_lines) in enumerate(zip(page_ids, pages, strict=True), start=1):
        content = bytearray()
        content += b"BT /F2 15 Tf 56 790 Td " + _pdf_string(title) + b" Tj ET\n"
        content += b"BT /F1 10 Tf 56 760 Td 14 TL\n"
        for line in page_lines:
            content += _pdf_string(line) + b" Tj T*\n"
        content += b"ET\n"
        content += b"BT /F1 8 Tf 56 40 Td " + _pdf_string(f"Seite / Page {number} / {len(pages)}") + b" Tj ET\n"
        stream = bytes(content)
        objects[page_id] = (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] "
            b"/Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> /Contents " + f"{page_id + 1} 0 R".encode() + b" >>"
        )
        objects[page_id + 1] = b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream"
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets: dict[int, int] = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += f"{number} 0 obj\n".encode() + objects[number] + b"\nendobj\n"
    size = max(objects) + 1
    xref_at = len(out)
    out += f"xref\n0 {size}\n".encode()
    out += b"0000000000 65535 f \n"
    for number in range(1, size):
        out += f"{offsets[number]:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {size} /Root 1 0 R /Info 5 0 R >>\nstartxref\n{xref_at}\n%%EOF\n".encode()
    return bytes(out)


# --- message model --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Person:
    name: str
    address: str

    def header(self) -> str:
        return formataddr((self.name, self.address))


@dataclass(slots=True)
class DemoAttachment:
    filename: str
    content: bytes | str
    maintype: str
    subtype: str
    params: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class DemoMail:
    key: str
    folder: str
    sender: Person
    to: list[Person]
    subject: str
    when: dt.datetime
    text: str
    cc: list[Person] = field(default_factory=list)
    html: str | None = None
    attachments: list[DemoAttachment] = field(default_factory=list)
    parent: DemoMail | None = None
    seen: bool = True
    flagged: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    # Mail "from outside" keeps its sender's own Message-ID domain.
    own_message_id: str = ""

    @property
    def message_id(self) -> str:
        return self.own_message_id or f"{self.key}@{DEMO_DOMAIN}"

    def references(self) -> list[str]:
        if self.parent is None:
            return []
        return [*self.parent.references(), self.parent.message_id]

    def to_email(self) -> EmailMessage:
        message = EmailMessage()
        message["From"] = self.sender.header()
        message["To"] = ", ".join(person.header() for person in self.to)
        if self.cc:
            message["Cc"] = ", ".join(person.header() for person in self.cc)
        message["Subject"] = self.subject
        message["Date"] = format_datetime(self.when)
        message["Message-ID"] = f"<{self.message_id}>"
        references = self.references()
        if references:
            message["In-Reply-To"] = f"<{references[-1]}>"
            message["References"] = " ".join(f"<{ref}>" for ref in references)
        for name, value in self.headers.items():
            message[name] = value
        # mbox flags, as mail clients write them: R = read, F = flagged.
        message["Status"] = "RO" if self.seen else "O"
        if self.flagged:
            message["X-Status"] = "F"
        message.set_content(self.text)
        if self.html is not None:
            message.add_alternative(self.html, subtype="html")
        for attachment in self.attachments:
            if isinstance(attachment.content, str):
                message.add_attachment(
                    attachment.content,
                    subtype=attachment.subtype,
                    filename=attachment.filename,
                    params=attachment.params,
                )
            else:
                message.add_attachment(
                    attachment.content,
                    maintype=attachment.maintype,
                    subtype=attachment.subtype,
                    filename=attachment.filename,
                    params=attachment.params,
                )
        # Fixed MIME boundaries (the library picks random ones) keep the bytes reproducible.
        for index, part in enumerate(message.walk()):
            if part.is_multipart():
                part.set_boundary(f"=_mailagent-demo-{self.key}-{index}")
        return message


def pdf_attachment(filename: str, *, title: str, lines: list[str], created: dt.datetime) -> DemoAttachment:
    return DemoAttachment(
        filename=filename,
        content=build_pdf(title=title, lines=lines, created=created),
        maintype="application",
        subtype="pdf",
    )


# --- people ---------------------------------------------------------------------------------------

ME = Person("Deniz Kaya", "deniz@kaya-consulting.example")
AMIRA = Person("Amira Haddad", "amira@kaya-consulting.example")
LENA = Person("Lena Hoffmann", "lena.hoffmann@nordlicht-retail.example")
PRIYA = Person("Priya Raman", "priya.raman@nordlicht-retail.example")
TOM = Person("Tom Becker", "tom.becker@nordlicht-retail.example")
MARCO = Person("Marco Bianchi", "marco@bianchi-ux.example")
SOFIA = Person("Sofia Lindqvist", "sofia@lindqvist-data.example")
JONAS = Person("Jonas Weber", "jonas.weber@nordlicht-retail.example")
ELIF = Person("Elif Kaya", "elif.kaya@mailbox.example")
BEN = Person("Ben Okafor", "ben.okafor@mailbox.example")
ERGOFORM = Person("Ergoform Kundenservice", "support@ergoform-moebel.example")
ERGOFORM_AGENT = Person("Jana Vogt (Ergoform)", "support@ergoform-moebel.example")
ERGOFORM_LEAD = Person("Mehmet Arslan (Ergoform)", "m.arslan@ergoform-moebel.example")
BANK = Person("Marmara Bank Kart Hizmetleri", "ekstre@marmarabank.example")
SCHREIBER = Person("Schreiber & Partner Buchhaltung", "buchhaltung@schreiber-it.example")
WEEKLY_COMMIT = Person("The Weekly Commit", "hello@weeklycommit.example")
KIEZ = Person("Kiez Food Co-op", "news@kiezfood.example")
DESIGN_NOTES = Person("Design Notes", "notes@designnotes.example")
CLOUDNEST = Person("Cloudnest Billing", "billing@cloudnest.example")
ROASTERY = Person("Roastery Rhein", "orders@roastery-rhein.example")
TELVIO = Person("Telvio Mobile", "rechnung@telvio.example")
SEITENWEISE = Person("Seitenweise Books", "shop@seitenweise.example")
CITYRIDE = Person("CityRide", "receipts@cityride.example")
SKYBRIDGE = Person("SkyBridge Airlines", "booking@skybridge-air.example")
PERA = Person("Pera Garden Hotel", "reservations@peragarden.example")
RAIL = Person("RailConnect", "tickets@railconnect.example")
CODEHARBOR = Person("CodeHarbor", "notifications@codeharbor.example")
CALENDAR = Person("Kaya Consulting Calendar", "calendar@kaya-consulting.example")
PARCEL = Person("ParcelPoint", "tracking@parcelpoint.example")
MEETUP = Person("Berlin Product Circle", "hello@productcircle.example")

INBOX = "INBOX"
SENT = "Sent"
NEWSLETTERS = "Newsletters"


class _Builder:
    def __init__(self, anchor: dt.datetime, rng: random.Random) -> None:
        self.anchor = anchor.astimezone(BERLIN)
        self.rng = rng
        self.mails: list[DemoMail] = []

    def at(self, days_ago: float, hour: int | None = None, minute: int | None = None) -> dt.datetime:
        """A local Berlin time `days_ago` days before the anchor, never after it."""
        day = self.anchor - dt.timedelta(days=days_ago)
        if hour is not None:
            day = day.replace(hour=hour, minute=minute if minute is not None else self.rng.randrange(60), second=0)
        else:
            day = day.replace(second=0)
        # Re-localise so the UTC offset matches the date (summer vs. winter time).
        local = day.replace(tzinfo=None).replace(tzinfo=BERLIN)
        return min(local, self.anchor)

    def add(self, mail: DemoMail) -> DemoMail:
        self.mails.append(mail)
        return mail


# --- the story threads ----------------------------------------------------------------------------


def _proposal_thread(b: _Builder) -> None:
    """A proposal sent to five people: three answer, Priya and Tom never do, a reminder follows."""
    subject = "Proposal: Nordlicht customer portal redesign (Q1 2027)"
    proposal_pdf = pdf_attachment(
        "nordlicht-portal-proposal.pdf",
        title="Nordlicht Retail - Customer Portal Redesign",
        lines=[
            "Proposal prepared by Deniz Kaya, Kaya Consulting",
            "",
            "1. Goals",
            "   - Cut the number of support tickets about order status by 30 %",
            "   - Self-service returns in three steps instead of seven",
            "   - One account page for online and in-store purchases",
            "",
            "2. Phases",
            "   Discovery (3 weeks): interviews with 12 customers and 6 store staff",
            "   Design (5 weeks): prototypes, two rounds of usability testing",
            "   Build support (8 weeks): design QA alongside the Nordlicht engineering team",
            "",
            "3. Budget",
            "   Fixed fee: 48.500,00 EUR (excl. VAT), invoiced per phase",
            "",
            "4. Decisions needed by 4 December 2026",
            "   - Engineering capacity for the build phase (Priya)",
            "   - Analytics access for the baseline metrics (Sofia)",
            "   - Sign-off on the budget (Tom)",
        ],
        created=b.at(26, 9, 5),
    )
    first = b.add(
        DemoMail(
            key="proposal-portal-001",
            folder=SENT,
            sender=ME,
            to=[LENA, PRIYA, MARCO],
            cc=[TOM, SOFIA],
            subject=subject,
            when=b.at(26, 9, 12),
            text=(
                "Hi all,\n\n"
                "attached is the proposal for the customer portal redesign we sketched in October.\n"
                "The short version: three phases (discovery, design, build support), 16 weeks in total,\n"
                "starting in the second week of January.\n\n"
                "I need three things before 4 December:\n"
                "  - Priya: can your team give us two engineers for the build phase?\n"
                "  - Sofia: read access to the order-status analytics so we can measure a baseline.\n"
                "  - Tom: a yes/no on the budget.\n\n"
                "Lena and Marco, comments on scope are very welcome.\n\n"
                "Best,\nDeniz\n\n-- \nDeniz Kaya · Kaya Consulting · Berlin"
            ),
            attachments=[proposal_pdf],
        )
    )
    lena = b.add(
        DemoMail(
            key="proposal-portal-002",
            folder=INBOX,
            sender=LENA,
            to=[ME],
            cc=[PRIYA, MARCO, TOM, SOFIA],
            subject=f"Re: {subject}",
            when=b.at(25, 10, 40),
            text=(
                "Hi Deniz,\n\n"
                "thanks, this reads well. Two questions:\n"
                "1) Could discovery include the click-and-collect flow? Stores complain about it a lot.\n"
                "2) Do the 12 interviews include business customers, or only consumers?\n\n"
                "Happy with the timeline otherwise.\n\nLena"
            ),
            parent=first,
        )
    )
    reply = b.add(
        DemoMail(
            key="proposal-portal-003",
            folder=SENT,
            sender=ME,
            to=[LENA],
            cc=[PRIYA, MARCO, TOM, SOFIA],
            subject=f"Re: {subject}",
            when=b.at(25, 14, 3),
            text=(
                "Hi Lena,\n\n"
                "1) Yes, click-and-collect fits into discovery without extra cost; I'll add it to the scope.\n"
                "2) Consumers only so far. I'd suggest 9 consumers + 3 business customers. OK for you?\n\n"
                "Deniz"
            ),
            parent=lena,
        )
    )
    b.add(
        DemoMail(
            key="proposal-portal-004",
            folder=INBOX,
            sender=MARCO,
            to=[ME],
            cc=[LENA],
            subject=f"Re: {subject}",
            when=b.at(24, 8, 55),
            text=(
                "Morning!\n\n"
                "Looks good from the design side. Five weeks for design is tight if we do two test rounds;\n"
                "I'd plan the second round as remote, unmoderated tests to save a week.\n\n"
                "Marco"
            ),
            parent=reply,
        )
    )
    b.add(
        DemoMail(
            key="proposal-portal-005",
            folder=INBOX,
            sender=SOFIA,
            to=[ME],
            subject=f"Re: {subject}",
            when=b.at(19, 17, 20),
            text=(
                "Hi Deniz, sorry for the slow answer, I was at a conference.\n"
                "Analytics access is no problem: I've requested a read-only role for you, it should arrive\n"
                "this week. The order-status dashboard is the one called 'OPS – Fulfilment'.\n\n"
                "Sofia"
            ),
            parent=first,
        )
    )
    b.add(
        DemoMail(
            key="proposal-portal-006",
            folder=SENT,
            sender=ME,
            to=[PRIYA, TOM],
            cc=[LENA],
            subject=f"Re: {subject}",
            when=b.at(5, 9, 30),
            text=(
                "Hi Priya, hi Tom,\n\n"
                "a gentle reminder about the portal proposal: I still need the engineering capacity answer\n"
                "(Priya) and the budget decision (Tom) by 4 December to keep the January start.\n"
                "Lena, Marco and Sofia have already replied.\n\n"
                "Thanks!\nDeniz"
            ),
            parent=first,
        )
    )


def _ics_invite(*, uid: str, start: dt.datetime, end: dt.datetime, stamp: dt.datetime) -> str:
    def utc(value: dt.datetime) -> str:
        return value.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ")

    lines = [
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        "PRODID:-//mailagent//demo mailbox//EN",
        "METHOD:REQUEST",
        "CALSCALE:GREGORIAN",
        "BEGIN:VEVENT",
        f"UID:{uid}",
        f"DTSTAMP:{utc(stamp)}",
        f"DTSTART:{utc(start)}",
        f"DTEND:{utc(end)}",
        "SUMMARY:Portal redesign kick-off",
        "LOCATION:Nordlicht HQ\\, room Fjord (3rd floor) / video link in the description",
        "DESCRIPTION:Agenda: goals and success metrics\\, interview plan\\, tooling.\\n"
        "Video: https://meet.kaya-consulting.example/portal-kickoff",
        f"ORGANIZER;CN={ME.name}:mailto:{ME.address}",
        f"ATTENDEE;CN={LENA.name};ROLE=REQ-PARTICIPANT;PARTSTAT=NEEDS-ACTION;RSVP=TRUE:mailto:{LENA.address}",
        f"ATTENDEE;CN={MARCO.name};ROLE=REQ-PARTICIPANT;PARTSTAT=NEEDS-ACTION;RSVP=TRUE:mailto:{MARCO.address}",
        f"ATTENDEE;CN={SOFIA.name};ROLE=OPT-PARTICIPANT;PARTSTAT=NEEDS-ACTION;RSVP=TRUE:mailto:{SOFIA.address}",
        "STATUS:CONFIRMED",
        "SEQUENCE:0",
        "BEGIN:VALARM",
        "ACTION:DISPLAY",
        "DESCRIPTION:Portal redesign kick-off",
        "TRIGGER:-PT15M",
        "END:VALARM",
        "END:VEVENT",
        "END:VCALENDAR",
    ]
    return "\r\n".join(lines) + "\r\n"


def _meeting_thread(b: _Builder) -> None:
    subject = "Kick-off meeting: which slot works?"
    ask = b.add(
        DemoMail(
            key="meeting-kickoff-001",
            folder=SENT,
            sender=ME,
            to=[LENA, MARCO, SOFIA],
            subject=subject,
            when=b.at(12, 11, 0),
            text=(
                "Hi everyone,\n\n"
                "let's find a slot for the kick-off (90 minutes, in person at Nordlicht if possible):\n"
                "  A) Tuesday 1 December, 10:00\n"
                "  B) Wednesday 2 December, 14:00\n"
                "  C) Thursday 3 December, 09:30\n\n"
                "Just reply with the letters that work for you.\n\nDeniz"
            ),
        )
    )
    lena = b.add(
        DemoMail(
            key="meeting-kickoff-002",
            folder=INBOX,
            sender=LENA,
            to=[ME],
            cc=[MARCO, SOFIA],
            subject=f"Re: {subject}",
            when=b.at(12, 13, 24),
            text="B or C for me. A clashes with the quarterly review.\n\nLena",
            parent=ask,
        )
    )
    marco = b.add(
        DemoMail(
            key="meeting-kickoff-003",
            folder=INBOX,
            sender=MARCO,
            to=[ME],
            cc=[LENA, SOFIA],
            subject=f"Re: {subject}",
            when=b.at(11, 9, 2),
            text="C works, B only remotely. I'm at a client workshop on Wednesday afternoon.\n\nMarco",
            parent=lena,
        )
    )
    sofia = b.add(
        DemoMail(
            key="meeting-kickoff-004",
            folder=INBOX,
            sender=SOFIA,
            to=[ME],
            cc=[LENA, MARCO],
            subject=f"Re: {subject}",
            when=b.at(11, 16, 48),
            text="Any of them, but I can only stay for the first hour on C.\n\nSofia",
            parent=marco,
        )
    )
    start = dt.datetime(2026, 12, 3, 9, 30, tzinfo=BERLIN)
    b.add(
        DemoMail(
            key="meeting-kickoff-005",
            folder=SENT,
            sender=ME,
            to=[LENA, MARCO, SOFIA],
            subject=f"Re: {subject}",
            when=b.at(10, 8, 45),
            text=(
                "Thanks all, it's C: Thursday 3 December, 09:30-11:00 at Nordlicht HQ (room Fjord).\n"
                "Sofia, we'll put the metrics part first so you can leave after an hour.\n"
                "Calendar invite attached.\n\nDeniz"
            ),
            parent=sofia,
            flagged=True,
            attachments=[
                DemoAttachment(
                    filename="portal-kickoff.ics",
                    content=_ics_invite(
                        uid=f"portal-kickoff-20261203@{DEMO_DOMAIN}",
                        start=start,
                        end=start + dt.timedelta(minutes=90),
                        stamp=DEMO_ANCHOR - dt.timedelta(days=10),
                    ),
                    maintype="text",
                    subtype="calendar",
                    params={"method": "REQUEST"},
                )
            ],
        )
    )


def _support_thread(b: _Builder) -> None:
    subject = "Complaint: standing desk delivered damaged (order ER-48213)"
    complaint = b.add(
        DemoMail(
            key="support-ergoform-001",
            folder=SENT,
            sender=ME,
            to=[ERGOFORM],
            subject=subject,
            when=b.at(34, 19, 10),
            text=(
                "Hello,\n\n"
                "the standing desk from order ER-48213 arrived today with a bent left leg and a cracked\n"
                "control panel. The box was visibly crushed at one corner; the driver noted it on the\n"
                "delivery slip. Photos are available on request.\n\n"
                "I'd like a replacement of the frame and the control panel, not a refund.\n\n"
                "Regards,\nDeniz Kaya"
            ),
        )
    )
    ticket = b.add(
        DemoMail(
            key="support-ergoform-002",
            folder=INBOX,
            sender=ERGOFORM,
            to=[ME],
            subject=f"Re: {subject} [Ticket #77104]",
            when=b.at(34, 19, 11),
            text=(
                "Thank you for contacting Ergoform. Your request has been received as ticket #77104.\n"
                "We usually answer within two working days.\n\n"
                "Please keep the ticket number in the subject when you reply."
            ),
            parent=complaint,
        )
    )
    agent = b.add(
        DemoMail(
            key="support-ergoform-003",
            folder=INBOX,
            sender=ERGOFORM_AGENT,
            to=[ME],
            subject=f"Re: {subject} [Ticket #77104]",
            when=b.at(30, 11, 32),
            text=(
                "Dear Mr Kaya,\n\n"
                "we are sorry about the damaged desk. For the claim with our carrier we need three photos:\n"
                "the leg, the control panel and the label on the box. Once we have them we will ship a\n"
                "replacement within 10 working days.\n\n"
                "Kind regards,\nJana Vogt, Ergoform customer service"
            ),
            parent=ticket,
        )
    )
    photos = b.add(
        DemoMail(
            key="support-ergoform-004",
            folder=SENT,
            sender=ME,
            to=[ERGOFORM_AGENT],
            subject=f"Re: {subject} [Ticket #77104]",
            when=b.at(30, 18, 5),
            text=(
                "Hello Ms Vogt,\n\n"
                "here is a description of the three photos you asked for (the pictures themselves are in the\n"
                "upload portal under ticket #77104): bent leg, cracked panel, box label with the carrier code.\n\n"
                "Deniz Kaya"
            ),
            parent=agent,
        )
    )
    escalate = b.add(
        DemoMail(
            key="support-ergoform-005",
            folder=SENT,
            sender=ME,
            to=[ERGOFORM_AGENT],
            cc=[ERGOFORM_LEAD],
            subject=f"Re: {subject} [Ticket #77104]",
            when=b.at(14, 9, 20),
            text=(
                "Hello,\n\n"
                "more than two weeks have passed since I sent the photos and I have not heard anything.\n"
                "I have been working at a broken desk for a month now. Please tell me by Friday when the\n"
                "replacement ships, otherwise I will withdraw from the purchase and ask for a full refund.\n\n"
                "Deniz Kaya"
            ),
            parent=photos,
        )
    )
    b.add(
        DemoMail(
            key="support-ergoform-006",
            folder=INBOX,
            sender=ERGOFORM_LEAD,
            to=[ME],
            cc=[ERGOFORM_AGENT],
            subject=f"Re: {subject} [Ticket #77104]",
            when=b.at(13, 15, 42),
            text=(
                "Dear Mr Kaya,\n\n"
                "I apologise for the silence; your ticket was stuck in the carrier claim queue.\n"
                "The replacement frame and control panel left our warehouse today (ParcelPoint tracking\n"
                "PP-5521-0938-DE). As a thank-you for your patience we refunded 60 EUR to your card.\n\n"
                "Best regards,\nMehmet Arslan, Team Lead Customer Care"
            ),
            parent=escalate,
            seen=False,
            flagged=True,
        )
    )


def _turkish_statements(b: _Builder) -> None:
    statements = [
        # (month label, sent days ago, cut-off, due date, period debt, minimum payment, unread/flagged)
        ("Ekim 2026", 34, "16.10.2026", "26.10.2026", "9.812,40 TL", "2.943,72 TL", False),
        ("Kasım 2026", 3, "17.11.2026", "15.12.2026", "12.345,67 TL", "3.703,70 TL", True),
    ]
    transactions = [
        ("02.11.2026", "MIGROS SANAL MARKET ISTANBUL", "1.284,35 TL"),
        ("04.11.2026", "SKYBRIDGE AIRLINES ONLINE", "6.410,00 TL"),
        ("07.11.2026", "PERA GARDEN HOTEL ISTANBUL", "2.950,00 TL"),
        ("09.11.2026", "KAHVE DUNYASI BEYOGLU", "186,50 TL"),
        ("12.11.2026", "TELVIO ROAMING PAKETI", "412,00 TL"),
        ("14.11.2026", "ERGOFORM IADE", "-1.902,18 TL"),
        ("15.11.2026", "D&R KITAP KADIKOY", "3.005,00 TL"),
    ]
    for month, days_ago, cutoff, due, debt, minimum, current in statements:
        slug = "2026-11" if current else "2026-10"
        lines = [
            "Marmara Bank A.S. - Kredi Karti Hesap Özeti",
            "Kart Sahibi: DENIZ KAYA          Kart No: 5400 **** **** 4821",
            f"Hesap Kesim Tarihi: {cutoff}",
            f"Son Ödeme Tarihi: {due}",
            f"Dönem Borcu: {debt}",
            f"Asgari Ödeme Tutari: {minimum}",
            "Kart Limiti: 60.000,00 TL",
            "",
            "Islem Tarihi   Aciklama                                Tutar",
        ]
        if current:
            lines += [f"{date}     {text:<40} {amount}" for date, text, amount in transactions]
        else:
            lines += ["(Bu dönemin islem dökümü için internet subesini kullaniniz.)"]
        lines += [
            "",
            "Son ödeme tarihine kadar asgari ödeme tutarini ödemediginiz takdirde",
            "gecikme faizi uygulanir. Otomatik ödeme talimati için subenize basvurunuz.",
        ]
        when = b.at(days_ago, 7, 2)
        pdf = pdf_attachment(f"hesap-ozeti-{slug}.pdf", title=f"Hesap Özeti - {month}", lines=lines, created=when)
        body = (
            "Sayın DENİZ KAYA,\n\n"
            f"5400 **** **** 4821 numaralı kredi kartınızın {month} dönemine ait hesap özeti ektedir.\n\n"
            f"Hesap Kesim Tarihi: {cutoff}\n"
            f"Son Ödeme Tarihi: {due}\n"
            f"Dönem Borcu: {debt}\n"
            f"Asgari Ödeme Tutarı: {minimum}\n\n"
            "Ödemenizi mobil uygulamamızdan, internet şubemizden veya ATM'lerimizden yapabilirsiniz.\n"
            "Son ödeme tarihinde en az asgari ödeme tutarını ödemediğiniz durumda gecikme faizi uygulanır.\n\n"
            "Saygılarımızla,\nMarmara Bank Kart Hizmetleri\n\n"
            "Bu e-posta otomatik olarak gönderilmiştir, lütfen yanıtlamayınız."
        )
        b.add(
            DemoMail(
                key=f"marmara-ekstre-{slug}",
                folder=INBOX,
                sender=BANK,
                to=[ME],
                subject=f"Kredi Kartı Hesap Özeti - {month}",
                when=when,
                text=body,
                attachments=[pdf],
                seen=not current,
                flagged=current,
            )
        )


QNB = Person("QNB Finansbank", "e-ekstre@qnbfinansbank.example")
QNB_CAMPAIGNS = Person("QNB Finansbank", "kampanya@qnbfinansbank.example")
# The spring e-statements of a second card (the seed's case: "when do I need to make a payment to QNB bank
# for my credit card" → Son Ödeme Tarihi 11/05/2026). Their mail says little: the due date and the amounts
# are only in the PDF. Fixed dates, as an archive of older mail would have.
QNB_STATEMENTS = (
    # month, slug, sent (UTC), cut-off, due, period debt, minimum payment
    ("Mart 2026", "2026-03", dt.datetime(2026, 3, 28, 6, 40, tzinfo=dt.UTC), "27/03/2026", "11/04/2026",
     "6.118,40 TL", "1.835,52 TL"),
    ("Nisan 2026", "2026-04", dt.datetime(2026, 4, 27, 6, 40, tzinfo=dt.UTC), "26/04/2026", "11/05/2026",
     "8.406,90 TL", "2.522,07 TL"),
)  # fmt: skip


def _qnb_statements(b: _Builder) -> None:
    for month, slug, sent, cutoff, due, debt, minimum in QNB_STATEMENTS:
        lines = [
            "Kart Sahibi: DENIZ KAYA",
            "Kart Numarasi: 4155 **** **** 7712",
            f"Hesap Kesim Tarihi: {cutoff}",
            f"Son Ödeme Tarihi: {due}",
            f"Dönem Borcu: {debt}",
            f"Asgari Ödeme Tutari: {minimum}",
            "",
            "Islem Tarihi  Aciklama                         Tutar",
            "03/04/2026    MIGROS KADIKOY                   642,15 TL",
            "09/04/2026    THY ONLINE                     3.120,00 TL",
            "",
            "Son ödeme tarihine kadar en az asgari ödeme tutarini ödemeniz gerekmektedir.",
        ]
        pdf = pdf_attachment(
            f"QNB_E-Ekstre_{slug}.pdf",
            title=f"QNB Finansbank - Kredi Karti Hesap Özeti ({month})",
            lines=lines,
            created=sent,
        )
        b.add(
            DemoMail(
                key=f"qnb-e-ekstre-{slug}",
                own_message_id=f"qnb-e-ekstre-{slug}@qnbfinansbank.example",
                folder=INBOX,
                sender=QNB,
                to=[ME],
                subject=f"QNB E-Ekstre - {month}",
                when=sent.astimezone(BERLIN),
                text=(
                    "Değerli Müşterimiz,\n\n"
                    f"QNB Finansbank kredi kartınıza ait {month} dönemi e-ekstreniz ektedir. Hesap özetinizin "
                    "ayrıntılarını ekteki PDF dosyasında bulabilirsiniz.\n\n"
                    "Ödemelerinizi QNB Mobil, internet şubesi veya ATM'lerimiz üzerinden yapabilirsiniz.\n\n"
                    "Bu e-posta bilgilendirme amaçlıdır, lütfen yanıtlamayınız.\nQNB Finansbank"
                ),
                attachments=[pdf],
            )
        )
    # Same bank, a date and "ödeme", but no due date: an advert that must not answer the question.
    b.add(
        DemoMail(
            key="qnb-kampanya-2026-05",
            own_message_id="qnb-kampanya-2026-05@qnbfinansbank.example",
            folder=INBOX,
            sender=QNB_CAMPAIGNS,
            to=[ME],
            subject="Kredi kartınıza özel taksit kampanyası",
            when=dt.datetime(2026, 5, 20, 9, 0, tzinfo=dt.UTC).astimezone(BERLIN),
            text=(
                "Değerli Müşterimiz,\n\nQNB Finansbank kredi kartı ödemelerinizi 3 taksite bölme fırsatı! "
                "Kampanya 30/06/2026 tarihine kadar geçerlidir.\n\nQNB Finansbank"
            ),
        )
    )


def _german_invoice(b: _Builder) -> None:
    when = b.at(5, 10, 14)
    lines = [
        "Schreiber & Partner IT-Dienstleistungen GmbH",
        "Kastanienallee 41, 10435 Berlin  -  USt-IdNr. DE 298 114 507",
        "",
        "An: Kaya Consulting, Deniz Kaya, Lychener Str. 18, 10437 Berlin",
        "",
        "Rechnung Nr. 2026-1187",
        "Rechnungsdatum: 15.11.2026      Leistungszeitraum: Oktober 2026",
        "",
        "Pos.  Beschreibung                                   Menge   Einzelpreis      Gesamt",
        "1     Einrichtung Notebook und Backup-Konzept            1     480,00 EUR   480,00 EUR",
        "2     Wartungsvertrag Netzwerk (monatlich)               1     320,00 EUR   320,00 EUR",
        "3     Vor-Ort-Support (Stunden)                          4     100,00 EUR   400,00 EUR",
        "",
        "Nettobetrag:                                                          1.200,00 EUR",
        "zzgl. 19 % USt:                                                         228,00 EUR",
        "Rechnungsbetrag:                                                      1.428,00 EUR",
        "",
        "Zahlbar bis 05.12.2026 ohne Abzug.",
        "Bankverbindung: Berliner Volksbank, IBAN DE12 1009 0000 2883 4410 07, BIC BEVODEBB",
        "Verwendungszweck: RE 2026-1187",
    ]
    b.add(
        DemoMail(
            key="schreiber-rechnung-2026-1187",
            folder=INBOX,
            sender=SCHREIBER,
            to=[ME],
            subject=GERMAN_INVOICE_SUBJECT,
            when=when,
            text=(
                "Sehr geehrter Herr Kaya,\n\n"
                "anbei erhalten Sie unsere Rechnung Nr. 2026-1187 für die im Oktober erbrachten Leistungen.\n\n"
                "Rechnungsbetrag: 1.428,00 EUR (inkl. 19 % USt)\n"
                "Zahlbar bis 05.12.2026 ohne Abzug.\n"
                "IBAN: DE12 1009 0000 2883 4410 07 · Verwendungszweck: RE 2026-1187\n\n"
                "Bei Fragen zur Rechnung erreichen Sie uns unter 030 / 4405 2210.\n\n"
                "Mit freundlichen Grüßen\nSabine Schreiber\nSchreiber & Partner IT-Dienstleistungen GmbH"
            ),
            attachments=[
                pdf_attachment("Rechnung_2026-1187.pdf", title="Rechnung Nr. 2026-1187", lines=lines, created=when)
            ],
            seen=False,
            flagged=True,
        )
    )


# --- newsletters ----------------------------------------------------------------------------------

_COMMIT_TOPICS = [
    ("Flaky tests are a product problem", "Why the slowest team in the building had the fastest CI."),
    ("SQLite in production, a year later", "WAL mode, busy timeouts and the one backup mistake we made."),
    ("Reading other people's migrations", "A checklist for schema changes you did not write."),
    ("The cost of a feature flag", "Flags are cheap to add and expensive to forget."),
    ("Typed settings, fewer surprises", "Parsing environment variables once, at startup."),
    ("Pagination without regret", "Keyset vs. offset, and when offset is just fine."),
    ("Small PRs, big wins", "Review latency dropped by half when we capped diffs at 300 lines."),
    ("When the queue is the database", "Running background jobs on Postgres and SQLite."),
    ("On-call without heroics", "Runbooks, quiet alerts and honest post-mortems."),
    ("HTML over the wire", "Server-rendered pages that still feel fast."),
    ("Searching your own data", "Full-text search and embeddings side by side."),
    ("Time zones are a UX problem", "Store UTC, show local, and say which one you mean."),
    ("Caching is a promise", "Every cache entry is a statement about when data may be stale."),
    ("The boring stack dividend", "Fewer moving parts, more time for the product."),
    ("Logs people actually read", "Structure, context and fewer exclamation marks."),
    ("A year of dependency updates", "What broke, what didn't, and the weekly ritual that helped."),
]
_KIEZ_NEWS = [
    ("Pumpkin week and a new cheese supplier", "Our shift schedule for the pumpkin delivery is online."),
    ("General assembly on 28 November", "Agenda: membership fee, cargo bike, winter opening hours."),
    ("Volunteers wanted for Saturday shifts", "Two hours a month keep the shop open for everyone."),
    ("Winter vegetables and the Christmas market stall", "Help us sell jam and sauerkraut on 12 December."),
]
_DESIGN_NOTES = [
    ("August: forms that forgive", "Error messages that tell people what to do next."),
    ("September: empty states", "The first screen a user sees is usually an empty one."),
    ("October: density and calm", "How to show a lot of data without shouting."),
    ("November: designing for keyboards", "Focus order, visible focus and shortcuts that help."),
]


def _newsletter_html(*, brand: str, colour: str, heading: str, lede: str, items: list[str], footer: str) -> str:
    rows = "".join(f'<li style="margin:0 0 8px">{item}</li>' for item in items)
    return (
        '<table role="presentation" width="100%" cellpadding="0" cellspacing="0" style="background-color:#f3f4f6">'
        '<tr><td align="center" style="padding:24px">'
        '<table role="presentation" width="600" cellpadding="0" cellspacing="0" '
        'style="background-color:#ffffff;border-radius:8px;max-width:600px">'
        f'<tr><td style="background-color:{colour};color:#ffffff;padding:16px 24px;font-size:14px;'
        f'font-weight:bold;letter-spacing:1px">{brand}</td></tr>'
        f'<tr><td style="padding:24px"><h1 style="font-size:22px;margin:0 0 12px">{heading}</h1>'
        f'<p style="font-size:15px;color:#374151">{lede}</p><ul style="padding-left:20px">{rows}</ul>'
        '<p><a href="https://example.com/read-more" style="color:#2f5bd3">Read the full issue</a></p>'
        '<img src="https://example.com/pixel.gif" width="1" height="1" alt=""></td></tr>'
        f'<tr><td style="padding:16px 24px;font-size:12px;color:#6b7280">{footer} · '
        '<a href="https://example.com/unsubscribe" style="color:#6b7280">Unsubscribe</a></td></tr>'
        "</table></td></tr></table>"
    )


def _newsletters(b: _Builder) -> None:
    for index, (title, lede) in enumerate(_COMMIT_TOPICS):
        number = 141 + index
        days_ago = 4 + 7 * (len(_COMMIT_TOPICS) - 1 - index)
        links = [
            f"{title} — the main essay this week",
            "Tool of the week: a tiny CLI that diffs two SQLite databases",
            "Reader question: how do you test code that sends email?",
        ]
        b.add(
            DemoMail(
                key=f"weekly-commit-{number}",
                folder=NEWSLETTERS,
                sender=WEEKLY_COMMIT,
                to=[ME],
                subject=f"The Weekly Commit #{number}: {title}",
                when=b.at(days_ago, 6, 30),
                text=f"The Weekly Commit #{number}\n\n{title}\n{lede}\n\n"
                + "\n".join(f"* {link}" for link in links)
                + "\n\nRead online: https://example.com/read-more\nUnsubscribe: https://example.com/unsubscribe",
                html=_newsletter_html(
                    brand=f"THE WEEKLY COMMIT · #{number}",
                    colour="#1f2937",
                    heading=title,
                    lede=lede,
                    items=links,
                    footer="You subscribed at weeklycommit.example",
                ),
                headers={
                    "List-Unsubscribe": "<https://example.com/unsubscribe>",
                    "List-Id": "<weekly.weeklycommit.example>",
                },
                seen=days_ago > 20,
            )
        )
    for index, (title, lede) in enumerate(_KIEZ_NEWS):
        days_ago = 95 - 28 * index
        b.add(
            DemoMail(
                key=f"kiez-news-{index + 1}",
                folder=NEWSLETTERS,
                sender=KIEZ,
                to=[ME],
                subject=f"Kiez Food Co-op: {title}",
                when=b.at(days_ago, 18, 0),
                text=f"Hello members,\n\n{lede}\n\nShop hours: Tue-Fri 15-20, Sat 10-16.\n\nYour co-op board",
                html=_newsletter_html(
                    brand="KIEZ FOOD CO-OP",
                    colour="#3f7d3a",
                    heading=title,
                    lede=lede,
                    items=["Shop hours: Tue-Fri 15-20, Sat 10-16", "Next shift sign-up: in the members' area"],
                    footer="Kiez Food Co-op eG, Berlin",
                ),
                headers={"List-Id": "<members.kiezfood.example>"},
            )
        )
    for index, (title, lede) in enumerate(_DESIGN_NOTES):
        days_ago = 110 - 30 * index
        b.add(
            DemoMail(
                key=f"design-notes-{index + 1}",
                folder=NEWSLETTERS,
                sender=DESIGN_NOTES,
                to=[ME],
                subject=f"Design Notes — {title}",
                when=b.at(days_ago, 8, 15),
                text=f"Design Notes\n\n{title}\n\n{lede}\n\nRead online: https://example.com/read-more",
                html=_newsletter_html(
                    brand="DESIGN NOTES",
                    colour="#7c3aed",
                    heading=title,
                    lede=lede,
                    items=["Essay of the month", "Three examples we liked", "One thing to try this week"],
                    footer="Design Notes is a monthly letter about interface design",
                ),
                seen=index < 3,
            )
        )


# --- receipts and bills ---------------------------------------------------------------------------


def _receipts(b: _Builder) -> None:
    for index, (month, amount) in enumerate(
        [("August", "18.40"), ("September", "18.40"), ("October", "23.10"), ("November", "23.10")]
    ):
        days_ago = 105 - 30 * index
        when = b.at(days_ago, 4, 10)
        number = f"CN-2026-{8 + index:02d}-3391"
        b.add(
            DemoMail(
                key=f"cloudnest-invoice-{number.lower()}",
                folder=INBOX,
                sender=CLOUDNEST,
                to=[ME],
                subject=f"Your Cloudnest invoice {number}",
                when=when,
                text=(
                    f"Hi Deniz,\n\nyour invoice {number} for {month} 2026 is ready.\n\n"
                    f"  2 × small VM (2 vCPU, 4 GB)\n  1 × managed backup 100 GB\n  Total: EUR {amount} (incl. VAT)\n\n"
                    "The amount will be charged to your card ending in 0615.\n\nCloudnest Billing"
                ),
                attachments=[
                    pdf_attachment(
                        f"cloudnest-{number}.pdf",
                        title=f"Cloudnest invoice {number}",
                        lines=[
                            f"Billing period: {month} 2026",
                            "Customer: Kaya Consulting (account 55-2093)",
                            "2 x small VM (2 vCPU, 4 GB)",
                            "1 x managed backup 100 GB",
                            f"Total: EUR {amount} incl. VAT",
                        ],
                        created=when,
                    )
                ],
            )
        )
    for index in range(4):
        days_ago = 100 - 28 * index
        b.add(
            DemoMail(
                key=f"roastery-order-{5120 + index}",
                folder=INBOX,
                sender=ROASTERY,
                to=[ME],
                subject=f"Order #{5120 + index} confirmed: your coffee subscription",
                when=b.at(days_ago, 7, 45),
                text=(
                    f"Thanks, Deniz!\n\nOrder #{5120 + index}\n"
                    "  1 kg Espresso 'Lorelei' (whole bean)  EUR 29.90\n"
                    "  Shipping                               EUR 0.00\n\n"
                    "Your beans are roasted on Tuesday and ship on Wednesday.\n\nRoastery Rhein"
                ),
            )
        )
    for index, (month, amount) in enumerate(
        [("08/2026", "24,99"), ("09/2026", "24,99"), ("10/2026", "31,48"), ("11/2026", "24,99")]
    ):
        days_ago = 99 - 30 * index
        b.add(
            DemoMail(
                key=f"telvio-rechnung-{month.replace('/', '-')}",
                folder=INBOX,
                sender=TELVIO,
                to=[ME],
                subject=f"Ihre Telvio Mobilfunkrechnung {month}",
                when=b.at(days_ago, 5, 0),
                text=(
                    f"Hallo Deniz Kaya,\n\nIhre Rechnung für {month} ist da.\n"
                    f"Rechnungsbetrag: {amount} EUR, Abbuchung per SEPA-Lastschrift in 5 Tagen.\n\n"
                    "Ihr Telvio Team"
                ),
            )
        )
    for key, subject, text, days_ago in [
        (
            "seitenweise-7781",
            "Your order from Seitenweise Books (#7781)",
            "Thank you for your order!\n\n  'The Design of Everyday Things'   EUR 18.00\n"
            "  'Thinking in Systems'            EUR 21.50\n  Total                            EUR 39.50\n\n"
            "Pick-up at the shop from Thursday.",
            58,
        ),
        (
            "seitenweise-7954",
            "Your order from Seitenweise Books (#7954)",
            "Thank you for your order!\n\n  'A Pattern Language'   EUR 64.00\n\nWe will ship within 3 days.",
            17,
        ),
    ]:
        b.add(
            DemoMail(
                key=key, folder=INBOX, sender=SEITENWEISE, to=[ME], subject=subject, when=b.at(days_ago, 20), text=text
            )
        )
    for index, (days_ago, fare, route) in enumerate(
        [
            (44, "14.60", "Lychener Str. → Hauptbahnhof"),
            (22, "9.80", "Alexanderplatz → Lychener Str."),
            (8, "21.30", "BER Airport → Lychener Str."),
        ]
    ):
        b.add(
            DemoMail(
                key=f"cityride-{index + 1}",
                folder=INBOX,
                sender=CITYRIDE,
                to=[ME],
                subject=f"Your CityRide receipt: EUR {fare}",
                when=b.at(days_ago, 22),
                text=f"Thanks for riding with CityRide.\n\nRoute: {route}\nFare: EUR {fare}\n"
                "Paid with card ending 0615.",
            )
        )


def _travel(b: _Builder) -> None:
    booking = b.add(
        DemoMail(
            key="skybridge-booking-k7q2ma",
            folder=INBOX,
            sender=SKYBRIDGE,
            to=[ME],
            subject="Booking confirmation K7Q2MA – Berlin (BER) → Istanbul (IST)",
            when=b.at(40, 21, 12),
            text=(
                "Dear Deniz Kaya,\n\nyour booking is confirmed. Booking reference: K7Q2MA\n\n"
                "Outbound  SB 412  Tue 3 Nov 2026  BER 07:05 → IST 11:15\n"
                "Return    SB 419  Mon 9 Nov 2026  IST 18:40 → BER 20:55\n\n"
                "Passenger: KAYA/DENIZ MR · 1 checked bag (23 kg)\nTotal paid: EUR 286.40\n\n"
                "Online check-in opens 30 hours before departure."
            ),
        )
    )
    b.add(
        DemoMail(
            key="pera-reservation-55810",
            folder=INBOX,
            sender=PERA,
            to=[ME],
            subject="Reservation 55810 confirmed – Pera Garden Hotel, 3–9 November",
            when=b.at(39, 9, 30),
            text=(
                "Dear Mr Kaya,\n\nthank you for choosing Pera Garden Hotel.\n\n"
                "Check-in: 3 November 2026 from 14:00\nCheck-out: 9 November 2026 until 12:00\n"
                "Room: Superior double, garden view, breakfast included\nRate: 2.950,00 TL per night\n\n"
                "We look forward to welcoming you."
            ),
        )
    )
    b.add(
        DemoMail(
            key="skybridge-schedule-change-k7q2ma",
            folder=INBOX,
            sender=SKYBRIDGE,
            to=[ME],
            subject="Re: Booking confirmation K7Q2MA – schedule change on your return flight",
            when=b.at(27, 13, 2),
            text=(
                "Dear Deniz Kaya,\n\nthe departure of SB 419 on 9 November has moved from 18:40 to 19:25.\n"
                "Your seat is unchanged. No action is needed if the new time suits you."
            ),
            parent=booking,
        )
    )
    b.add(
        DemoMail(
            key="skybridge-checkin-k7q2ma",
            folder=INBOX,
            sender=SKYBRIDGE,
            to=[ME],
            subject="Check-in is open for your flight to Istanbul",
            when=b.at(18, 1, 5),
            text="Check-in for SB 412 is now open. Booking reference K7Q2MA.\nBoarding passes are in the app.",
        )
    )
    when = b.at(9, 12, 20)
    b.add(
        DemoMail(
            key="railconnect-ticket-884120",
            folder=INBOX,
            sender=RAIL,
            to=[ME],
            subject="Your ticket: Berlin Hbf → Hamburg Hbf, 2 December",
            when=when,
            text=(
                "Your ticket is attached.\n\nICE 1007 · Wed 2 Dec 2026 · Berlin Hbf 08:36 → Hamburg Hbf 10:24\n"
                "Coach 7, seat 54 (window) · Flex fare EUR 54.90\n\nShow the PDF or the app on board."
            ),
            attachments=[
                pdf_attachment(
                    "ticket-884120.pdf",
                    title="RailConnect ticket 884120",
                    lines=[
                        "Passenger: Deniz Kaya",
                        "ICE 1007, Wed 2 Dec 2026",
                        "Berlin Hbf 08:36 -> Hamburg Hbf 10:24",
                        "Coach 7, seat 54 (window)",
                        "Flex fare: EUR 54.90",
                    ],
                    created=when,
                )
            ],
        )
    )


# --- team updates and personal mail -------------------------------------------------------------


_WEEKLY_HIGHLIGHTS = [
    "Interview guide drafted and reviewed with Lena",
    "Baseline numbers for the order-status page collected",
    "Returns flow mapped end to end (7 steps, 3 hand-offs)",
    "First clickable prototype of the account page",
    "Usability test plan agreed with Nordlicht research",
    "Accessibility audit of the current portal finished",
    "Store staff workshop held in Hamburg",
    "Design system tokens aligned with the web shop",
    "Backlog for Q1 estimated with the engineering leads",
    "Click-and-collect pain points summarised",
    "Analytics dashboard for returns built",
    "Two prototype iterations tested with 5 users each",
    "Copy review for the returns flow",
    "Hand-off checklist for engineering drafted",
    "Budget tracking: 41 % used, on plan",
    "Retro on the discovery phase",
]


def _team_updates(b: _Builder) -> None:
    for index, highlight in enumerate(_WEEKLY_HIGHLIGHTS):
        week = 31 + index
        days_ago = 2 + 7 * (len(_WEEKLY_HIGHLIGHTS) - 1 - index)
        other = _WEEKLY_HIGHLIGHTS[(index + 5) % len(_WEEKLY_HIGHLIGHTS)]
        b.add(
            DemoMail(
                key=f"team-weekly-w{week}",
                folder=INBOX,
                sender=AMIRA,
                to=[ME],
                subject=f"Weekly update – week {week}",
                when=b.at(days_ago, 17, 30),
                text=(
                    f"Hi Deniz,\n\nhere is the update for week {week}.\n\n"
                    f"Done:\n  - {highlight}\n  - {other.lower()}\n\n"
                    "Next:\n  - prepare the notes for Monday's client call\n\n"
                    "Blockers: none" + ("\n  (waiting for analytics access)" if index % 5 == 3 else "") + "\n\nAmira"
                ),
                seen=days_ago > 9,
            )
        )
    subject = "Retro notes: portal discovery phase"
    notes = b.add(
        DemoMail(
            key="retro-discovery-001",
            folder=INBOX,
            sender=AMIRA,
            to=[ME],
            cc=[MARCO],
            subject=subject,
            when=b.at(15, 16, 0),
            text=(
                "Notes from today's retro:\n\nKeep: weekly demo with Lena, interview debriefs on the same day.\n"
                "Change: fewer tools (we used four for notes), share raw notes earlier.\n"
                "Try: a shared glossary for Nordlicht terms.\n\nAmira"
            ),
        )
    )
    marco = b.add(
        DemoMail(
            key="retro-discovery-002",
            folder=INBOX,
            sender=MARCO,
            to=[AMIRA],
            cc=[ME],
            subject=f"Re: {subject}",
            when=b.at(15, 17, 12),
            text="+1 for the glossary. I can start one in the wiki tomorrow.\n\nMarco",
            parent=notes,
        )
    )
    mine = b.add(
        DemoMail(
            key="retro-discovery-003",
            folder=SENT,
            sender=ME,
            to=[AMIRA, MARCO],
            subject=f"Re: {subject}",
            when=b.at(14, 8, 40),
            text="Great notes, thanks. Let's settle on one note tool before the design phase: the wiki.\n\nDeniz",
            parent=marco,
        )
    )
    b.add(
        DemoMail(
            key="retro-discovery-004",
            folder=INBOX,
            sender=AMIRA,
            to=[ME, MARCO],
            subject=f"Re: {subject}",
            when=b.at(14, 9, 5),
            text="Agreed. I'll move the interview notes over this week.\n\nAmira",
            parent=mine,
        )
    )


def _personal(b: _Builder) -> None:
    notes = [
        ("Note: garden plan for spring", "Raised bed by the fence: tomatoes, basil. Ask Elif for the seed list.", 88),
        (
            "Note: tax documents to collect",
            "Cloudnest invoices, Telvio bills, train tickets, home office receipts.",
            61,
        ),
        (
            "Note: ideas for the portal interviews",
            "Ask about the last return they made. Ask what they did instead of calling.",
            47,
        ),
        ("Note: books to read", "A Pattern Language; Thinking in Systems; Working in Public.", 33),
        ("Note: Istanbul recommendations", "Ben: the fish place in Kumkapı. Elif: ferry to Kadıköy at sunset.", 29),
        ("Note: things to fix in the flat", "Bathroom tap, the bike light, the hallway lamp.", 6),
    ]
    for index, (subject, text, days_ago) in enumerate(notes):
        b.add(
            DemoMail(
                key=f"note-to-self-{index + 1}",
                folder=SENT,
                sender=ME,
                to=[ME],
                subject=subject,
                when=b.at(days_ago, 22, 15),
                text=text,
            )
        )
    photos = b.add(
        DemoMail(
            key="family-photos-001",
            folder=INBOX,
            sender=ELIF,
            to=[ME],
            subject="Photos from Sunday",
            when=b.at(50, 20, 40),
            text=(
                "Hey! The photos from Mum's birthday are in the shared album. "
                "The one with the cake is my favourite.\n\nElif"
            ),
        )
    )
    answer = b.add(
        DemoMail(
            key="family-photos-002",
            folder=SENT,
            sender=ME,
            to=[ELIF],
            subject="Re: Photos from Sunday",
            when=b.at(50, 21, 55),
            text="They're lovely. Can you send me the cake one in full size? I'd like to print it for her.\n\nD.",
            parent=photos,
        )
    )
    b.add(
        DemoMail(
            key="family-photos-003",
            folder=INBOX,
            sender=ELIF,
            to=[ME],
            subject="Re: Photos from Sunday",
            when=b.at(49, 8, 5),
            text="Sent it via the album, it's the first one now. Print two, I want one too :)\n\nElif",
            parent=answer,
        )
    )
    dinner = b.add(
        DemoMail(
            key="dinner-ben-001",
            folder=INBOX,
            sender=BEN,
            to=[ME],
            subject="Dinner when you're back from Istanbul?",
            when=b.at(20, 12, 30),
            text="Welcome back soon! Dinner next week? Thursday or Friday works for me.\n\nBen",
        )
    )
    reply = b.add(
        DemoMail(
            key="dinner-ben-002",
            folder=SENT,
            sender=ME,
            to=[BEN],
            subject="Re: Dinner when you're back from Istanbul?",
            when=b.at(20, 19, 2),
            text="Friday! I'll bring the lokum I promised. Your place or the Georgian place on Kastanienallee?",
            parent=dinner,
        )
    )
    ben = b.add(
        DemoMail(
            key="dinner-ben-003",
            folder=INBOX,
            sender=BEN,
            to=[ME],
            subject="Re: Dinner when you're back from Istanbul?",
            when=b.at(19, 9, 10),
            text="Georgian place, 19:30. I'll book a table.",
            parent=reply,
        )
    )
    b.add(
        DemoMail(
            key="dinner-ben-004",
            folder=INBOX,
            sender=BEN,
            to=[ME],
            subject="Re: Dinner when you're back from Istanbul?",
            when=b.at(1, 18, 45),
            text="That was fun. Same time next month? Also: you left your scarf here.",
            parent=ben,
            seen=False,
        )
    )


# --- generated notifications (fills the mailbox up to DEMO_MESSAGE_COUNT) ------------------------

_PULL_REQUESTS = [
    "Add keyset pagination to the orders API",
    "Fix time zone handling in the returns report",
    "Replace the legacy PDF renderer",
    "Cache order-status lookups for 60 seconds",
    "Accessibility: label the account page form fields",
    "Bump the design tokens package",
    "Track click-and-collect pick-ups in analytics",
    "Remove the unused newsletter sign-up endpoint",
    "Speed up the nightly export",
    "Retry webhook deliveries with backoff",
]
_PR_EVENTS = [
    ("requested your review", "{actor} requested your review on this pull request."),
    ("commented", "{actor} commented:\n\n> Could we add a test for the empty case?"),
    ("approved", "{actor} approved these changes."),
    ("CI failed", "The check 'tests (sqlite)' failed on commit {sha}. 1 failing test: test_export_empty_day."),
    ("merged", "Merged #{number} into main."),
]
_REVIEWERS = ["priya-r", "tbecker", "amira-h", "m-bianchi", "jweber"]
_CALENDAR_EVENTS = [
    "Client call: Nordlicht weekly",
    "Focus block: prototype",
    "Interview: store staff Hamburg",
    "Dentist",
    "Design review with Marco",
    "Invoice day",
]
_PARCEL_STATUSES = [
    "Your parcel is on its way",
    "Your parcel will arrive today",
    "Your parcel was delivered",
    "We could not deliver your parcel",
]
_MEETUP_TOPICS = [
    "Research ops on a shoestring",
    "Pricing pages that convert",
    "From prototype to production",
    "Accessibility in B2B tools",
]


def _notifications(b: _Builder, count: int) -> None:
    """Repetitive, machine-sent mail: pull-request threads, calendar reminders, parcels, meetups."""
    rng = b.rng
    made = 0
    # Per pull request: number, title, first notification (what replies reference), latest, next event.
    pr_threads: list[tuple[int, str, DemoMail | None, DemoMail | None, int]] = [
        (120 + index, title, None, None, 0) for index, title in enumerate(_PULL_REQUESTS)
    ]
    while made < count:
        kind = rng.choices(["pr", "calendar", "parcel", "meetup"], weights=[6, 2, 2, 1])[0]
        days_ago = rng.uniform(0.2, 118)
        if kind == "pr":
            slot = rng.randrange(len(pr_threads))
            number, title, root, latest, step = pr_threads[slot]
            if step >= len(_PR_EVENTS):
                continue
            event, template = _PR_EVENTS[step]
            actor = rng.choice(_REVIEWERS)
            if latest is not None:
                # Each event follows the previous one on the same pull request.
                since_latest = (b.anchor - latest.when).total_seconds() / 86400
                days_ago = max(0.01, since_latest - rng.uniform(0.02, min(3.0, max(0.03, since_latest))))
            sha = f"{rng.getrandbits(28):07x}"
            mail = b.add(
                DemoMail(
                    key=f"codeharbor-nordlicht-portal-pr{number}-{step}",
                    folder=INBOX,
                    sender=CODEHARBOR,
                    to=[ME],
                    subject=("Re: " if root else "") + f"[nordlicht/portal] {title} (#{number})",
                    when=b.at(days_ago),
                    text=template.format(actor=actor, sha=sha, number=number)
                    + f"\n\n-- \nView it on CodeHarbor: https://codeharbor.example/nordlicht/portal/pull/{number}"
                    + f"\nYou are receiving this because {actor} {event} and you are a reviewer.",
                    parent=root,
                    seen=days_ago > 6,
                    headers={"List-Id": "<portal.nordlicht.codeharbor.example>"},
                )
            )
            pr_threads[slot] = (number, title, root or mail, mail, step + 1)
        elif kind == "calendar":
            title = rng.choice(_CALENDAR_EVENTS)
            when = b.at(days_ago, rng.choice([7, 8, 12, 16]), 0)
            b.add(
                DemoMail(
                    key=f"calendar-reminder-{made}",
                    folder=INBOX,
                    sender=CALENDAR,
                    to=[ME],
                    subject=f"Reminder: {title} @ {when.strftime('%a %d %b %H:%M')}",
                    when=when,
                    text=f"This is a reminder for '{title}' starting at {when.strftime('%H:%M')}.",
                )
            )
        elif kind == "parcel":
            status = rng.choice(_PARCEL_STATUSES)
            tracking = f"PP-{rng.randrange(1000, 9999)}-{rng.randrange(1000, 9999)}-DE"
            b.add(
                DemoMail(
                    key=f"parcel-{tracking.lower()}-{made}",
                    folder=INBOX,
                    sender=PARCEL,
                    to=[ME],
                    subject=f"{status} ({tracking})",
                    when=b.at(days_ago),
                    text=f"{status}.\nTracking number: {tracking}\nTrack it at https://parcelpoint.example/t/{tracking}",
                    seen=days_ago > 5,
                )
            )
        else:
            topic = rng.choice(_MEETUP_TOPICS)
            b.add(
                DemoMail(
                    key=f"meetup-{made}",
                    folder=INBOX,
                    sender=MEETUP,
                    to=[ME],
                    subject=f"New event: {topic}",
                    when=b.at(days_ago, 10, 0),
                    text=f"Berlin Product Circle invites you to '{topic}'.\n"
                    "Doors 18:30, talks 19:00. RSVP on the website.",
                )
            )
        made += 1


def build_demo_messages(*, anchor: dt.datetime | None = None, seed: int = DEMO_SEED) -> list[DemoMail]:
    """Every demo message, oldest first. Deterministic for a given anchor and seed."""
    builder = _Builder(anchor or DEMO_ANCHOR, random.Random(seed))
    for section in (
        _proposal_thread,
        _meeting_thread,
        _support_thread,
        _turkish_statements,
        _qnb_statements,
        _german_invoice,
        _newsletters,
        _receipts,
        _travel,
        _team_updates,
        _personal,
    ):
        section(builder)
    _notifications(builder, DEMO_MESSAGE_COUNT - len(builder.mails))
    keys = [mail.key for mail in builder.mails]
    if len(set(keys)) != len(keys):
        raise AssertionError("demo message keys must be unique")
    return sorted(builder.mails, key=lambda mail: (mail.when, mail.key))


def write_demo_archive(path: Path, mails: list[DemoMail]) -> Path:
    """A zip of .eml files, `<folder>/<nnnn>-<key>.eml`, in delivery order across all folders.

    The importer names folders after the directories inside the zip and reads members in order, so
    every reply is stored after the message it answers, whichever folder each one lives in.
    """
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for index, mail in enumerate(mails, start=1):
            info = zipfile.ZipInfo(f"{mail.folder}/{index:04d}-{mail.key}.eml", date_time=_zip_time(mail.when))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, mail.to_email().as_bytes())
    return path


def _zip_time(when: dt.datetime) -> tuple[int, int, int, int, int, int]:
    utc = when.astimezone(dt.UTC)
    return (utc.year, utc.month, utc.day, utc.hour, utc.minute, utc.second)


def import_demo_mailbox(*, owner: Any, stdout: Any, anchor: dt.datetime | None = None) -> None:
    """Create (or reuse) the local "Demo" account and import the generated mailbox into it.

    Re-running is safe: stable Message-IDs make every message a duplicate the second time.
    """
    from apps.accounts.actions import AccountNameTaken, get_or_create_local_account
    from apps.accounts.importers import import_path

    try:
        account = get_or_create_local_account(owner=owner, name=DEMO_ACCOUNT_NAME)
    except AccountNameTaken as exc:
        stdout.write(f"Demo mailbox skipped: {exc}\n")
        return
    if not account.address:
        account.address = ME.address
        account.display_name = ME.name
        account.save(update_fields=["address", "display_name"])
    effective_anchor = min(anchor or DEMO_ANCHOR, dt.datetime.now(dt.UTC))
    mails = build_demo_messages(anchor=effective_anchor)
    with tempfile.TemporaryDirectory(prefix="mailagent-demo-") as tmp:
        archive = write_demo_archive(Path(tmp) / "demo-mailbox.zip", mails)
        summary = import_path(account, archive)
    stdout.write(
        f"Demo mailbox “{account.name}”: {summary.imported} messages imported, {summary.duplicates} already present, "
        f"{summary.parse_errors} with parse errors ({len(mails)} generated).\n"
    )
