"""What a library file is about: sha256, size, type, dates, and its text (PDF, DOCX, HTML, text/Markdown/CSV
through mailagent.textextract; RFC 822 mail through the accounts parser) or, for images, their metadata
(dimensions, EXIF date and camera through Pillow). Never raises for a damaged file: `error` says why."""

from __future__ import annotations

import datetime as dt
import hashlib
import mimetypes
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from mailagent.textextract import extract_text

MAX_DIGEST_BYTES = 32 * 1024 * 1024  # text extraction reads at most this much of a file
MAX_DIGEST_CHARS = 50_000
MAIL_SUFFIXES = {".eml", ".msg", ".mbx"}
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".gif", ".webp", ".tif", ".tiff", ".bmp", ".heic"}
HASH_CHUNK = 1024 * 1024


@dataclass(slots=True)
class Digest:
    sha256: str
    size: int
    mtime: float
    mime_type: str
    kind: str
    text: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    error: str = ""


def sha256_of(path: Path) -> str:
    with path.open("rb") as handle:
        return sha256_of_handle(handle)


def sha256_of_handle(handle: BinaryIO) -> str:
    digest = hashlib.sha256()
    handle.seek(0)
    while chunk := handle.read(HASH_CHUNK):
        digest.update(chunk)
    return digest.hexdigest()


def looks_like_mail(data: bytes) -> bool:
    head = data[:2048].lower()
    return (b"\nfrom:" in head or head.startswith(b"from:") or head.startswith(b"from ")) and (
        b"\nsubject:" in head or b"\ndate:" in head or b"\nmessage-id:" in head
    )


def _mail_digest(data: bytes) -> tuple[str, dict[str, Any], str]:
    from apps.accounts.parsing import parse_message

    parsed = parse_message(data, keep_attachment_payloads=False)
    sender = parsed.from_.address if parsed.from_ else ""
    sender_name = parsed.from_.name if parsed.from_ else ""
    recipients = [a.address for a in [*parsed.to, *parsed.cc] if a.address]
    body = parsed.body_text
    if not body.strip() and parsed.body_html:
        from inscriptis import get_text

        body = get_text(parsed.body_html)
    header = [
        f"From: {sender_name} <{sender}>" if sender_name else f"From: {sender}",
        f"To: {', '.join(recipients[:20])}",
        f"Subject: {parsed.subject}",
    ]
    attachments = [a.filename for a in parsed.attachments if a.filename]
    if attachments:
        header.append(f"Attachments: {', '.join(attachments)}")
    metadata: dict[str, Any] = {
        "title": parsed.subject,
        "sender": sender.lower(),
        "sender_name": sender_name,
        "recipients": recipients[:50],
        "date": parsed.date.isoformat() if parsed.date else None,
        "attachments": attachments,
        # The thread: a reply or forward of a filed mail is found through these.
        "message_id": parsed.message_id,
        "in_reply_to": parsed.in_reply_to,
        "references": parsed.references[-20:],
    }
    return "\n".join(header) + "\n\n" + body, metadata, parsed.parse_error


def _exif_date(value: str) -> str | None:
    try:
        return dt.datetime.strptime(value.strip(), "%Y:%m:%d %H:%M:%S").isoformat()
    except ValueError:
        return None


def _image_digest(source: Path | BinaryIO) -> tuple[dict[str, Any], str]:
    from PIL import ExifTags, Image, UnidentifiedImageError

    try:
        with Image.open(source) as image:
            metadata: dict[str, Any] = {"width": image.width, "height": image.height, "format": image.format}
            exif = image.getexif()
            camera = " ".join(str(exif.get(tag, "")).strip() for tag in (ExifTags.Base.Make, ExifTags.Base.Model))
            if camera.strip():
                metadata["camera"] = camera.strip()
            original = exif.get_ifd(ExifTags.IFD.Exif).get(ExifTags.Base.DateTimeOriginal) or exif.get(
                ExifTags.Base.DateTime
            )
            if isinstance(original, str) and (taken := _exif_date(original)):
                metadata["date"] = taken
            return metadata, ""
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        return {}, f"could not read the image: {exc}"[:300]


def describe_metadata(name: str, metadata: dict[str, Any]) -> str:
    """A line of words for the classifier and the index when a file has no text (an image)."""
    parts = [name]
    if metadata.get("width"):
        parts.append(f"image {metadata['width']}x{metadata['height']} {metadata.get('format') or ''}".strip())
    if metadata.get("camera"):
        parts.append(f"camera {metadata['camera']}")
    if metadata.get("date"):
        parts.append(f"taken {metadata['date'][:10]}")
    return " ".join(parts)


def digest_file(path: Path, *, handle: BinaryIO | None = None) -> Digest:
    """Read `path` (a regular file) and describe it; with `handle` (the file already opened and checked, see
    fsops.open_regular) everything is read from that handle and `path` only gives the name. OSError
    propagates: the caller decides what it means."""
    if handle is None:
        with path.open("rb") as opened:
            return digest_file(path, handle=opened)
    stat = os.fstat(handle.fileno())
    sha = sha256_of_handle(handle)
    handle.seek(0)
    suffix = path.suffix.lower()
    mime_type = mimetypes.guess_type(path.name)[0] or ""
    result = Digest(sha256=sha, size=stat.st_size, mtime=stat.st_mtime, mime_type=mime_type, kind="binary")
    result.metadata["modified"] = dt.datetime.fromtimestamp(stat.st_mtime, tz=dt.UTC).isoformat()
    if suffix in IMAGE_SUFFIXES or mime_type.startswith("image/"):
        metadata, error = _image_digest(handle)
        result.kind, result.error = "image", error
        result.metadata.update(metadata)
        result.text = describe_metadata(path.name, result.metadata)
        return result
    data = handle.read(MAX_DIGEST_BYTES)
    if suffix in MAIL_SUFFIXES or (suffix in ("", ".txt") and looks_like_mail(data)):
        text, metadata, error = _mail_digest(data)
        result.kind, result.text, result.error = "email", text[:MAX_DIGEST_CHARS], error[:500]
        result.mime_type = result.mime_type or "message/rfc822"
        result.metadata.update(metadata)
        return result
    extracted = extract_text(data, filename=path.name, mime_type=mime_type)
    result.kind = extracted.kind
    result.text = extracted.text[:MAX_DIGEST_CHARS]
    result.error = extracted.error[:500]
    if len(data) == MAX_DIGEST_BYTES and stat.st_size > MAX_DIGEST_BYTES:
        result.metadata["text_from_first_bytes"] = MAX_DIGEST_BYTES
    return result
