"""What parsing produces: the ParsedMessage contract used by apps/accounts/store.py."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field


@dataclass(slots=True)
class ParsedAddress:
    name: str
    address: str

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "address": self.address}


@dataclass(slots=True)
class ParsedAttachment:
    filename: str
    mime_type: str
    size: int
    content_id: str
    is_inline: bool
    part_ref: str  # IMAP-style body part number ("2", "1.2"): BODY.PEEK[<part_ref>] fetches it
    payload: bytes | None = None  # decoded bytes when available (local imports cache them)
    # The Content-Disposition type as sent, lowercased ("attachment", "inline"; "" without the header).
    disposition: str = ""
    # The signature of a multipart/signed or a part of a multipart/encrypted (RFC 1847): protocol, not content.
    is_crypto_part: bool = False


@dataclass(slots=True)
class ParsedMessage:
    message_id: str = ""  # without angle brackets
    in_reply_to: str = ""  # without angle brackets
    references: list[str] = field(default_factory=list)  # without angle brackets, oldest first
    subject: str = ""
    from_: ParsedAddress | None = None
    to: list[ParsedAddress] = field(default_factory=list)
    cc: list[ParsedAddress] = field(default_factory=list)
    bcc: list[ParsedAddress] = field(default_factory=list)
    reply_to: list[ParsedAddress] = field(default_factory=list)
    date: dt.datetime | None = None  # timezone-aware (UTC when the header has no zone)
    body_text: str = ""
    body_html: str = ""  # sanitized with nh3
    snippet: str = ""
    size: int = 0
    raw_headers: str = ""
    attachments: list[ParsedAttachment] = field(default_factory=list)
    parse_error: str = ""
    raw_sha256: str = ""  # hex SHA-256 of the raw bytes: dedupe key when there is no Message-ID
