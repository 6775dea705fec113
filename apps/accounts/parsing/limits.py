"""Caps that keep one pathological message from stalling a sync (see the package docstring)."""

from __future__ import annotations

MAX_MESSAGE_BYTES = 50 * 1024 * 1024
MAX_HEADER_BYTES = 256 * 1024  # raw headers stored for display (every field is still parsed)
MAX_STORED_HEADER_FIELD_BYTES = 4096  # one field in the stored raw headers, when the block is over MAX_HEADER_BYTES
MAX_VALUES_PER_HEADER = 100  # To/Cc/References/... fields of one name that are read
PARSE_TIME_BUDGET_SECONDS = 5.0
SNIPPET_CHARS = 200

MAX_HEADER_VALUE_CHARS = 64 * 1024  # one header value (a long To: list fits; a 2 MB Subject does not)
MAX_PARTS = 1000  # MIME leaves looked at per message
MAX_DEPTH = 40  # multipart nesting
MAX_BOUNDARY_LINES = 5 * MAX_PARTS  # "\n--" lines in a multipart body handed to the stdlib parser
MAX_HTML_TO_TEXT_CHARS = 512 * 1024  # inscriptis (~1 s/MB) is the slowest step; huge HTML is cut first
MAX_HTML_DEPTH = 256  # sanitizing is quadratic in nesting depth; deeper HTML is kept as text only
# Sanitizing is quadratic in the attributes of one element; real mail carries a few dozen, at most.
MAX_HTML_ATTRIBUTES = 1000
MAX_HTML_SANITIZE_CHARS = 2 * 1024 * 1024  # nh3 does ~2 MB/s on dense tag soup; longer HTML is cut for display
MAX_RECEIVED_TRIED = 20  # Received headers tried (from the last) when the Date header is unusable
MAX_ERROR_CHARS = 2000
