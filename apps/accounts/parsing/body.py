"""The MIME body: structure walk, transfer encodings, text/HTML bodies and attachments."""

from __future__ import annotations

import binascii
import email
import email.policy
import mimetypes
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import Message

from apps.accounts.parsing.charsets import _clean, _decode_bytes
from apps.accounts.parsing.headers import (
    _ANGLE_ID,
    _b64decode,
    _decode_text_header,
    _decode_words,
    _Envelope,
    _header_value,
)
from apps.accounts.parsing.html import _html_to_text, render_html, strip_tags
from apps.accounts.parsing.limits import (
    MAX_BOUNDARY_LINES,
    MAX_DEPTH,
    MAX_PARTS,
    PARSE_TIME_BUDGET_SECONDS,
    SNIPPET_CHARS,
)
from apps.accounts.parsing.params import _parse_params
from apps.accounts.parsing.results import ParsedAttachment, ParsedMessage

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
                disposition=disposition[:32],
                is_crypto_part=_is_crypto_part(leaf),
            )
        )

    if text is not None:
        result.body_text = text.replace("\r\n", "\n")
    if html is not None:
        html = html.replace("\r\n", "\n")

        def over_budget() -> bool:
            return time.monotonic() - started > PARSE_TIME_BUDGET_SECONDS

        rendered = render_html(html, errors, over_budget=over_budget)
        result.body_html = rendered or ""
        if text is None:
            # HTML that could not be rendered is not parsed again for its text: a linear tag strip instead.
            parseable = rendered is not None and not over_budget()
            result.body_text = _html_to_text(html, errors) if parseable else strip_tags(html)
    if result.body_text:
        result.snippet = " ".join(result.body_text[: SNIPPET_CHARS * 20].split())[:SNIPPET_CHARS]


def _is_crypto_part(leaf: _Leaf) -> bool:
    """The second child of a multipart/signed (its signature) or any child of a multipart/encrypted (RFC 1847)."""
    position = leaf.ref.rsplit(".", 1)[-1]
    return leaf.parent_type == "multipart/encrypted" or (leaf.parent_type == "multipart/signed" and position == "2")


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
