"""Digest of each file type: PDF, DOCX, HTML, Markdown, CSV, RFC 822 mail, images (size, EXIF date, camera),
and a damaged file (an explanation, never an exception)."""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from pathlib import Path

from PIL import Image

from apps.accounts.demo_mailbox.pdf import build_pdf
from apps.organization.digest import digest_file


def test_pdf_docx_html_markdown_csv(tmp_path: Path) -> None:
    pdf = tmp_path / "statement.pdf"
    pdf.write_bytes(build_pdf(title="QNB statement", lines=["Due date 11/05/2026"], created=dt.datetime(2026, 4, 1)))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as docx:
        docx.writestr(
            "word/document.xml",
            '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>'
            "<w:p><w:r><w:t>Lease contract</w:t></w:r></w:p></w:body></w:document>",
        )
    (tmp_path / "lease.docx").write_bytes(buffer.getvalue())
    (tmp_path / "page.html").write_text("<html><body><h1>Invoice</h1><p>Total 12 EUR</p></body></html>")
    (tmp_path / "notes.md").write_text("# Trip\n- passport\n")
    (tmp_path / "table.csv").write_text("date,amount\n2026-01-01,12\n")

    results = {p.name: digest_file(p) for p in sorted(tmp_path.iterdir())}
    assert results["statement.pdf"].kind == "pdf" and "11/05/2026" in results["statement.pdf"].text
    assert results["lease.docx"].kind == "docx" and "Lease contract" in results["lease.docx"].text
    assert results["page.html"].kind == "html" and "Total 12 EUR" in results["page.html"].text
    assert "<h1>" not in results["page.html"].text
    assert results["notes.md"].kind == "text" and "passport" in results["notes.md"].text
    assert results["table.csv"].text.startswith("date,amount")
    for digest in results.values():
        assert len(digest.sha256) == 64 and digest.size > 0 and digest.metadata["modified"]


def test_mail_file(tmp_path: Path) -> None:
    raw = (
        b"From: QNB Bank <ekstre@qnb.example>\r\nTo: me@example.com\r\nSubject: Your statement\r\n"
        b"Date: Tue, 07 Apr 2026 10:00:00 +0300\r\nMessage-ID: <a@b>\r\n\r\nClosing balance 4,210 TRY.\r\n"
    )
    (tmp_path / "statement.eml").write_bytes(raw)
    digest = digest_file(tmp_path / "statement.eml")
    assert digest.kind == "email" and digest.mime_type == "message/rfc822"
    assert digest.metadata["sender"] == "ekstre@qnb.example" and digest.metadata["title"] == "Your statement"
    assert digest.metadata["date"].startswith("2026-04-07")
    assert "Closing balance" in digest.text and "Subject: Your statement" in digest.text


def test_image_metadata(tmp_path: Path) -> None:
    image = Image.new("RGB", (64, 48), "red")
    exif = Image.Exif()
    exif[0x010F] = "Canon"
    exif[0x0110] = "EOS 80D"
    exif[0x0132] = "2025:08:14 18:30:00"
    image.save(tmp_path / "beach.jpg", exif=exif)
    digest = digest_file(tmp_path / "beach.jpg")
    assert digest.kind == "image" and not digest.error
    assert (digest.metadata["width"], digest.metadata["height"]) == (64, 48)
    assert digest.metadata["camera"] == "Canon EOS 80D"
    assert digest.metadata["date"] == "2025-08-14T18:30:00"
    assert "beach.jpg" in digest.text and "Canon" in digest.text


def test_damaged_files_explain_instead_of_raising(tmp_path: Path) -> None:
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.7 this is not really a pdf")
    (tmp_path / "broken.png").write_bytes(b"\x89PNG not an image")
    pdf = digest_file(tmp_path / "broken.pdf")
    png = digest_file(tmp_path / "broken.png")
    assert pdf.sha256 and (pdf.error or pdf.text == "")
    assert png.kind == "image" and "could not read the image" in png.error
