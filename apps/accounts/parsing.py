"""RFC 822 / MIME parsing for every provider: fast, defensive, never raises on bad input.

Contract used by the rest of the app (see apps/accounts/store.py):
`parse_message(raw)` always returns a ParsedMessage; when something could not be parsed fully,
`parse_error` says what, and whatever could be recovered (at least the raw headers) is filled in.

Why it looks the way it does:
- The top-level header block is split with one regex and decoded here (RFC 2047 encoded words, RFC 2231
  parameters, raw 8-bit RFC 6532 bytes, charset fallbacks instead of exceptions). The stdlib's modern
  policies are ~30x slower and can take seconds on pathological headers; even compat32's line-by-line
  feed parser costs more than everything else together on plain mail.
- The stdlib parser (`policy.compat32`) is only used for multipart/message structure, and it only sees
  the top-level Content-Type and the body. A single-part message never goes through it.
- Everything is capped *before* the stdlib sees it (message size, header block size, per-value length,
  boundary lines), and the part walk has a time budget, so one hostile message cannot stall a sync.
- Output strings never contain NUL or lone surrogates, so they are always storable in SQLite/PostgreSQL.

bench/parse.py measures it on the Enron corpus (target: >= 3,000 msg/s on one core).
"""

from __future__ import annotations

import binascii
import codecs
import datetime as dt
import email
import email.policy
import functools
import hashlib
import mimetypes
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.message import Message
from email.utils import getaddresses, parsedate_to_datetime
from urllib.parse import unquote_to_bytes

import nh3
from inscriptis import get_text

# Caps that keep one pathological message from stalling a sync.
MAX_MESSAGE_BYTES = 50 * 1024 * 1024
MAX_HEADER_BYTES = 256 * 1024
PARSE_TIME_BUDGET_SECONDS = 5.0
SNIPPET_CHARS = 200

MAX_HEADER_VALUE_CHARS = 64 * 1024  # one header value (a long To: list fits; a 2 MB Subject does not)
MAX_PARTS = 1000  # MIME leaves looked at per message
MAX_DEPTH = 40  # multipart nesting
MAX_BOUNDARY_LINES = 5 * MAX_PARTS  # "\n--" lines in a multipart body handed to the stdlib parser
MAX_HTML_TO_TEXT_CHARS = 512 * 1024  # inscriptis (~1 s/MB) is the slowest step; huge HTML is cut first
MAX_RECEIVED_TRIED = 20  # Received headers tried (from the last) when the Date header is unusable
MAX_ERROR_CHARS = 2000


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


def parse_message(raw: bytes, *, keep_attachment_payloads: bool = True) -> ParsedMessage:
    """Parse one raw RFC 822 message. Never raises; problems are summarised in `parse_error`."""
    started = time.monotonic()
    errors: list[str] = []
    try:
        data = _coerce_bytes(raw)
    except Exception as exc:  # a caller bug (not bytes at all) still must not break a sync batch
        data = b""
        errors.append(f"input is not bytes: {type(raw).__name__}: {exc}")
    result = ParsedMessage(size=len(data), raw_sha256=hashlib.sha256(data).hexdigest())
    try:
        _parse_into(result, data, keep_attachment_payloads, errors, started)
    except Exception as exc:  # includes RecursionError/MemoryError from the stdlib on hostile nesting
        errors.append(f"parse failed: {type(exc).__name__}: {exc}")
        if not result.raw_headers:
            try:
                result.raw_headers = _decode_raw_headers(
                    _split_header_block(data[:MAX_MESSAGE_BYTES])[0][:MAX_HEADER_BYTES]
                )
            except Exception as inner:
                errors.append(f"raw headers unavailable: {type(inner).__name__}")
    if errors:
        result.parse_error = _clean("; ".join(dict.fromkeys(errors)))[:MAX_ERROR_CHARS]
    return result


# --- pipeline -------------------------------------------------------------------------------------


def _coerce_bytes(raw: object) -> bytes:
    if isinstance(raw, bytes):
        return raw
    if isinstance(raw, str):
        return raw.encode("utf-8", "surrogateescape")
    if isinstance(raw, bytearray | memoryview):
        return bytes(raw)
    raise TypeError("expected bytes")


def _parse_into(result: ParsedMessage, data: bytes, keep_payloads: bool, errors: list[str], started: float) -> None:
    if not data.strip():
        errors.append("empty message")
        return
    if len(data) > MAX_MESSAGE_BYTES:
        data = data[:MAX_MESSAGE_BYTES]
        errors.append(f"message truncated to {MAX_MESSAGE_BYTES} bytes")
    header_block, separator, body_start = _split_header_block(data)
    if len(header_block) > MAX_HEADER_BYTES:
        cut = header_block.rfind(b"\n", 0, MAX_HEADER_BYTES)
        header_block = header_block[: cut + 1] if cut > 0 else header_block[:MAX_HEADER_BYTES] + b"\n"
        errors.append(f"header block truncated to {MAX_HEADER_BYTES} bytes")
    result.raw_headers = _decode_raw_headers(header_block)

    fields, leftover = _read_header_block(header_block, errors)
    body = data[body_start:]
    if leftover:
        body = leftover + separator + body
    envelope = _Envelope.collect(fields)
    hint = _fill_headers(result, envelope, errors)
    top_headers = {key: _header_value(value, key, errors, hint) for key, value in envelope.content.items()}
    _fill_body(result, envelope, top_headers, body, keep_payloads, errors, started, hint)


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
        return cls(single=single, lists=lists, content=content, content_type_raw=content.get("content-type", b""))


def _decode_raw_headers(block: bytes) -> str:
    try:
        text = block.decode("utf-8")
    except UnicodeDecodeError:
        text = block.decode("cp1252", "replace")
    return _clean(text)


# --- headers --------------------------------------------------------------------------------------

_SINGLE_HEADERS = {name.encode(): name for name in ("subject", "date", "message-id", "in-reply-to")}
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
        value = value[:MAX_HEADER_VALUE_CHARS]
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


# --- charsets -------------------------------------------------------------------------------------

# Labels mailers use that Python does not know, or where the superset is what is really sent.
_CHARSET_ALIASES = {
    "ks_c_5601-1987": "cp949",
    "ks_c_5601": "cp949",
    "euc-kr": "cp949",
    "euc_kr": "cp949",
    "shift_jis": "cp932",
    "shift-jis": "cp932",
    "sjis": "cp932",
    "x-sjis": "cp932",
    "iso-2022-jp": "iso2022_jp_ext",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "x-gbk": "gb18030",
    "big5": "big5hkscs",
    "iso-8859-8-i": "iso-8859-8",
    "iso-8859-6-i": "iso-8859-6",
    "windows-874": "cp874",
    "x-mac-roman": "mac-roman",
    "unicode-1-1-utf-7": "utf-7",
    "x-unicode20utf8": "utf-8",
    "utf8mb4": "utf-8",
}
# Codecs Python knows that are not character sets a mail may legitimately declare.
_REJECTED_CODECS = frozenset(
    {
        "base64",
        "bz2",
        "hex",
        "idna",
        "punycode",
        "quopri",
        "raw-unicode-escape",
        "rot-13",
        "undefined",
        "unicode-escape",
        "uu",
        "zlib",
    }
)


@functools.lru_cache(maxsize=512)
def _codec(charset: str) -> str | None:
    label = charset.strip().strip("\"'").lower()
    if not label or len(label) > 64:
        return None
    label = _CHARSET_ALIASES.get(label, label)
    for candidate in (label, label.removeprefix("x-"), label.replace("windows-", "cp"), label.replace("-", "")):
        try:
            name = codecs.lookup(candidate).name
        except (LookupError, ValueError):
            continue
        return None if name in _REJECTED_CODECS else name
    return None


# Labels that in practice mean "some Western 8-bit text or UTF-8": mail clients mislabel these constantly, and
# valid UTF-8 with non-ASCII bytes is practically never intended as Latin-1.
_WESTERN_CODECS = frozenset({"ascii", "utf-8", "iso8859-1", "latin-1", "cp1252"})
# Charsets whose pure-ASCII bytes are not ASCII text (ISO-2022-JP is 7-bit escape sequences).
_NOT_ASCII_COMPATIBLE = frozenset(
    {
        "iso2022_jp",
        "iso2022_jp_1",
        "iso2022_jp_2",
        "iso2022_jp_2004",
        "iso2022_jp_3",
        "iso2022_jp_ext",
        "iso2022_kr",
        "utf-7",
        "hz",
        "utf-16",
        "utf-16-be",
        "utf-16-le",
        "utf-32",
        "utf-32-be",
        "utf-32-le",
    }
)


def _decode_bytes(data: bytes, charset: str) -> str:
    """Bytes to text, never raising: UTF-8/cp1252/latin-1 for Western labels, else the declared charset."""
    codec = _codec(charset) if charset else None
    if data.isascii() and codec not in _NOT_ASCII_COMPATIBLE:
        return data.decode("ascii")
    if codec is None or codec in _WESTERN_CODECS:
        return _decode_fallback(data)
    try:
        return data.decode(codec)
    except (UnicodeDecodeError, LookupError, ValueError):
        pass
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        return data.decode(codec, "replace")  # mostly right beats all wrong for a CJK text with one bad byte
    except (LookupError, ValueError):
        return _decode_fallback(data)


def _decode_fallback(data: bytes) -> str:
    """UTF-8, then cp1252 (what "iso-8859-1" and unlabelled 8-bit text almost always is), then latin-1."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        return data.decode("latin-1", "replace")


def _clean(text: str) -> str:
    """No NULs (PostgreSQL rejects them) and no lone surrogates (no database can encode them)."""
    if "\x00" in text:
        text = text.replace("\x00", "")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = text.encode("utf-8", "replace").decode("utf-8")
    return text


# --- MIME parameters ------------------------------------------------------------------------------

_PARAM = re.compile(r';\s*([^\s=;"]+)\s*=\s*("(?:[^"\\]|\\.)*"?|[^;]*)')
_QUOTED_PAIR = re.compile(r"\\(.)")


def _parse_params(value: str) -> tuple[str, dict[str, str]]:
    """(main value lowercased, parameters) with RFC 2231 continuations and charsets resolved."""
    main, semicolon, rest = value.partition(";")
    params: dict[str, str] = {}
    if not semicolon:
        return main.strip().lower(), params
    extended: dict[str, list[tuple[int, bool, str]]] = {}
    for match in _PARAM.finditer(";" + rest):
        key = match.group(1).lower()
        raw = match.group(2).strip()
        if raw.startswith('"'):
            raw = raw[1:-1] if len(raw) > 1 and raw.endswith('"') else raw[1:]
            if "\\" in raw:
                raw = _QUOTED_PAIR.sub(r"\1", raw)
        if "*" in key:
            base, _, section = key.partition("*")
            number = section.rstrip("*")
            encoded = section.endswith("*") or section == ""
            index = int(number) if number.isdigit() and len(number) < 5 else 0
            extended.setdefault(base, []).append((index, encoded, raw))
        elif key not in params:
            params[key] = raw
    for base, sections in extended.items():
        sections.sort(key=lambda item: item[0])
        charset = ""
        buffer = bytearray()
        for position, (_, encoded, text) in enumerate(sections):
            if encoded:
                if position == 0 and text.count("'") >= 2:
                    charset, _, text = text.split("'", 2)
                buffer.extend(unquote_to_bytes(text))
            else:
                buffer.extend(text.encode("utf-8", "surrogateescape"))
        params[base] = _decode_bytes(bytes(buffer), charset)
    return main.strip().lower(), params


# --- body and attachments -------------------------------------------------------------------------

_HTML_TAGS = frozenset(
    {
        *nh3.ALLOWED_TAGS,
        "font",
        "tfoot",
        "section",
        "main",
        "address",
        "big",
        "label",
    }
)
_HTML_ATTRIBUTES: dict[str, set[str]] = {
    **{tag: set(attrs) for tag, attrs in nh3.ALLOWED_ATTRIBUTES.items()},
    "*": {"style", "align", "valign", "dir", "lang", "title", "width", "height", "bgcolor"},
    "a": {"href", "hreflang", "title", "name"},
    "img": {"src", "alt", "width", "height", "align", "border", "title"},
    "table": {"align", "summary", "border", "cellpadding", "cellspacing", "width", "bgcolor"},
    "td": {"colspan", "rowspan", "headers", "align", "valign", "width", "height", "bgcolor", "nowrap"},
    "th": {"colspan", "rowspan", "headers", "scope", "align", "valign", "width", "bgcolor", "nowrap"},
    "font": {"color", "face", "size"},
}
_STYLE_PROPERTIES = frozenset(
    {
        "color",
        "background-color",
        "font",
        "font-family",
        "font-size",
        "font-style",
        "font-weight",
        "text-align",
        "text-decoration",
        "text-indent",
        "text-transform",
        "line-height",
        "letter-spacing",
        "white-space",
        "vertical-align",
        "width",
        "max-width",
        "min-width",
        "height",
        "margin",
        "margin-top",
        "margin-bottom",
        "margin-left",
        "margin-right",
        "padding",
        "padding-top",
        "padding-bottom",
        "padding-left",
        "padding-right",
        "border",
        "border-top",
        "border-bottom",
        "border-left",
        "border-right",
        "border-color",
        "border-style",
        "border-width",
        "border-collapse",
        "border-spacing",
        "border-radius",
        "list-style-type",
    }
)
_HTML_CLEANER = nh3.Cleaner(
    tags=set(_HTML_TAGS),
    clean_content_tags={"script", "style", "title", "iframe", "object", "embed", "textarea", "select", "noscript"},
    attributes=_HTML_ATTRIBUTES,
    link_rel="noopener noreferrer",
    url_schemes={"http", "https", "mailto", "tel", "cid", "ftp"},
    filter_style_properties=set(_STYLE_PROPERTIES),
    strip_comments=True,
)
_TAG = re.compile(r"<[^>]*>")
_BODY_TYPES = frozenset({"text/plain", "text/html"})
_MESSAGE_TYPES = frozenset({"message/rfc822", "message/global"})
_STRUCTURE_DEFECTS = frozenset(
    {"NoBoundaryInMultipartDefect", "StartBoundaryNotFoundDefect", "MultipartInvariantViolationDefect"}
)
_EXTENSIONS = {
    "message/rfc822": ".eml",
    "message/global": ".eml",
    "text/plain": ".txt",
    "text/html": ".html",
    "text/calendar": ".ics",
    "image/jpeg": ".jpg",
    "image/jpg": ".jpg",
    "image/pjpeg": ".jpg",
    "application/octet-stream": ".bin",
    "application/pgp-signature": ".asc",
    "application/pgp-encrypted": ".asc",
    "application/pkcs7-signature": ".p7s",
    "application/x-pkcs7-signature": ".p7s",
    "application/pkcs7-mime": ".p7m",
    "message/delivery-status": ".txt",
}
_UNSAFE_FILENAME = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(slots=True)
class _Leaf:
    headers: dict[str, str]  # the part's Content-* headers, decoded
    ref: str  # IMAP part number
    parent_type: str
    part: Message | None  # None: a single-part message, whose body we never hand to the stdlib
    body: bytes = b""  # the still-encoded body when part is None


def _fill_body(
    result: ParsedMessage,
    envelope: _Envelope,
    top_headers: dict[str, str],
    body: bytes,
    keep_payloads: bool,
    errors: list[str],
    started: float,
    hint: str,
) -> None:
    top_type = _parse_params(top_headers.get("content-type", ""))[0]
    if top_type.startswith(("multipart/", "message/")):
        # Only the structure needs the stdlib parser, so it sees just the Content-Type and the body.
        body = _cap_boundary_lines(body, errors)
        synthetic = b"Content-Type: " + envelope.content_type_raw + b"\n\n" + body
        try:
            root = email.message_from_bytes(synthetic, policy=email.policy.compat32)
        except RecursionError:  # the stdlib parser recurses once per nesting level
            errors.append("MIME structure nested too deeply to parse; body skipped")
            return
        leaves = _leaves(root, top_headers, errors, started, hint)
    else:
        leaves = iter((_Leaf(top_headers, "1", "", None, body),))

    text: str | None = None
    html: str | None = None
    for leaf in leaves:
        headers = leaf.headers
        content_type, type_params = _parse_params(headers.get("content-type", ""))
        if content_type.count("/") != 1 or " " in content_type:
            content_type = leaf.part.get_default_type() if leaf.part is not None else "text/plain"
        if content_type.startswith("multipart/"):
            content_type = "text/plain"  # only reached for broken multiparts, whose body we read as text
        disposition, disposition_params = _parse_params(headers.get("content-disposition", ""))
        filename = disposition_params.get("filename") or type_params.get("name") or ""
        if filename:
            filename = _safe_filename(_decode_words(filename))
        if content_type in _BODY_TYPES and disposition != "attachment" and not filename:
            if content_type == "text/plain" and text is None:
                text = _clean(_decode_bytes(_leaf_bytes(leaf), type_params.get("charset", "")))
            elif content_type == "text/html" and html is None:
                html = _clean(_decode_bytes(_leaf_bytes(leaf), type_params.get("charset", "")))
            continue
        is_message = content_type.startswith("message/") and leaf.part is not None
        payload = _message_bytes(leaf.part, headers) if is_message and leaf.part else _leaf_bytes(leaf)
        content_id = "".join(_ANGLE_ID.sub(r"\1", headers.get("content-id", "")).split())
        if not filename:
            stem = _inner_subject(leaf.part, hint) if leaf.part and content_type in _MESSAGE_TYPES else ""
            extension = _EXTENSIONS.get(content_type) or mimetypes.guess_extension(content_type) or ".bin"
            stem = _safe_filename(stem)[:120]
            filename = stem + extension if stem else f"attachment-{leaf.ref}{extension}"
        is_inline = bool(content_id) and (
            disposition == "inline" or (not disposition and leaf.parent_type == "multipart/related")
        )
        result.attachments.append(
            ParsedAttachment(
                filename=filename,
                mime_type=content_type[:255],
                size=len(payload),
                content_id=content_id,
                is_inline=is_inline,
                part_ref=leaf.ref,
                payload=payload if keep_payloads else None,
            )
        )

    if text is not None:
        result.body_text = text.replace("\r\n", "\n")
    if html is not None:
        html = html.replace("\r\n", "\n")
        result.body_html = _sanitize_html(html, errors)
        if text is None:
            if time.monotonic() - started > PARSE_TIME_BUDGET_SECONDS:
                errors.append(f"time budget of {PARSE_TIME_BUDGET_SECONDS}s exceeded; no text derived from HTML")
            else:
                result.body_text = _html_to_text(html, errors)
    if result.body_text:
        result.snippet = " ".join(result.body_text[: SNIPPET_CHARS * 20].split())[:SNIPPET_CHARS]


def _cap_boundary_lines(body: bytes, errors: list[str]) -> bytes:
    """Cut a body with absurdly many boundary-like lines before the stdlib spends ~30 us on each part."""
    if body.count(b"\n--") <= MAX_BOUNDARY_LINES:
        return body
    position = 0
    for _ in range(MAX_BOUNDARY_LINES):
        position = body.find(b"\n--", position) + 1
    errors.append(f"MIME body cut after {MAX_BOUNDARY_LINES} boundary lines")
    return body[:position]


def _leaves(
    root: Message, top_headers: dict[str, str], errors: list[str], started: float, hint: str
) -> Iterator[_Leaf]:
    """Leaf parts in document order with their IMAP part numbers; message/* parts are leaves."""
    children = _children(root, errors)
    if children is None:
        # message/* at the top, or a multipart whose boundary never shows up: one body, part "1".
        yield _Leaf(top_headers, "1", "", root)
        return
    parent_type = root.get_content_type()
    stack = [(child, str(index), 1, parent_type) for index, child in reversed(list(enumerate(children, 1)))]
    seen = 0
    while stack:
        part, ref, depth, parent_type = stack.pop()
        seen += 1
        if seen > MAX_PARTS:
            errors.append(f"stopped after {MAX_PARTS} MIME parts")
            return
        if time.monotonic() - started > PARSE_TIME_BUDGET_SECONDS:
            errors.append(f"time budget of {PARSE_TIME_BUDGET_SECONDS}s exceeded; stopped at part {ref}")
            return
        children = _children(part, errors)
        if children is not None and depth >= MAX_DEPTH:
            errors.append(f"MIME parts nested deeper than {MAX_DEPTH} levels skipped")
            continue
        if children is None:
            yield _Leaf(_part_headers(part, errors, hint), ref, parent_type, part)
            continue
        own_type = part.get_content_type()
        stack.extend(
            (child, f"{ref}.{index}", depth + 1, own_type) for index, child in reversed(list(enumerate(children, 1)))
        )


def _children(part: Message, errors: list[str]) -> list[Message] | None:
    if part.get_content_maintype() != "multipart":
        return None
    for defect in part.defects:
        name = type(defect).__name__
        if name in _STRUCTURE_DEFECTS:
            errors.append(f"malformed MIME structure: {name}")
    payload = getattr(part, "_payload", None)
    if not isinstance(payload, list):
        return None
    return [child for child in payload if isinstance(child, Message)]


def _part_headers(part: Message, errors: list[str], hint: str) -> dict[str, str]:
    headers: dict[str, str] = {}
    for name, value in part.raw_items():
        key = name.lower()
        if key.startswith("content-") and key not in headers:
            headers[key] = _header_value(value, key, errors, hint)
    return headers


def _leaf_bytes(leaf: _Leaf) -> bytes:
    """The decoded (Content-Transfer-Encoding undone) bytes of a leaf."""
    data = leaf.body if leaf.part is None else _raw_payload(leaf.part)
    return _undo_transfer_encoding(data, leaf.headers.get("content-transfer-encoding", ""))


def _raw_payload(part: Message) -> bytes:
    """A leaf's body exactly as it was on the wire.

    Read from the parsed tree directly: compat32's get_payload() re-decodes 8-bit bodies with the declared
    charset (mangling them for us, and raising ValueError on some charset names).
    """
    payload = getattr(part, "_payload", None)
    if isinstance(payload, bytes):
        return payload
    if not isinstance(payload, str):
        return b""
    try:
        return payload.encode("ascii", "surrogateescape")
    except UnicodeEncodeError:
        return payload.encode("utf-8", "surrogateescape")


def _undo_transfer_encoding(data: bytes, encoding: str) -> bytes:
    # Lenient about spelling: "base64 ", "Base64;" and "quoted-printable\t" all occur in the wild.
    encoding = encoding.partition(";")[0].strip().lower()
    try:
        if encoding == "base64":
            return _b64decode(data)
        if encoding == "quoted-printable":
            return binascii.a2b_qp(data)
        if encoding in ("x-uuencode", "uuencode", "x-uue", "uue"):
            return _uudecode(data)
    except (binascii.Error, ValueError):
        return data
    return data


def _uudecode(data: bytes) -> bytes:
    lines = iter(data.splitlines())
    decoded = bytearray()
    for line in lines:
        if line.startswith(b"begin "):
            break
    else:
        return data
    for line in lines:
        if line.strip() == b"end":
            break
        try:
            decoded.extend(binascii.a2b_uu(line))
        except binascii.Error:
            # Some encoders emit garbage after the last character; trust the length byte instead.
            if line:
                nbytes = ((line[0] - 32) & 63) * 4 // 3
                try:
                    decoded.extend(binascii.a2b_uu(line[:nbytes]))
                except binascii.Error:
                    continue
    return bytes(decoded)


def _message_bytes(part: Message, headers: dict[str, str]) -> bytes:
    payload = getattr(part, "_payload", None)
    if not isinstance(payload, list):
        return _undo_transfer_encoding(_raw_payload(part), headers.get("content-transfer-encoding", ""))
    chunks: list[bytes] = []
    for inner in payload:
        if isinstance(inner, Message):
            try:
                chunks.append(inner.as_bytes())
            except Exception:  # the stdlib generator can choke on what its parser accepted
                chunks.append(b"")
    return b"\n".join(chunks)


def _inner_subject(part: Message, hint: str) -> str:
    payload = getattr(part, "_payload", None)
    if isinstance(payload, list) and payload and isinstance(payload[0], Message):
        for name, value in payload[0].raw_items():
            if name.lower() == "subject":
                return _decode_text_header(_header_value(value, "subject", [], hint))
    return ""


def _safe_filename(name: str) -> str:
    name = name.replace("\\", "/").rsplit("/", 1)[-1]  # a name, never a path
    name = " ".join(_UNSAFE_FILENAME.sub(" ", name).split())
    if not name.strip(". "):
        return ""
    return _clean(name)[:255]


def _sanitize_html(html: str, errors: list[str]) -> str:
    try:
        return _clean(_HTML_CLEANER.clean(html))
    except Exception as exc:
        errors.append(f"HTML could not be sanitized: {type(exc).__name__}")
        return ""


def _html_to_text(html: str, errors: list[str]) -> str:
    if len(html) > MAX_HTML_TO_TEXT_CHARS:
        html = html[:MAX_HTML_TO_TEXT_CHARS]
        errors.append(f"HTML body cut to {MAX_HTML_TO_TEXT_CHARS} characters for text extraction")
    try:
        text = get_text(html)
    except Exception:  # lxml refuses some inputs (control characters); a tag strip is better than nothing
        text = _TAG.sub(" ", html)
    return _clean(text.strip())
