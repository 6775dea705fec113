"""What gets indexed: the generic document (kind + object id) built from messages and attachment text,
and how a document is cut into chunks for embeddings."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from apps.accounts.models import Attachment, Message
from apps.search.headers import HeaderTerms, counts_as_attachment, message_header_terms, text_terms
from apps.search.models import DocumentKind

MAX_BODY_CHARS = 200_000


@dataclass(slots=True)
class IndexDocument:
    kind: str
    object_id: int
    title: str
    people: str
    body: str
    account_id: int | None = None
    message_id: int | None = None
    owner_id: int | None = None
    # A library file's folder. Mail has none here: a message is in every folder it has a location in
    # (apps.accounts MessageLocation), and filters read those, so moves and renames never touch the index.
    folder: str = ""
    date: dt.datetime | None = None
    from_address: str = ""
    recipients: str = ""
    has_attachments: bool = False
    # The operator fields (from: to: cc: bcc: subject:); None: the title's words as the subject. Not part of the
    # content hash: they are derived from what is (title, people) and their format changed without the content.
    headers: HeaderTerms | None = None

    def header_terms(self) -> HeaderTerms:
        return self.headers if self.headers is not None else HeaderTerms(subject=text_terms(self.title))

    def content_hash(self) -> str:
        digest = hashlib.sha1(usedforsecurity=False)
        for part in (
            self.title,
            self.people,
            self.body,
            self.folder,
            self.date.isoformat() if self.date else "",
            self.from_address,
            self.recipients,
            str(self.has_attachments),
            str(self.account_id),
        ):
            digest.update(part.encode("utf-8", "surrogatepass"))
            digest.update(b"\x00")
        return digest.hexdigest()


def _addresses(entries: Any) -> list[dict[str, str]]:
    if not isinstance(entries, list):
        return []
    return [entry for entry in entries if isinstance(entry, dict)]


def _format_person(name: str, address: str) -> str:
    return f"{name} <{address}>" if name and address else (address or name)


def message_body_text(message: Message) -> str:
    if message.body_text.strip():
        return message.body_text[:MAX_BODY_CHARS]
    if message.body_html:
        from inscriptis import get_text

        return get_text(message.body_html[: MAX_BODY_CHARS * 2])[:MAX_BODY_CHARS]
    return message.snippet


def message_document(
    message: Message, attachment_names: Sequence[str] = (), *, has_attachments: bool | None = None
) -> IndexDocument:
    """`has_attachments`: whether the message has a part that counts as an attachment (headers.py); None: the
    message's own flag (any part other than the text)."""
    recipients = [*_addresses(message.to), *_addresses(message.cc), *_addresses(message.bcc)]
    people = [_format_person(message.from_name, message.from_address)]
    people += [_format_person(r.get("name", ""), r.get("address", "")) for r in recipients]
    body = message_body_text(message)
    if attachment_names:
        body = f"{body}\n\nAttachments: {', '.join(attachment_names)}"
    return IndexDocument(
        kind=DocumentKind.MESSAGE,
        object_id=message.pk,
        title=message.subject,
        people="\n".join(p for p in people if p),
        body=body,
        account_id=message.account_id,
        message_id=message.pk,
        date=message.date,
        from_address=message.from_address.lower(),
        recipients=" ".join(sorted({str(r.get("address", "")).lower() for r in recipients if r.get("address")})),
        has_attachments=message.has_attachments if has_attachments is None else has_attachments,
        headers=message_header_terms(
            from_name=message.from_name,
            from_address=message.from_address,
            to=message.to,
            cc=message.cc,
            bcc=message.bcc,
            subject=message.subject,
        ),
    )


def attachment_document(attachment: Attachment, parent: IndexDocument) -> IndexDocument:
    return IndexDocument(
        kind=DocumentKind.ATTACHMENT,
        object_id=attachment.pk,
        title=attachment.filename or parent.title,
        people=parent.people,
        body=(attachment.extracted_text or "")[:MAX_BODY_CHARS],
        account_id=parent.account_id,
        message_id=parent.message_id,
        date=parent.date,
        from_address=parent.from_address,
        recipients=parent.recipients,
        # An attachment's text stands for its message: the operators ask about the message.
        has_attachments=parent.has_attachments,
        headers=parent.headers,
    )


MESSAGE_FIELDS = (
    "id",
    "account_id",
    "from_name",
    "from_address",
    "to",
    "cc",
    "bcc",
    "subject",
    "date",
    "body_text",
    "body_html",
    "snippet",
    "has_attachments",
)


def documents_for_messages(message_ids: Iterable[int]) -> tuple[list[IndexDocument], list[int]]:
    """Documents for the given messages and their extracted attachment texts; plus ids that are gone."""
    ids = list(dict.fromkeys(message_ids))
    # Oldest first, so documents get ids in the order mail was stored ("newest matches" rank first).
    # A message deleted on the server (no location left) is "gone": its documents are removed.
    messages = Message.objects.filter(pk__in=ids, deleted_at=None).order_by("pk").only(*MESSAGE_FIELDS)
    attachments: dict[int, list[Attachment]] = {}
    for attachment in Attachment.objects.filter(message_id__in=ids).only(
        "id", "message_id", "filename", "extracted_text", "is_inline", "mime_type", "disposition", "is_crypto_part"
    ):
        attachments.setdefault(attachment.message_id, []).append(attachment)
    documents: list[IndexDocument] = []
    found: set[int] = set()
    for message in messages:
        found.add(message.pk)
        own = attachments.get(message.pk, [])
        names = [a.filename for a in own if a.filename and not a.is_inline]
        counted = any(
            counts_as_attachment(
                disposition=a.disposition,
                is_crypto_part=a.is_crypto_part,
                is_inline=a.is_inline,
                mime_type=a.mime_type,
                filename=a.filename,
            )
            for a in own
        )
        parent = message_document(message, names, has_attachments=counted)
        documents.append(parent)
        documents.extend(attachment_document(a, parent) for a in own if (a.extracted_text or "").strip())
    return documents, [pk for pk in ids if pk not in found]


# ---------------------------------------------------------------------------------------------------
# Chunks for embeddings. A message's own words come first; quoted replies and forwarded history follow as
# further passages (a forwarded notice often is the answer), until MAX_CHUNKS. History is found by the
# shape of the text, never by words of one language: a dashed separator line ("-----Original Message-----",
# "----- Forwarded by …", in any language) or an attribution line ending in ":" right before quoted lines.

QUOTE_LINE_RE = re.compile(r"^\s*(>|\|)")
SEPARATOR_RE = re.compile(r"^\s*-{2,}\s*\S.{0,80}?-{2,}\s*$")


def split_own_text(body: str) -> tuple[str, str]:
    """(the message's own unquoted text, the quoted/forwarded rest)."""
    lines = body.splitlines()
    own: list[str] = []
    for index, line in enumerate(lines):
        following = next((later for later in lines[index + 1 : index + 4] if later.strip()), "")
        starts_history = SEPARATOR_RE.match(line) or (
            line.rstrip().endswith(":") and len(line) < 200 and QUOTE_LINE_RE.match(following)
        )
        if starts_history and len(" ".join(own)) > 200:
            return "\n".join(own), "\n".join(lines[index:])
        if not QUOTE_LINE_RE.match(line):
            own.append(line)
    quoted = "\n".join(line for line in lines if QUOTE_LINE_RE.match(line))
    return "\n".join(own), quoted


def own_text(body: str) -> str:
    return split_own_text(body)[0]


def split_text(text: str, *, size: int, limit: int) -> list[str]:
    """At most `limit` pieces of about `size` characters, cut at a sentence, line or word end."""
    flat = " ".join(text.split())
    pieces: list[str] = []
    start = 0
    while start < len(flat) and len(pieces) < limit:
        end = min(len(flat), start + size)
        if end < len(flat):
            window = flat[start:end]
            cut = max(window.rfind(". "), window.rfind("? "), window.rfind("! "))
            if cut < size // 2:
                cut = window.rfind(" ")
            if cut > size // 3:
                end = start + cut + 1
        piece = flat[start:end].strip()
        if piece:
            pieces.append(piece)
        start = end
    return pieces


def chunk_texts(title: str, people: str, body: str, *, size: int, limit: int) -> list[str]:
    """Passages of the whole text, own words first: the first carries the subject and sender so short
    messages embed what they are about; history passages follow while `limit` allows."""
    sender = (people.split("\n", 1)[0] if people else "").split(" <", 1)[0]
    head = " ".join(part for part in (title.strip(), f"({sender})" if sender else "") if part)
    own, history = split_own_text(body)
    if not own.strip():
        own, history = body, ""
    pieces = split_text(own, size=size, limit=limit) or [""]
    if history.strip() and len(pieces) < limit:
        quoted = "\n".join(QUOTE_LINE_RE.sub("", line, count=1) for line in history.splitlines())
        pieces += split_text(quoted, size=size, limit=limit - len(pieces))
    pieces[0] = f"{head}\n{pieces[0]}".strip()
    return [piece for piece in pieces if piece] or [head or " "]
