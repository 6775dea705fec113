"""The demo message model: people, mails and attachments, the builder that dates them, the anchor and seed."""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import format_datetime, formataddr
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apps.accounts.demo_mailbox.pdf import build_pdf

DEMO_ACCOUNT_NAME = "Demo"
DEMO_MESSAGE_COUNT = 200
DEMO_SEED = 26_1120
# Fixed so the content (due dates, meeting days) stays coherent and the bytes deterministic.
DEMO_ANCHOR = dt.datetime(2026, 11, 20, 16, 30, tzinfo=dt.UTC)
DEMO_DOMAIN = "demo.mailagent.example"

try:
    BERLIN: dt.tzinfo = ZoneInfo("Europe/Berlin")
except ZoneInfoNotFoundError:  # no tz database: a fixed CET offset is close enough for a demo
    BERLIN = dt.timezone(dt.timedelta(hours=1))


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


INBOX = "INBOX"
SENT = "Sent"
NEWSLETTERS = "Newsletters"


class MailboxBuilder:
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
