"""Writing a reply: who it goes to (reply / reply all), its subject and threading headers, the account's
signature in the body's format, and the RFC 822 bytes. Pure functions over stored rows; no I/O."""

from __future__ import annotations

import datetime as dt
import html as html_lib
import re
import textwrap
from dataclasses import dataclass, field
from email.headerregistry import Address
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import format_datetime, make_msgid
from typing import Any

import nh3

from apps.accounts.models import MailAccount, Message

Person = dict[str, str]

# RFC 3676 §4.3: "-- " on a line of its own starts the signature.
SIGNATURE_DELIMITER = "-- "
_TAG = re.compile(r"<\s*/?\s*[a-zA-Z][a-zA-Z0-9-]*(\s[^<>]*)?/?\s*>")
_REPLY_PREFIX = re.compile(r"^\s*re\s*:", re.IGNORECASE)
_MIME_TOKEN = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]*")


def people(entries: Any) -> list[Person]:
    """Stored address lists ([{name, address}]) cleaned: addresses trimmed, empties dropped."""
    if not isinstance(entries, list):
        return []
    result = []
    for entry in entries:
        if isinstance(entry, dict) and str(entry.get("address") or "").strip():
            result.append({"name": str(entry.get("name") or "").strip(), "address": str(entry["address"]).strip()})
    return result


def _unique(persons: list[Person], *, exclude: set[str]) -> list[Person]:
    seen = set(exclude)
    result = []
    for person in persons:
        key = person["address"].lower()
        if key not in seen:
            seen.add(key)
            result.append(person)
    return result


def reply_recipients(*, original: Message, account: MailAccount, reply_all: bool) -> tuple[list[Person], list[Person]]:
    """(to, cc) of a reply to `original` from `account`.

    Reply: Reply-To if set, else the sender; when I wrote the original, its recipients instead.
    Reply all: that, plus everyone else on To and Cc (To stays To, Cc stays Cc), never myself twice."""
    mine = {account.address.lower()} if account.address else set()
    sender = {"name": original.from_name, "address": original.from_address} if original.from_address else None
    from_me = bool(sender) and original.from_address.lower() in mine
    if from_me:
        # A note to myself keeps me as the recipient; otherwise my own addresses never get the reply.
        to = _unique(people(original.to), exclude=mine) or people(original.to)[:1]
    else:
        to = _unique(people(original.reply_to) or ([sender] if sender else []), exclude=set())
    cc: list[Person] = []
    if reply_all:
        to = _unique(to + people(original.to), exclude=mine)
        cc = _unique(people(original.cc), exclude=mine | {person["address"].lower() for person in to})
    return to, cc


def reply_subject(subject: str) -> str:
    stripped = subject.strip()
    if _REPLY_PREFIX.match(stripped):
        return stripped
    return f"Re: {stripped}" if stripped else "Re:"


def threading_headers(original: Message) -> tuple[str, str]:
    """(In-Reply-To, References) without angle brackets: References is the original's chain plus its id
    (RFC 5322 §3.6.4), or its In-Reply-To when it had no References."""
    parent = original.message_id.strip().strip("<>")
    chain = [ref.strip("<>") for ref in original.references.split() if ref.strip("<>")]
    if not chain and original.in_reply_to:
        chain = [original.in_reply_to.strip().strip("<>")]
    if parent and parent not in chain:
        chain.append(parent)
    return parent, " ".join(chain)


def strip_signature(body: str) -> str:
    """The text above the last signature delimiter (a draft that already carries a signature gets the
    account's own one at send time instead of a second copy)."""
    lines = body.split("\n")
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].rstrip("\r") == SIGNATURE_DELIMITER:
            return "\n".join(lines[:index]).rstrip()
    return body


def looks_like_html(text: str) -> bool:
    return bool(_TAG.search(text))


def html_to_text(html: str) -> str:
    from inscriptis import get_text  # with lxml ~8 MB: loaded by the first HTML draft, not at startup

    # inscriptis indents block content; the common indent is layout, not text.
    text = textwrap.dedent(get_text(html))
    return "\n".join(line.rstrip() for line in text.strip("\n").split("\n")).strip()


def text_to_html(text: str) -> str:
    paragraphs = [html_lib.escape(block).replace("\n", "<br>\n") for block in re.split(r"\n{2,}", text.strip())]
    return "".join(f"<p>{block}</p>\n" for block in paragraphs if block)


def sanitize_html(html: str) -> str:
    return nh3.clean(html)


def signature_text(signature: str) -> str:
    """The signature for a plain-text body: HTML signatures (Gmail's) converted to text."""
    signature = signature.strip()
    return html_to_text(signature) if looks_like_html(signature) else signature


def signature_html(signature: str) -> str:
    """The signature for an HTML body: HTML kept (sanitized), plain text escaped with its line breaks."""
    signature = signature.strip()
    if looks_like_html(signature):
        return sanitize_html(signature)
    return html_lib.escape(signature).replace("\n", "<br>\n")


@dataclass(slots=True)
class Rendered:
    text: str
    html: str  # "" for a plain-text reply


def render_body(*, body: str, body_format: str, signature: str) -> Rendered:
    """The final body as sent: the user's text plus the signature in the body's own format."""
    if body_format == "html":
        html = sanitize_html(body)
        text = html_to_text(html)
        if signature.strip():
            html += f'\n<div class="signature">-- <br>\n{signature_html(signature)}</div>'
            text += f"\n\n{SIGNATURE_DELIMITER}\n{signature_text(signature)}"
        return Rendered(text=text.strip("\n") + "\n", html=html)
    text = body.replace("\r\n", "\n").rstrip()
    if signature.strip():
        text += f"\n\n{SIGNATURE_DELIMITER}\n{signature_text(signature)}"
    return Rendered(text=text + "\n", html="")


def _address(person: Person) -> Address:
    username, _, domain = person["address"].rpartition("@")
    return Address(display_name=person.get("name") or "", username=username, domain=domain)


def new_message_id(account: MailAccount) -> str:
    domain = account.address.rpartition("@")[2] or "mailagent.invalid"
    return make_msgid(domain=domain).strip("<>")


@dataclass(slots=True)
class Outgoing:
    from_name: str
    from_address: str
    to: list[Person]
    cc: list[Person]
    subject: str
    rendered: Rendered
    message_id: str
    in_reply_to: str
    references: str
    date: dt.datetime
    attachments: list[OutgoingAttachment] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class OutgoingAttachment:
    filename: str
    content_type: str
    data: bytes


def _mime_type(content_type: str) -> tuple[str, str]:
    maintype, _, subtype = content_type.split(";")[0].strip().lower().partition("/")
    if not (_MIME_TOKEN.fullmatch(maintype) and _MIME_TOKEN.fullmatch(subtype)) or maintype == "multipart":
        return "application", "octet-stream"
    return maintype, subtype


def build_mime(outgoing: Outgoing) -> bytes:
    message = EmailMessage(policy=SMTP)
    message["From"] = _address({"name": outgoing.from_name, "address": outgoing.from_address})
    message["To"] = [_address(person) for person in outgoing.to]
    if outgoing.cc:
        message["Cc"] = [_address(person) for person in outgoing.cc]
    message["Subject"] = outgoing.subject
    message["Date"] = format_datetime(outgoing.date)
    message["Message-ID"] = f"<{outgoing.message_id}>"
    if outgoing.in_reply_to:
        message["In-Reply-To"] = f"<{outgoing.in_reply_to}>"
    if outgoing.references:
        message["References"] = " ".join(f"<{ref}>" for ref in outgoing.references.split())
    message.set_content(outgoing.rendered.text)
    if outgoing.rendered.html:
        message.add_alternative(outgoing.rendered.html, subtype="html")
    for attachment in outgoing.attachments:  # the message becomes multipart/mixed
        maintype, subtype = _mime_type(attachment.content_type)
        message.add_attachment(attachment.data, maintype=maintype, subtype=subtype, filename=attachment.filename)
    return message.as_bytes()


def is_valid_address(address: str) -> bool:
    username, at, domain = address.strip().rpartition("@")
    if not at or not username or not domain or "." not in domain.strip("."):
        return False
    try:
        Address(username=username, domain=domain)
    except (ValueError, IndexError):
        return False
    return not any(char.isspace() or char in '<>,;"' for char in address)
