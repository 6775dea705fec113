"""Tags and the server's labels: the names, the IMAP keyword ⇄ tag mapping, and the writes sync makes.

A tag is one token of the search syntax (`tag:name`). On an IMAP server it is a keyword (a FLAGS atom that
does not start with a backslash); in Gmail a user label; in Outlook a category. Locations keep the server's
labels in keyword form (Gmail labels and Outlook categories through `label_to_keyword`), so one diff serves
all three. A keyword is an IMAP atom: ASCII without spaces,
controls or ( ) { % * " \\ ]. The mapping is exact and reversible, in the spirit of RFC 3501's modified UTF-7
for mailbox names (Thunderbird writes non-ASCII tag keys the same way): characters an atom may hold stay as
they are, "&" is "&-", and every other run (non-ASCII, atom-specials) is "&" + modified BASE64 of its UTF-16
+ "-". So "Über (alt)" is "&ANw-ber&ACg-alt&ACk-" and comes back as "Über (alt)". A keyword that is not
valid modified UTF-7 (another client's "R&D") is taken as written.

Protocol keywords that are state rather than labels (the IANA IMAP keyword registry's $Forwarded, $MDNSent,
$Junk, …) never become tags, and no tag is written back as one.
"""

from __future__ import annotations

import base64
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from django.db import transaction

from apps.accounts.models import MailTag, MessageTag

TAG_MAX_LENGTH = 64
# A tag is one token of the search syntax (tag:name): no spaces or quotes, and something to read.
TAG_RE = re.compile(r'[^\s"]+')

# IANA "IMAP and JMAP Keywords" registry entries (and the pre-registry Junk/NonJunk) that record a message's
# state for the protocol or a filter: not labels a user gave it. Compared case-insensitively, as servers do.
PROTOCOL_KEYWORDS = frozenset(
    keyword.casefold()
    for keyword in (
        "$Forwarded",
        "$MDNSent",
        "$Junk",
        "$NotJunk",
        "$Phishing",
        "$HasAttachment",
        "$HasNoAttachments",
        "$Submitted",
        "NonJunk",
        "Junk",
    )
)
# ATOM-CHAR (RFC 3501 §9) minus "&", which starts an encoded run.
_ATOM_SAFE = frozenset(chr(c) for c in range(0x21, 0x7F)) - set('(){%*"\\]&')


class InvalidTag(ValueError):
    pass


def tag_key(name: str) -> str:
    """The form tags are compared in: NFC, then casefolded (SQLite's lower() folds ASCII letters only)."""
    return unicodedata.normalize("NFC", name).casefold()


def clean_tag_name(name: str) -> str:
    cleaned = unicodedata.normalize("NFC", (name or "").strip())
    if not cleaned:
        raise InvalidTag("A tag needs a name, e.g. taxes")
    if len(cleaned) > TAG_MAX_LENGTH:
        raise InvalidTag(f"A tag is at most {TAG_MAX_LENGTH} characters long")
    if not TAG_RE.fullmatch(cleaned) or not any(c.isalnum() for c in cleaned):
        raise InvalidTag(f"{cleaned!r} cannot be a tag: use letters or digits, no spaces or quotes (e.g. taxes-2024)")
    return cleaned


# -- IMAP keywords ---------------------------------------------------------------------------------------


def _encode_run(run: str) -> str:
    packed = base64.b64encode(run.encode("utf-16-be")).decode("ascii").rstrip("=")
    return "&" + packed.replace("/", ",") + "-"


def tag_to_keyword(name: str) -> str:
    """The IMAP keyword a tag is written as (see the module docstring)."""
    out: list[str] = []
    run: list[str] = []
    for char in name:
        if char in _ATOM_SAFE:
            if run:
                out.append(_encode_run("".join(run)))
                run = []
            out.append(char)
        elif char == "&" and not run:
            out.append("&-")
        else:
            run.append(char)
    if run:
        out.append(_encode_run("".join(run)))
    return "".join(out)


def label_to_keyword(name: str) -> str:
    """A provider label (Gmail) that is a tag, in the keyword form locations keep. Such a label is never state, so
    one named like a protocol keyword ("Junk") gets its first character encoded: it still reads back as its name
    but is not taken for the protocol keyword."""
    keyword = tag_to_keyword(name)
    if keyword.casefold() in PROTOCOL_KEYWORDS:
        keyword = _encode_run(name[0]) + tag_to_keyword(name[1:])
    return keyword


def _decode_keyword(keyword: str) -> str | None:
    """Modified UTF-7 back to text, or None when the keyword is not valid modified UTF-7."""
    out: list[str] = []
    i = 0
    while i < len(keyword):
        char = keyword[i]
        if char != "&":
            out.append(char)
            i += 1
            continue
        end = keyword.find("-", i + 1)
        if end < 0:
            return None
        packed = keyword[i + 1 : end]
        if not packed:
            out.append("&")
        else:
            if not re.fullmatch(r"[A-Za-z0-9+,]+", packed):
                return None
            raw = packed.replace(",", "/")
            try:
                decoded = base64.b64decode(raw + "=" * (-len(raw) % 4), validate=True)
                text = decoded.decode("utf-16-be")
            except (ValueError, UnicodeDecodeError):
                return None
            out.append(text)
        i = end + 1
    return "".join(out)


def is_label_keyword(flag: bytes | str) -> bool:
    """A FLAGS item that is a user's label: not a system flag (\\Seen …), not a protocol keyword."""
    text = flag.decode("ascii", "replace") if isinstance(flag, bytes) else str(flag)
    return bool(text) and not text.startswith("\\") and text.casefold() not in PROTOCOL_KEYWORDS


def keyword_to_tag(keyword: str) -> str | None:
    """The tag a server keyword stands for, or None when it is state (a protocol keyword) or cannot be a tag
    (too long, or decoding to spaces or quotes)."""
    if not is_label_keyword(keyword):
        return None
    decoded = _decode_keyword(keyword)
    try:
        return clean_tag_name(decoded if decoded is not None else keyword)
    except InvalidTag:
        return None


def label_keywords(flags: Iterable[bytes | str]) -> tuple[str, ...]:
    """The keywords among FLAGS that are labels (become tags), sorted, as the server spelled them."""
    found: set[str] = set()
    for flag in flags:
        text = flag.decode("ascii", "replace") if isinstance(flag, bytes) else str(flag)
        if is_label_keyword(text) and keyword_to_tag(text) is not None:
            found.add(text)
    return tuple(sorted(found))


def keyword_refusal(name: str) -> str:
    """Why a tag cannot be written to an IMAP server as a keyword ("" when it can)."""
    keyword = tag_to_keyword(name)
    if keyword.casefold() in PROTOCOL_KEYWORDS:
        return (
            f"The tag {name!r} is the IMAP keyword {keyword}, which mail servers and clients read as a message state "
            "(not a label): it is kept here only. Choose another name to have it on the server."
        )
    return ""


# -- tag rows (the sync and the actions write through these) ---------------------------------------------


def attach_tags(*, owner_id: Any, tags: dict[int, set[str]]) -> None:
    """message pk → tag names to add (a name already on the message is left as it is)."""
    wanted = {name for names in tags.values() for name in names}
    if not wanted:
        return
    with transaction.atomic():
        by_key: dict[str, MailTag] = {}
        for name in sorted(wanted):
            key = tag_key(name)
            if key not in by_key:
                by_key[key], _ = MailTag.objects.get_or_create(owner_id=owner_id, key=key, defaults={"name": name})
        MessageTag.objects.bulk_create(
            [
                MessageTag(tag=by_key[tag_key(name)], message_id=message_id)
                for message_id, names in tags.items()
                for name in names
            ],
            ignore_conflicts=True,
        )


def detach_tags(*, owner_id: Any, tags: dict[int, set[str]]) -> int:
    """message pk → tag names to take off; a tag no message carries any more is gone (as in notmuch)."""
    removed = 0
    keys = {tag_key(name) for names in tags.values() for name in names}
    if not keys:
        return 0
    with transaction.atomic():
        rows = {tag.key: tag for tag in MailTag.objects.select_for_update().filter(owner_id=owner_id, key__in=keys)}
        for message_id, names in tags.items():
            ids = [rows[tag_key(name)].pk for name in names if tag_key(name) in rows]
            if ids:
                removed += MessageTag.objects.filter(message_id=message_id, tag_id__in=ids).delete()[0]
        for tag in rows.values():
            if not MessageTag.objects.filter(tag=tag).exists():
                tag.delete()
    return removed
