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

from apps.accounts.parsing.limits import (
    MAX_BOUNDARY_LINES,
    MAX_DEPTH,
    MAX_ERROR_CHARS,
    MAX_HEADER_BYTES,
    MAX_HEADER_VALUE_CHARS,
    MAX_HTML_TO_TEXT_CHARS,
    MAX_MESSAGE_BYTES,
    MAX_PARTS,
    MAX_RECEIVED_TRIED,
    PARSE_TIME_BUDGET_SECONDS,
    SNIPPET_CHARS,
)
from apps.accounts.parsing.message import parse_message
from apps.accounts.parsing.results import ParsedAddress, ParsedAttachment, ParsedMessage

__all__ = [
    "MAX_BOUNDARY_LINES",
    "MAX_DEPTH",
    "MAX_ERROR_CHARS",
    "MAX_HEADER_BYTES",
    "MAX_HEADER_VALUE_CHARS",
    "MAX_HTML_TO_TEXT_CHARS",
    "MAX_MESSAGE_BYTES",
    "MAX_PARTS",
    "MAX_RECEIVED_TRIED",
    "PARSE_TIME_BUDGET_SECONDS",
    "SNIPPET_CHARS",
    "ParsedAddress",
    "ParsedAttachment",
    "ParsedMessage",
    "parse_message",
]
