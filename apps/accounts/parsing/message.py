"""parse_message: the pipeline from raw bytes to a ParsedMessage."""

from __future__ import annotations

import hashlib
import re
import time

from apps.accounts.parsing.body import _fill_body
from apps.accounts.parsing.charsets import _clean
from apps.accounts.parsing.headers import (
    _decode_raw_headers,
    _Envelope,
    _fill_headers,
    _header_value,
    _read_header_block,
    _split_header_block,
    _stored_raw_headers,
)
from apps.accounts.parsing.limits import MAX_ERROR_CHARS, MAX_HEADER_BYTES, MAX_MESSAGE_BYTES
from apps.accounts.parsing.results import ParsedMessage


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


def _coerce_bytes(raw: object) -> bytes:
    if isinstance(raw, bytes):
        return raw
    if isinstance(raw, str):
        return raw.encode("utf-8", "surrogateescape")
    if isinstance(raw, bytearray | memoryview):
        return bytes(raw)
    raise TypeError("expected bytes")


_BARE_CR = re.compile(rb"\r(?!\n)")


def _bare_cr_line_endings(data: bytes) -> bool:
    """Lines end with CR alone (no LF before the first CR): the message would otherwise be one header line.
    A stray CR inside an ordinary CRLF or LF message does not count."""
    first_cr = data.find(b"\r")
    if first_cr == -1 or data[first_cr + 1 : first_cr + 2] == b"\n":
        return False
    first_lf = data.find(b"\n")
    return first_lf == -1 or first_cr < first_lf


def _parse_into(result: ParsedMessage, data: bytes, keep_payloads: bool, errors: list[str], started: float) -> None:
    if not data.strip():
        errors.append("empty message")
        return
    if len(data) > MAX_MESSAGE_BYTES:
        data = data[:MAX_MESSAGE_BYTES]
        errors.append(f"message truncated to {MAX_MESSAGE_BYTES} bytes")
    if _bare_cr_line_endings(data):
        data = _BARE_CR.sub(b"\r\n", data)
        errors.append("bare CR line endings (classic Mac OS) read as CRLF")
    header_block, separator, body_start = _split_header_block(data)
    # Every field is read, however big the block: caps apply per field (a 2 MB To: list must not cost the
    # Subject, Message-ID and Date that follow it).
    result.raw_headers = _stored_raw_headers(header_block, errors)

    fields, leftover = _read_header_block(header_block, errors)
    body = data[body_start:]
    if leftover:
        body = leftover + separator + body
    envelope = _Envelope.collect(fields)
    hint = _fill_headers(result, envelope, errors)
    top_headers = {key: _header_value(value, key, errors, hint) for key, value in envelope.content.items()}
    _fill_body(result, envelope, top_headers, body, keep_payloads, errors, started, hint)
