"""The header fields the search operators match, the way notmuch matches them.

notmuch indexes each address of From and of the recipients as the words of "name address" (Xapian splits
"vince.kaminski@enron.com" into vince, kaminski, enron, com), with a gap between two addresses so that a phrase
never runs from one into the next; the subject as its words. `from:kaminski` is then a word of the sender, so
it finds "Vince Kaminski <vince.kaminski@enron.com>" but not vkaminski@aol.com, and several words
(`from:"vince kaminski"`, `to:kaminski@enron.com`) are a phrase.

Here each field is stored as its folded words (apps/search/folding.fold_tokens: the same words and the same
folding the full-text index uses, so `from:Örjan` and `from:orjan` both find Örjan on SQLite and PostgreSQL
alike) with a space on both sides, addresses separated by " | ": a word is the substring " word ", a phrase
" w1 w2 ", a trailing `*` a prefix " wor". Each address also keeps its exact form in angle brackets, which no
pattern of words can match, for `to:me` (the account's own address, not any address that merely contains its
words).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from apps.search.folding import fold, fold_tokens


def exact_address(address: str) -> str:
    """The bracketed form an address is stored with besides its words (the `me` of `to:me`)."""
    return f"<{fold(address.strip()).lower()}>"


# One pass over a whole field: an address in brackets stays whole, other runs of letters and digits are words,
# \x1f ends an address.
_FIELD_TOKEN_RE = re.compile(r"<[^<>\s]+>|[^\W_]+|\x1f")


def address_terms(people: Iterable[tuple[str, str]]) -> str:
    """The stored form of one address field: " name words address words <address> | … " ("" if empty)."""
    entries = [f"{name} {address} {_bracketed(address.strip())}" for name, address in people]
    if not entries:
        return ""
    # Tokenised in one regular-expression pass (a message to 300 people is common in company mail): the same
    # words as fold_tokens gives each "name address".
    tokens = _FIELD_TOKEN_RE.findall(fold("\x1f".join(entries)).lower())
    text = " ".join(tokens).replace("\x1f", "|")
    return f" {text} " if text.strip(" |") else ""


def _bracketed(address: str) -> str:
    return f"<{address}>" if address and " " not in address else ""


def text_terms(text: str) -> str:
    """The stored form of a text field (the subject): " word word … " ("" without words)."""
    words = fold_tokens(text)
    return f" {' '.join(words)} " if words else ""


def people_of(entries: Any) -> list[tuple[str, str]]:
    """(name, address) pairs of a stored recipient list ([{"name": …, "address": …}, …]; anything else: none)."""
    if not isinstance(entries, list):
        return []
    return [
        (str(entry.get("name") or ""), str(entry.get("address") or ""))
        for entry in entries
        if isinstance(entry, Mapping)
    ]


def term_pattern(value: str) -> str:
    """What a typed operator value must appear as in a stored field: its words as a phrase, bounded by spaces;
    a trailing `*` leaves the last word open (a prefix). "" when the value has no letters or digits."""
    words = fold_tokens(value)
    if not words:
        return ""
    phrase = " " + " ".join(words)
    return phrase if value.rstrip().endswith("*") else phrase + " "


@dataclass(frozen=True, slots=True)
class HeaderTerms:
    """A document's operator fields in their stored form (a SearchHeaders row)."""

    sender: str = ""
    to: str = ""
    cc: str = ""
    bcc: str = ""
    subject: str = ""


def message_header_terms(*, from_name: str, from_address: str, to: Any, cc: Any, bcc: Any, subject: str) -> HeaderTerms:
    return HeaderTerms(
        sender=address_terms([(from_name, from_address)]),
        to=address_terms(people_of(to)),
        cc=address_terms(people_of(cc)),
        bcc=address_terms(people_of(bcc)),
        subject=text_terms(subject),
    )


# has:attachment means what it means to notmuch: the message has a part sent with `Content-Disposition:
# attachment`, other than the signature of a signed message (or a part of an encrypted one). Not an inline
# image, nor a text/calendar invitation or a vCard without that disposition. A forwarded message (message/rfc822)
# is not one by itself: notmuch reads it as part of the message and counts the attachments inside it, which the
# store does not keep apart (so a forwarded message's own attachments are not counted here). Parts stored before the
# disposition was recorded (apps.accounts Attachment.disposition NULL) are judged by what is left of it: a
# real file name (the parser names nameless parts "attachment-<part>.<ext>"), not inline, not a signature.
SIGNATURE_TYPES = frozenset(
    {"application/pgp-signature", "application/pkcs7-signature", "application/x-pkcs7-signature"}
)
NAMELESS_PART_RE = re.compile(r"attachment-\d+(?:\.\d+)*\.[a-z0-9]+")


def counts_as_attachment(
    *, disposition: str | None, is_crypto_part: bool, is_inline: bool, mime_type: str, filename: str
) -> bool:
    if is_crypto_part or mime_type.lower().startswith("message/"):
        return False
    if disposition is not None:
        return disposition == "attachment"
    return not (is_inline or mime_type.lower() in SIGNATURE_TYPES or NAMELESS_PART_RE.fullmatch(filename.lower()))


def write_header_rows(cursor: Any, rows: Iterable[tuple[int, HeaderTerms]], *, quote: Any, batch: int = 500) -> None:
    """INSERT the search_headers rows (document id, terms) with plain executemany: the ORM's bulk_create spent more
    time building the statement than SQLite took to run it."""
    columns = ", ".join(quote(name) for name in ("document_id", "sender", "to", "cc", "bcc", "subject"))
    sql = f"INSERT INTO search_headers ({columns}) VALUES (%s, %s, %s, %s, %s, %s)"  # noqa: S608 (constants)
    values = [(pk, t.sender, t.to, t.cc, t.bcc, t.subject) for pk, t in rows]
    for start in range(0, len(values), batch):
        cursor.executemany(sql, values[start : start + batch])
