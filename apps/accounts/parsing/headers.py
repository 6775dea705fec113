"""The top-level header block: split, read, decoded (RFC 2047, raw 8-bit), addresses, ids and dates."""

from __future__ import annotations

import binascii
import datetime as dt
import re
from collections.abc import Iterator
from dataclasses import dataclass
from email.utils import getaddresses, parsedate_to_datetime

from apps.accounts.parsing.charsets import _clean, _codec, _decode_bytes, _decode_fallback
from apps.accounts.parsing.limits import (
    MAX_HEADER_BYTES,
    MAX_HEADER_VALUE_CHARS,
    MAX_RECEIVED_TRIED,
    MAX_STORED_HEADER_FIELD_BYTES,
    MAX_VALUES_PER_HEADER,
)
from apps.accounts.parsing.params import _parse_params
from apps.accounts.parsing.results import ParsedAddress, ParsedMessage


def _split_header_block(data: bytes) -> tuple[bytes, bytes, int]:
    """(header block including its last newline, the blank-line separator, offset where the body starts)."""
    if data.startswith(b"\r\n"):
        return b"", b"\r\n", 2
    if data.startswith(b"\n"):
        return b"", b"\n", 1
    lf = data.find(b"\n\n")
    crlf = data.find(b"\n\r\n")
    if crlf != -1 and (lf == -1 or crlf < lf):
        return data[: crlf + 1], b"\r\n", crlf + 3
    if lf != -1:
        return data[: lf + 1], b"\n", lf + 2
    return data, b"", len(data)


# Obsolete syntax (RFC 5322 section 4.5) allows whitespace before the colon.
_HEADER_FIELD = re.compile(rb"^([\x21-\x39\x3b-\x7e]+)[ \t]*:[ \t]*(.*(?:\n[ \t].*)*)", re.MULTILINE)
# A line that is neither a header, a continuation nor blank (an mbox "From " line counts as junk here).
_JUNK_LINE = re.compile(rb"^(?![ \t])(?![\x21-\x39\x3b-\x7e]+[ \t]*:)[^\n]*[^\s]", re.MULTILINE)


def _read_header_block(block: bytes, errors: list[str]) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """Header fields in order, plus trailing non-header text that belongs to the body.

    Our own reader instead of the stdlib's: it is several times faster, and it skips a stray junk line
    (`quite Delivered-To: ...`) where the stdlib would read everything after it, From and Subject
    included, as body. Junk after the last header is handed back as the start of the body.
    """
    if not _JUNK_LINE.search(block):
        return _HEADER_FIELD.findall(block), b""  # the common case, in one C-level pass
    fields: list[tuple[bytes, bytes]] = []
    position = 0
    for match in _HEADER_FIELD.finditer(block):
        start = match.start()
        if start != position:
            gap = block[position:start]
            is_mbox_from = position == 0 and gap.startswith(b"From ") and gap.count(b"\n") == 1
            if gap.strip() and not is_mbox_from:
                errors.append("skipped malformed header lines")
        fields.append((match.group(1), match.group(2)))
        position = match.end() + 1
    leftover = block[position:]
    if leftover.strip():
        if fields:
            errors.append("malformed header line: the lines after the last header were read as body")
        return fields, leftover
    return fields, b""


@dataclass(slots=True)
class _Envelope:
    single: dict[str, bytes]
    lists: dict[str, list[bytes]]
    content: dict[str, bytes]  # the top-level Content-* headers
    content_type_raw: bytes

    @classmethod
    def collect(cls, fields: list[tuple[bytes, bytes]]) -> _Envelope:
        single: dict[str, bytes] = {}
        lists: dict[str, list[bytes]] = {}
        content: dict[str, bytes] = {}
        for raw_name, value in fields:
            name = raw_name.lower()
            if name in _LIST_HEADERS:
                lists.setdefault(_LIST_HEADERS[name], []).append(value)
            elif name in _SINGLE_HEADERS:
                key = _SINGLE_HEADERS[name]
                if key not in single:
                    single[key] = value
            elif name.startswith(b"content-"):
                key = name.decode("ascii")
                if key not in content:
                    content[key] = value
        for key, values in lists.items():
            if len(values) > MAX_VALUES_PER_HEADER:
                # The last Received is the first hop (used for the date); for the others the first ones count.
                lists[key] = values[-MAX_RECEIVED_TRIED:] if key == "received" else values[:MAX_VALUES_PER_HEADER]
        return cls(single=single, lists=lists, content=content, content_type_raw=content.get("content-type", b""))


def _stored_raw_headers(block: bytes, errors: list[str]) -> str:
    """The header block as stored for display: whole when small, else each field cut, up to MAX_HEADER_BYTES."""
    if len(block) <= MAX_HEADER_BYTES:
        return _decode_raw_headers(block)
    kept: list[bytes] = []
    size = 0
    dropped = 0
    for field in _raw_fields(block):
        if len(field) > MAX_STORED_HEADER_FIELD_BYTES:
            cut = len(field) - MAX_STORED_HEADER_FIELD_BYTES
            field = field[:MAX_STORED_HEADER_FIELD_BYTES].rstrip(b"\r\n") + b" [%d more bytes not stored]\n" % cut
        if size + len(field) > MAX_HEADER_BYTES:
            dropped += 1
            continue
        kept.append(field)
        size += len(field)
    note = (
        f"header block of {len(block)} bytes is over {MAX_HEADER_BYTES}: raw headers stored with each field cut "
        f"to {MAX_STORED_HEADER_FIELD_BYTES} bytes"
    )
    if dropped:
        note += f" and {dropped} fields left out"
    errors.append(note)
    return _decode_raw_headers(b"".join(kept))


def _raw_fields(block: bytes) -> Iterator[bytes]:
    """A header block's fields with their continuation lines, as raw bytes (newlines kept)."""
    current: list[bytes] = []
    for line in block.splitlines(keepends=True):
        if current and line[:1] not in (b" ", b"\t"):
            yield b"".join(current)
            current = []
        current.append(line)
    if current:
        yield b"".join(current)


def _decode_raw_headers(block: bytes) -> str:
    try:
        text = block.decode("utf-8")
    except UnicodeDecodeError:
        text = block.decode("cp1252", "replace")
    return _clean(text)


_SINGLE_HEADERS = {name.encode(): name for name in ("subject", "date", "message-id", "in-reply-to")}
_ADDRESS_HEADERS = frozenset({"from", "to", "cc", "bcc", "reply-to"})
_LIST_HEADERS = {name.encode(): name for name in ("from", "to", "cc", "bcc", "reply-to", "references", "received")}


def _fill_headers(result: ParsedMessage, envelope: _Envelope, errors: list[str]) -> str:
    """Fill the envelope fields; returns the message's declared charset (a hint for raw 8-bit headers)."""
    content_type = _header_value(envelope.content_type_raw, "content-type", errors)
    hint = _parse_params(content_type)[1].get("charset", "") if "charset" in content_type.lower() else ""
    single = {key: _header_value(value, key, errors, hint) for key, value in envelope.single.items()}
    lists = {
        key: [_header_value(value, key, errors, hint) for value in values] for key, values in envelope.lists.items()
    }
    result.subject = _decode_text_header(single.get("subject", ""))
    result.message_id = next(iter(_message_ids(single.get("message-id", ""))), "")
    result.in_reply_to = next(iter(_message_ids(single.get("in-reply-to", ""))), "")
    result.references = _message_ids(" ".join(lists.get("references", ())))
    senders = _addresses(lists.get("from", ()), errors)
    result.from_ = senders[0] if senders else None
    result.to = _addresses(lists.get("to", ()), errors)
    result.cc = _addresses(lists.get("cc", ()), errors)
    result.bcc = _addresses(lists.get("bcc", ()), errors)
    result.reply_to = _addresses(lists.get("reply-to", ()), errors)
    result.date = _message_date(single.get("date", ""), lists.get("received", ()), errors)
    return hint


def _message_date(value: str, received: list[str] | tuple[str, ...], errors: list[str]) -> dt.datetime | None:
    date = _parse_date(value)
    if date is not None and _plausible(date):
        return date
    # The last Received header is the first hop: closest to when the message was actually sent.
    for header in received[: -MAX_RECEIVED_TRIED - 1 : -1]:
        stamp = _parse_date(header.rpartition(";")[2])
        if stamp is not None:
            if value.strip():
                problem = "implausible" if date is not None else "unparseable"
                errors.append(f"{problem} Date header (used the Received date)")
            return stamp
    if value.strip() and date is None:
        errors.append("unparseable Date header")
    return date


def _plausible(date: dt.datetime) -> bool:
    # Spam and broken clocks produce years like 3609; those would sort above every real message.
    return date.year >= 1970 and date <= dt.datetime.now(dt.UTC) + dt.timedelta(days=2)


def _header_value(value: str | bytes, name: str, errors: list[str], hint: str = "") -> str:
    """A raw header value as real text: 8-bit bytes decoded, unfolded, capped, storable."""
    if len(value) > MAX_HEADER_VALUE_CHARS:
        cut = MAX_HEADER_VALUE_CHARS
        if name in _ADDRESS_HEADERS:  # end on a whole address, not half of one
            comma = (
                value.rfind(b",", 0, MAX_HEADER_VALUE_CHARS)
                if isinstance(value, bytes)
                else value.rfind(",", 0, MAX_HEADER_VALUE_CHARS)
            )
            cut = comma if comma > 0 else cut
        value = value[:cut]
        errors.append(f"{name} header truncated to {MAX_HEADER_VALUE_CHARS} characters")
    if isinstance(value, bytes):
        text = value.decode("ascii") if value.isascii() else _decode_8bit(value, hint)
    elif value.isascii():
        text = value
    else:
        # compat32 (sub-part headers) smuggles raw 8-bit bytes as surrogates.
        try:
            text = _decode_8bit(value.encode("ascii", "surrogateescape"), hint)
        except UnicodeEncodeError:
            text = value
    if "\n" in text or "\r" in text:
        text = text.replace("\r", "").replace("\n", "")
    return _clean(text)


def _decode_8bit(data: bytes, hint: str) -> str:
    """Raw 8-bit header bytes: RFC 6532 says UTF-8; older mailers used the body's charset, the next best guess."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    codec = _codec(hint) if hint else None
    if codec is not None and codec not in ("ascii", "utf-8"):
        try:
            return data.decode(codec)
        except (UnicodeDecodeError, LookupError, ValueError):
            pass
    return _decode_fallback(data)


def _decode_text_header(value: str) -> str:
    if not value:
        return ""
    return _clean(" ".join(_decode_words(value).split()))


_ENCODED_WORD = re.compile(r"=\?([^?\s]+)\?([bBqQ])\?([^?]*)\?=")
_NON_BASE64 = re.compile(rb"[^A-Za-z0-9+/]")


def _decode_words(value: str) -> str:
    """RFC 2047 decoding that never fails: bad words stay as written, unknown charsets fall back."""
    if "=?" not in value:
        return value
    out: list[str] = []
    pending = bytearray()
    pending_charset = ""
    position = 0
    after_word = False

    def flush() -> None:
        nonlocal pending_charset
        if pending:
            out.append(_decode_bytes(bytes(pending), pending_charset))
            pending.clear()
        pending_charset = ""

    for match in _ENCODED_WORD.finditer(value):
        gap = value[position : match.start()]
        position = match.end()
        if gap and not (after_word and gap.isspace()):  # whitespace between two encoded words is dropped
            flush()
            out.append(gap)
        charset = match.group(1).partition("*")[0].lower()  # RFC 2231 language suffix
        decoded = _decode_word_payload(match.group(2), match.group(3))
        if decoded is None:
            flush()
            out.append(match.group(0))
            after_word = False
            continue
        if charset != pending_charset:
            flush()  # adjacent words in one charset are joined first: mailers split multibyte characters
        pending_charset = charset
        pending.extend(decoded)
        after_word = True
    flush()
    out.append(value[position:])
    return "".join(out)


def _decode_word_payload(kind: str, text: str) -> bytes | None:
    raw = text.encode("utf-8", "surrogateescape")
    try:
        if kind in "qQ":
            return binascii.a2b_qp(raw, header=True)
        return _b64decode(raw)
    except (binascii.Error, ValueError):
        return None


def _b64decode(data: bytes) -> bytes:
    try:
        return binascii.a2b_base64(data)
    except binascii.Error:
        cleaned = _NON_BASE64.sub(b"", data)
        extra = len(cleaned) % 4
        if extra == 1:
            cleaned = cleaned[:-1]
        elif extra:
            cleaned += b"=" * (4 - extra)
        return binascii.a2b_base64(cleaned)


_ANGLE_ID = re.compile(r"<([^<>]*)>")


def _message_ids(value: str) -> list[str]:
    """Message-IDs in order, deduplicated, without angle brackets or (folding) whitespace."""
    if not value:
        return []
    found = ["".join(part.split()) for part in _ANGLE_ID.findall(value)]
    ids = [item for item in found if item]
    if not ids and "<" not in value:
        # No brackets at all: old mailers write bare ids; keep tokens that look like one.
        tokens = value.replace(",", " ").split()
        ids = [token for token in tokens if "@" in token] or (tokens if len(tokens) == 1 else [])
    return [_clean(item)[:998] for item in dict.fromkeys(ids)]


def _addresses(values: list[str] | tuple[str, ...], errors: list[str]) -> list[ParsedAddress]:
    if not values:
        return []
    joined = ", ".join(values)
    if not joined.strip():
        return []
    pairs = _simple_address_list(joined)
    if pairs is None:
        try:
            # strict=False: the strict 3.13 parser drops the whole list for one stray comma ("To: , a@b").
            pairs = getaddresses([joined], strict=False)
        except RecursionError:  # thousands of nested "(" comments
            errors.append("address list too deeply nested to parse")
            return []
    found: list[ParsedAddress] = []
    for name, address in pairs:
        if name:
            name = _clean(" ".join(_decode_words(name).split())) if "=?" in name else " ".join(name.split())
        address = address.strip()
        if name or address:
            found.append(ParsedAddress(name=name, address=address))
    return found


_ADDRESS_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|[^,"]+|,')
_NEEDS_FULL_PARSER = re.compile(r"[()\\:;]")
_INNER_SPACE = re.compile(r"[^\s,]\s+[^\s,]")


def _simple_address_list(value: str) -> list[tuple[str, str]] | None:
    """The common shapes (`a@b`, `Name <a@b>`, `"Last, First" <a@b>`) without the stdlib's char-by-char parser.

    The stdlib address parser is pure Python and dominated parse time on corporate mail with long To/Cc
    lists. Anything with comments, groups, escapes or odd brackets returns None and goes to the stdlib.
    """
    if _NEEDS_FULL_PARSER.search(value):
        return None
    if '"' not in value and "<" not in value and ">" not in value:
        # Bare address lists (most corporate mail): one C-level scan instead of a per-item loop.
        if _INNER_SPACE.search(value):
            return None
        return [("", item) for item in (piece.strip() for piece in value.split(",")) if item]
    items: list[str] = []
    current: list[str] = []
    for piece in _ADDRESS_TOKEN.findall(value):
        if piece == ",":
            items.append("".join(current))
            current = []
        else:
            current.append(piece)
    items.append("".join(current))
    pairs: list[tuple[str, str]] = []
    for item in items:
        item = item.strip()
        if not item:
            continue
        if item.endswith(">"):
            name, bracket, address = item[:-1].rpartition("<")
            if not bracket or "<" in name or ">" in name or ">" in address or '"' in address:
                return None
            name = name.strip()
            if name.startswith('"'):
                if len(name) < 2 or not name.endswith('"') or '"' in name[1:-1]:
                    return None
                name = name[1:-1]
            elif '"' in name:
                return None
            pairs.append((name, "".join(address.split())))
        elif '"' in item or "<" in item or ">" in item or _INNER_SPACE.search(item):
            return None
        else:
            pairs.append(("", item))
    return pairs


def _parse_date(value: str) -> dt.datetime | None:
    value = value.strip()
    if not value:
        return None
    try:
        parsed = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed
