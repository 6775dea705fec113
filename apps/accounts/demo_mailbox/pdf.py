# ruff: noqa: RUF001  (Turkish, German and typographic characters are the point of the demo content)
"""A minimal PDF writer for the demo's attachments: Helvetica text pages, WinAnsiEncoding."""

from __future__ import annotations

import datetime as dt

# Characters WinAnsiEncoding (cp1252) lacks; everything else keeps its accent in the PDF text.
_PDF_TRANSLITERATION = str.maketrans(
    {"ı": "i", "İ": "I", "ş": "s", "Ş": "S", "ğ": "g", "Ğ": "G", "–": "-", "—": "-", "€": "EUR"}
)
PDF_LINES_PER_PAGE = 48


def _pdf_string(text: str) -> bytes:
    """A PDF literal string in WinAnsiEncoding, with non-ASCII bytes as octal escapes."""
    encoded = text.translate(_PDF_TRANSLITERATION).encode("cp1252", errors="replace")
    out = bytearray(b"(")
    for byte in encoded:
        if byte in b"()\\":
            out += b"\\" + bytes([byte])
        elif 32 <= byte < 127:
            out.append(byte)
        else:
            out += f"\\{byte:03o}".encode("ascii")
    out += b")"
    return bytes(out)


def build_pdf(*, title: str, lines: list[str], created: dt.datetime) -> bytes:
    """A small but valid PDF 1.4: Helvetica text pages, a correct xref table and trailer.

    Text is drawn line by line with Tj operators so any text extractor recovers the lines in order.
    """
    pages = [lines[i : i + PDF_LINES_PER_PAGE] for i in range(0, len(lines), PDF_LINES_PER_PAGE)] or [[]]
    # Object numbers: 1 catalog, 2 pages, 3 Helvetica, 4 Helvetica-Bold, 5 info, then page/content pairs.
    objects: dict[int, bytes] = {}
    page_ids = [6 + 2 * index for index in range(len(pages))]
    kids = b" ".join(f"{pid} 0 R".encode() for pid in page_ids)
    objects[1] = b"<< /Type /Catalog /Pages 2 0 R >>"
    objects[2] = b"<< /Type /Pages /Kids [" + kids + b"] /Count " + str(len(pages)).encode() + b" >>"
    objects[3] = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
    objects[4] = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>"
    stamp = created.astimezone(dt.UTC).strftime("D:%Y%m%d%H%M%SZ")
    objects[5] = (
        b"<< /Title "
        + _pdf_string(title)
        + b" /Producer (mailagent demo mailbox) /CreationDate ("
        + stamp.encode()
        + b") >>"
    )
    for number, (page_id, page_lines) in enumerate(zip(page_ids, pages, strict=True), start=1):
        content = bytearray()
        content += b"BT /F2 15 Tf 56 790 Td " + _pdf_string(title) + b" Tj ET\n"
        content += b"BT /F1 10 Tf 56 760 Td 14 TL\n"
        for line in page_lines:
            content += _pdf_string(line) + b" Tj T*\n"
        content += b"ET\n"
        content += b"BT /F1 8 Tf 56 40 Td " + _pdf_string(f"Seite / Page {number} / {len(pages)}") + b" Tj ET\n"
        stream = bytes(content)
        objects[page_id] = (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] "
            b"/Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> /Contents " + f"{page_id + 1} 0 R".encode() + b" >>"
        )
        objects[page_id + 1] = b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream"
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets: dict[int, int] = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += f"{number} 0 obj\n".encode() + objects[number] + b"\nendobj\n"
    size = max(objects) + 1
    xref_at = len(out)
    out += f"xref\n0 {size}\n".encode()
    out += b"0000000000 65535 f \n"
    for number in range(1, size):
        out += f"{offsets[number]:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {size} /Root 1 0 R /Info 5 0 R >>\nstartxref\n{xref_at}\n%%EOF\n".encode()
    return bytes(out)
