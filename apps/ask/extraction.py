"""Attachment text for Ask: which attachments are worth reading, and their text through the project's
shared extractor (mailagent.textextract: pypdf for PDF, the DOCX XML, inscriptis for HTML), tidied;
extract_attachment_texts caches it on the attachment and indexes it (the attachment_text step, the MCP tool)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

from django.utils import timezone

from apps.accounts.actions import fetch_attachment_bytes
from apps.accounts.models import Attachment
from apps.accounts.providers.base import ProviderError
from apps.search.actions import index_messages
from mailagent.textextract import decode_text
from mailagent.textextract import extract_text as extract_document

MAX_INPUT_BYTES = 25 * 1024 * 1024
MAX_TEXT_CHARS = 200_000

TEXT_TYPES = ("text/plain", "text/csv", "text/calendar", "text/markdown", "message/rfc822")
HTML_TYPES = ("text/html", "application/xhtml+xml")
PDF_TYPES = ("application/pdf", "application/x-pdf")
DOCX_TYPES = ("application/vnd.openxmlformats-officedocument.wordprocessingml.document",)
KIND_FILENAMES = {"pdf": "attachment.pdf", "docx": "attachment.docx", "html": "attachment.html", "text": "a.txt"}

__all__ = [
    "ExtractionError",
    "attachment_kind",
    "decode_text",
    "extract_attachment_texts",
    "extract_text",
    "tidy",
]

logger = logging.getLogger(__name__)


class ExtractionError(Exception):
    """The file claims a format we read but its content is not readable."""


def attachment_kind(filename: str, mime_type: str) -> str | None:
    """pdf | docx | html | text, or None for formats we do not read (images, archives, …)."""
    name = (filename or "").lower()
    mime = (mime_type or "").lower().split(";")[0].strip()
    if mime in PDF_TYPES or name.endswith(".pdf"):
        return "pdf"
    if mime in DOCX_TYPES or name.endswith(".docx"):
        return "docx"
    if mime in HTML_TYPES or name.endswith((".html", ".htm")):
        return "html"
    if mime in TEXT_TYPES or name.endswith((".txt", ".csv", ".md", ".ics", ".eml")):
        return "text"
    return None


def extract_text(data: bytes, *, filename: str = "", mime_type: str = "") -> str:
    """The text of one attachment ("" for formats we do not read). Raises ExtractionError when broken."""
    kind = attachment_kind(filename, mime_type)
    if kind is None:
        return ""
    # The kind decided here (mime type or name) is what the shared extractor must read it as.
    result = extract_document(data[:MAX_INPUT_BYTES], filename=KIND_FILENAMES[kind], mime_type="")
    if result.error and not result.text:
        raise ExtractionError(result.error)
    return tidy(result.text)[:MAX_TEXT_CHARS]


_SPACES = re.compile(r"[ \t\u00a0]+")
_BLANK_LINES = re.compile(r"\n{3,}")


def tidy(text: str) -> str:
    lines = [_SPACES.sub(" ", line).strip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def extract_attachment_texts(
    *, attachments: list[Attachment], fetch: Callable[..., bytes] | None = None
) -> tuple[int, list[dict[str, str]]]:
    """Extract and cache the text of each attachment, then index it so search finds it next time.

    Unreadable files are cached as empty text (never retried); a provider that cannot deliver the bytes
    is reported and retried on a later run."""
    fetch = fetch or fetch_attachment_bytes
    extracted = 0
    failed: list[dict[str, str]] = []
    touched: set[int] = set()
    for attachment in attachments:
        try:
            payload = fetch(attachment=attachment)
        except (ProviderError, OSError) as exc:
            failed.append({"filename": attachment.filename, "error": str(exc)[:300]})
            continue
        try:
            text = extract_text(payload, filename=attachment.filename, mime_type=attachment.mime_type)
        except ExtractionError as exc:
            failed.append({"filename": attachment.filename, "error": str(exc)[:300]})
            text = ""
        except Exception as exc:  # a parser bug must not fail the run: record it, cache nothing
            logger.exception("ask: extracting %s failed", attachment.filename)
            failed.append({"filename": attachment.filename, "error": f"{type(exc).__name__}: {exc}"[:300]})
            continue
        attachment.extracted_text = text
        attachment.text_extracted_at = timezone.now()
        attachment.save(update_fields=["extracted_text", "text_extracted_at"])
        touched.add(attachment.message_id)
        extracted += 1 if text else 0
    if touched:
        try:
            index_messages(message_ids=sorted(touched))
        except Exception:  # the text is cached; `manage.py reindex` can index it later
            logger.exception("ask: indexing extracted attachment text failed")
    return extracted, failed
