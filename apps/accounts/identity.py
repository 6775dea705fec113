"""What makes a message the same message: its Message-ID plus a fingerprint of its content.

The Message-ID alone is not an identity: broken mailers, list software and resent mail give different
messages one Message-ID, and collapsing them loses mail. Raw bytes are not one either: the same message
in two folders (an IMAP COPY, a Gmail label, a Maildir tree) differs in line endings or delivery headers
between servers. So the key is the Message-ID plus a hash of what a reader sees: the addressing headers,
the date, the text and the attachments' names and sizes, computed from parsed fields only, so a stored
row (whose raw bytes are gone) gives the same key as a freshly parsed copy (the migration relies on it).
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from apps.accounts.parsing import ParsedMessage

MESSAGE_ID_LIMIT = 950
# The columns the store writes these values to truncate them; the fingerprint sees the stored value.
FROM_ADDRESS_LIMIT = 320


def _addresses(values: Iterable[Mapping[str, Any]]) -> list[str]:
    return sorted(str(item.get("address") or item.get("name") or "").strip().lower() for item in values)


def _when(value: dt.datetime | None) -> str:
    return "" if value is None else str(int(value.timestamp()))


def content_fingerprint(
    *,
    message_id: str,
    date: dt.datetime | None,
    from_address: str,
    subject: str,
    to: Sequence[Mapping[str, Any]],
    cc: Sequence[Mapping[str, Any]],
    body_text: str,
    attachments: Iterable[tuple[str, int]],
) -> str:
    digest = hashlib.sha256()
    for part in (
        message_id,
        _when(date),
        from_address[:FROM_ADDRESS_LIMIT].strip().lower(),
        " ".join(subject.split()),
        "\x1f".join(_addresses(to)),
        "\x1f".join(_addresses(cc)),
        " ".join(body_text.split()),
        "\x1f".join(f"{name}\x1e{size}" for name, size in sorted(attachments)),
    ):
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()[:32]


def dedupe_key(message_id: str, fingerprint: str) -> str:
    return f"{message_id[:MESSAGE_ID_LIMIT]}#{fingerprint}"


def dedupe_key_for_parsed(parsed: ParsedMessage) -> str:
    fingerprint = content_fingerprint(
        message_id=parsed.message_id[:998],
        date=parsed.date,
        from_address=parsed.from_.address if parsed.from_ else "",
        subject=parsed.subject,
        to=[a.as_dict() for a in parsed.to],
        cc=[a.as_dict() for a in parsed.cc],
        body_text=parsed.body_text,
        attachments=[(a.filename[:512], a.size) for a in parsed.attachments],
    )
    return dedupe_key(parsed.message_id, fingerprint)


def dedupe_key_for_row(row: Mapping[str, Any], attachments: Iterable[tuple[str, int]]) -> str:
    """The same key from a stored Message's values (the migration from Message-ID-only keys)."""
    fingerprint = content_fingerprint(
        message_id=str(row["message_id"] or ""),
        date=row["date"],
        from_address=str(row["from_address"] or ""),
        subject=str(row["subject"] or ""),
        to=row["to"] if isinstance(row["to"], list) else [],
        cc=row["cc"] if isinstance(row["cc"], list) else [],
        body_text=str(row["body_text"] or ""),
        attachments=attachments,
    )
    return dedupe_key(str(row["message_id"] or ""), fingerprint)
