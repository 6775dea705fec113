"""Plain text out of documents (PDF via pypdf, DOCX via its XML, HTML via inscriptis, text by charset
sniffing), capped in size and never raising for a damaged file: the caller gets an explanation instead.
Shared by the filesystem tools, attachment search and organization (imports no app)."""

from __future__ import annotations

import io
import logging
import zipfile
from dataclasses import dataclass
from pathlib import PurePath
from xml.etree import ElementTree as ET

logger = logging.getLogger(__name__)
MAX_TEXT_CHARS = 200_000
TEXT_SUFFIXES = {
    ".txt",
    ".md",
    ".markdown",
    ".csv",
    ".tsv",
    ".json",
    ".xml",
    ".yaml",
    ".yml",
    ".ini",
    ".log",
    ".eml",
    ".ics",
    ".vcf",
    ".py",
    ".js",
    ".ts",
    ".css",
    ".sql",
    ".rst",
    ".toml",
    ".cfg",
}
W_NS = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


@dataclass(slots=True)
class Extracted:
    text: str
    kind: str  # pdf | docx | html | text | binary
    truncated: bool = False
    error: str = ""


def _cap(text: str, kind: str) -> Extracted:
    if len(text) > MAX_TEXT_CHARS:
        return Extracted(text[:MAX_TEXT_CHARS], kind, truncated=True)
    return Extracted(text, kind)


def _pdf(data: bytes) -> Extracted:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data), strict=False)  # tolerate damaged xref tables, as viewers do
    if reader.is_encrypted:
        try:
            reader.decrypt("")
        except Exception:
            return Extracted("", "pdf", error="the PDF is encrypted")
    parts: list[str] = []
    size = 0
    for page in reader.pages:
        text = page.extract_text() or ""
        parts.append(text)
        size += len(text)
        if size > MAX_TEXT_CHARS:
            break
    return _cap("\n\n".join(parts).strip(), "pdf")


def _docx(data: bytes) -> Extracted:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        info = archive.getinfo("word/document.xml")
        if info.file_size > 50 * 1024 * 1024:
            return Extracted("", "docx", error="the document is too large to read")
        root = ET.fromstring(archive.read(info))  # noqa: S314 -- size-capped member of a user document
    paragraphs = []
    for paragraph in root.iter(f"{W_NS}p"):
        runs = []
        for node in paragraph.iter():
            if node.tag == f"{W_NS}t":
                runs.append(node.text or "")
            elif node.tag == f"{W_NS}tab":
                runs.append("\t")
            elif node.tag == f"{W_NS}br":
                runs.append("\n")
        paragraphs.append("".join(runs))
    return _cap("\n".join(p for p in paragraphs).strip(), "docx")


def decode_text(data: bytes) -> str:
    """Text of unknown charset: a BOM wins, then UTF-8, then Windows-1252 (which decodes anything)."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="replace")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def looks_binary(data: bytes) -> bool:
    sample = data[:4096]
    return b"\x00" in sample and not sample.startswith((b"\xff\xfe", b"\xfe\xff"))


def extract_text(data: bytes, *, filename: str = "", mime_type: str = "") -> Extracted:
    suffix = PurePath(filename).suffix.lower()
    mime = (mime_type or "").lower()
    try:
        if data.startswith(b"%PDF") or mime == "application/pdf" or suffix == ".pdf":
            return _pdf(data)
        if suffix == ".docx" or mime.endswith("wordprocessingml.document"):
            return _docx(data)
        if suffix in (".html", ".htm") or mime in ("text/html", "application/xhtml+xml"):
            from inscriptis import get_text

            return _cap(get_text(decode_text(data)).strip(), "html")
        if suffix in TEXT_SUFFIXES or mime.startswith("text/") or not looks_binary(data):
            return _cap(decode_text(data), "text")
    except Exception as exc:  # damaged documents are common; say so instead of failing the caller
        logger.info("text extraction failed for %s: %s", filename or mime, exc)
        return Extracted("", suffix.lstrip(".") or "binary", error=f"could not read the document: {exc}"[:300])
    return Extracted("", "binary", error="binary file: no text to extract")
