"""parse_message(): every real corpus file parses, concrete fixtures decode right, hostile input is capped."""

from __future__ import annotations

import datetime as dt
import hashlib
import random
from pathlib import Path

import pytest

from apps.accounts import parsing
from apps.accounts.parsing import ParsedAddress, ParsedMessage, parse_message
from apps.accounts.parsing.limits import MAX_HTML_SANITIZE_CHARS
from tests.services import shared_path

NOT_MAIL = {"LICENSE", "README"}


@pytest.fixture(scope="module")
def mime_root() -> Path:
    return shared_path("data", "mime")


def load(root: Path, relative: str) -> ParsedMessage:
    return parse_message((root / relative).read_bytes())


def assert_storable(text: str) -> None:
    assert "\x00" not in text
    text.encode("utf-8")  # no lone surrogates


# --- the whole corpus -------------------------------------------------------------------------------


def test_every_corpus_file_parses(mime_root: Path) -> None:
    files = sorted(p for p in mime_root.rglob("*") if p.is_file() and p.name not in NOT_MAIL)
    assert len(files) > 400
    problems: list[str] = []
    for path in files:
        raw = path.read_bytes()
        parsed = parse_message(raw)  # must never raise
        name = str(path.relative_to(mime_root))
        if parsed.size != len(raw) or parsed.raw_sha256 != hashlib.sha256(raw).hexdigest():
            problems.append(f"{name}: size/sha256")
        if raw.strip() and not parsed.raw_headers:
            problems.append(f"{name}: empty raw_headers")
        if parsed.date is not None and parsed.date.tzinfo is None:
            problems.append(f"{name}: naive date")
        for value in (parsed.subject, parsed.body_text, parsed.body_html, parsed.raw_headers, parsed.snippet):
            try:
                assert_storable(value)
            except (AssertionError, UnicodeEncodeError):
                problems.append(f"{name}: unstorable text")
        if "<" in parsed.message_id or any(c.isspace() for c in parsed.message_id):
            problems.append(f"{name}: message_id not normalized: {parsed.message_id!r}")
        for attachment in parsed.attachments:
            if not attachment.filename or not attachment.part_ref.replace(".", "").isdigit():
                problems.append(f"{name}: attachment {attachment!r}")
            if attachment.payload is not None and len(attachment.payload) != attachment.size:
                problems.append(f"{name}: attachment size")
    assert not problems, "\n".join(problems)


def test_the_empty_corpus_file_still_returns_a_result(mime_root: Path) -> None:
    parsed = load(mime_root, "mikel-mail/sample_output_multipart")  # a zero-byte file
    assert parsed.size == 0
    assert parsed.raw_headers == ""
    assert parsed.parse_error == "empty message"
    assert parsed.raw_sha256 == hashlib.sha256(b"").hexdigest()


# --- charsets and encoded words --------------------------------------------------------------------


def test_iso_2022_jp_encoded_words_in_a_folded_subject(mime_root: Path) -> None:
    parsed = load(mime_root, "mikel-mail/rfc2822/example14.eml")
    assert parsed.subject == "Re: TEST テストテスト"
    assert parsed.from_ == ParsedAddress("Atsushi Yoshida", "atsushi@example.com")
    assert parsed.in_reply_to == "rid_5582199198@msgid.example.com"


def test_euc_kr_subject_and_body(mime_root: Path) -> None:
    parsed = load(mime_root, "mikel-mail/plain_emails/raw_email.eml")
    assert parsed.subject == "NOTE: 한국말로 하는 것"
    assert "제 이름은 Jamis입니다." in parsed.body_text


def test_japanese_bodies_in_iso_2022_jp_and_shift_jis(mime_root: Path) -> None:
    iso = load(mime_root, "mikel-mail/multi_charset/japanese_iso_2022.eml")
    assert iso.subject == "まみむめも"
    assert iso.body_text.strip() == "すみません。"
    assert iso.to == [ParsedAddress("みける", "raasdnil@gmail.com")]
    sjis = load(mime_root, "mikel-mail/multi_charset/japanese_shift_jis.eml")
    assert sjis.body_text.startswith("あいうえお")
    assert "このメールはテスト用のメールです。" in sjis.body_text


def test_ks_c_5601_1987_body(mime_root: Path) -> None:
    assert load(mime_root, "mikel-mail/multi_charset/ks_c_5601-1987.eml").body_text.strip() == "스티해"


def test_long_subject_split_across_encoded_words(mime_root: Path) -> None:
    parsed = load(mime_root, "mikel-mail/multi_charset/japanese_attachment_long_name.eml")
    assert parsed.subject == "まみむめも" * 10
    (attachment,) = parsed.attachments
    assert attachment.filename == "かきくけこ" * 5 + ".txt"  # RFC 2231 continuation, percent-encoded UTF-8
    assert attachment.part_ref == "1"


def test_raw_utf8_headers_rfc6532(mime_root: Path) -> None:
    parsed = load(mime_root, "mikel-mail/rfc6532/utf8_headers.eml")
    assert parsed.subject == "Säying Hello"
    assert parsed.from_ == ParsedAddress("Jöhn Doe", "jdöe@mächine.example")
    assert parsed.to == [ParsedAddress("Märy Smith", "märy@exämple.net")]


def test_raw_8bit_cp1252_subject_and_encoded_word_in_quotes(mime_root: Path) -> None:
    parsed = load(mime_root, "mikel-mail/error_emails/invalid_subject_characters.eml")
    assert parsed.subject == "Formação FrenetikPolis: Mega Campanha Final Verão | Cursos de Setembro"
    assert parsed.from_ == ParsedAddress("Formação Frenetikpolis", "info@formacaofrenetik.info")


def test_unknown_charset_and_bad_padding_in_an_encoded_word(mime_root: Path) -> None:
    parsed = load(mime_root, "mikel-mail/error_emails/bad_encoded_subject.eml")  # =?NONE?B?VEVTVA=?=
    assert parsed.subject == "TEST"
    assert parsed.message_id == ""
    assert parsed.from_ is None


# --- structure and attachments ---------------------------------------------------------------------


def test_pdf_attachment(mime_root: Path) -> None:
    parsed = load(mime_root, "mikel-mail/attachment_emails/attachment_pdf.eml")
    assert parsed.subject == "Another PDF with 🎉 Unicode chars in it 🍿"
    (attachment,) = parsed.attachments
    assert (attachment.filename, attachment.mime_type, attachment.part_ref) == ("broken.pdf", "application/pdf", "2")
    assert attachment.size == 1026
    assert attachment.payload is not None and attachment.payload.startswith(b"%PDF-1.4")
    assert parsed.body_text.startswith("Just attaching another PDF")


def test_encoded_word_filename_and_payload_switch(mime_root: Path) -> None:
    raw = (mime_root / "mikel-mail/multi_charset/japanese_attachment.eml").read_bytes()
    (attachment,) = parse_message(raw).attachments
    assert (attachment.filename, attachment.part_ref, attachment.mime_type) == ("てすと.txt", "2", "text/plain")
    assert attachment.payload == "this is a test\nこれわてすと".encode()
    (without,) = parse_message(raw, keep_attachment_payloads=False).attachments
    assert without.payload is None
    assert without.size == attachment.size == 33


def test_nested_part_refs_from_a_real_signed_message(mime_root: Path) -> None:
    parsed = load(mime_root, "mikel-mail/mime_emails/raw_email7.eml")
    refs = [(a.filename, a.part_ref) for a in parsed.attachments]
    assert refs == [("test.rb", "1.2"), ("test.pdf", "1.3"), ("smime.p7s", "2")]
    assert parsed.body_text.strip()
    # The disposition as sent; the .p7s hangs in a multipart/mixed here, not as a multipart/signed's signature.
    assert [(a.disposition, a.is_crypto_part) for a in parsed.attachments] == [
        ("attachment", False),
        ("inline", False),
        ("attachment", False),
    ]


def test_the_parts_of_an_encrypted_message_are_protocol_not_content(mime_root: Path) -> None:
    parsed = load(mime_root, "notmuch/crypto/basic-encrypted.eml")
    assert [(a.part_ref, a.disposition, a.is_crypto_part) for a in parsed.attachments] == [
        ("1", "", True),
        ("2", "", True),
    ]


def test_attached_message_is_one_attachment_and_inline_image_has_content_id(mime_root: Path) -> None:
    parsed = load(mime_root, "mikel-mail/attachment_emails/attachment_message_rfc822_inline_image.eml")
    image, message = parsed.attachments
    assert (image.filename, image.part_ref, image.mime_type) == ("img.png", "1.2", "image/png")
    assert image.is_inline and image.content_id and "<" not in image.content_id
    assert (message.filename, message.part_ref, message.mime_type) == ("Testmail.eml", "2", "message/rfc822")
    assert not message.is_inline
    assert message.payload is not None and message.size == len(message.payload) > 0


def test_bounce_report_keeps_the_returned_message_whole(mime_root: Path) -> None:
    parsed = load(mime_root, "mikel-mail/multipart_report_emails/multi_address_bounce1.eml")
    assert [(a.mime_type, a.part_ref) for a in parsed.attachments] == [
        ("message/delivery-status", "2"),
        ("message/rfc822", "3"),
    ]
    assert parsed.attachments[1].filename == "Test of bounce email.eml"  # named after its subject
    assert parsed.body_text


def test_attachment_only_single_part_message_is_part_1(mime_root: Path) -> None:
    parsed = load(mime_root, "mikel-mail/attachment_emails/attachment_only_email.eml")
    (attachment,) = parsed.attachments
    assert (attachment.filename, attachment.mime_type, attachment.part_ref) == ("blah.gz", "application/x-gzip", "1")
    assert attachment.size == 288  # the fixture's base64 is not a real gzip stream, only its length is known
    assert parsed.body_text == ""


def test_html_only_message_gets_text_from_html(mime_root: Path) -> None:
    parsed = load(mime_root, "notmuch/html/embedded-image")
    assert parsed.body_html.startswith("<table")
    assert 'rel="noopener noreferrer"' in parsed.body_html
    assert "Malmö 2016-07-09" in parsed.body_text
    assert parsed.snippet and len(parsed.snippet) <= parsing.SNIPPET_CHARS and "\n" not in parsed.snippet


# --- headers: ids, addresses, dates ----------------------------------------------------------------


def test_message_without_message_id(mime_root: Path) -> None:
    raw = (mime_root / "mikel-mail/multi_charset/japanese.eml").read_bytes()
    parsed = parse_message(raw)
    assert parsed.message_id == ""
    assert parsed.raw_sha256 == hashlib.sha256(raw).hexdigest()
    assert parsed.date is None


def test_references_across_duplicate_headers_and_a_folded_id(mime_root: Path) -> None:
    parsed = load(mime_root, "mikel-mail/error_emails/multiple_references_with_one_invalid.eml")
    assert parsed.references[:2] == ["foo@bar.net", "baz@bar.net"]
    assert parsed.message_id == "105647271315.NCV17523@x263.net"


def test_duplicate_cc_headers_are_merged(mime_root: Path) -> None:
    parsed = load(mime_root, "notmuch/broken/broken-cc")
    assert [a.address for a in parsed.cc] == ["bob@example.org", "charles@example.org"]


def test_messy_address_lists(mime_root: Path) -> None:
    weird = load(mime_root, "mikel-mail/error_emails/weird_to_header.eml")  # "To: , user-example@aol.com, ..."
    assert [a.address for a in weird.to] == ["user-example@aol.com", "e-s-a-s-2200@app.ar.com"]
    folded = load(mime_root, "mikel-mail/error_emails/new_line_in_to_header.eml")
    assert [a.address for a in folded.to][-1] == "cc@c-l-example.com"
    assert len(folded.to) == 6


def test_invalid_date_falls_back_to_received(mime_root: Path) -> None:
    parsed = load(mime_root, "mikel-mail/error_emails/bad_date_header2.eml")  # "Wed, 15 Dec 2010    59:10 -0500"
    assert parsed.date == dt.datetime(2010, 12, 15, 0, 59, 10, tzinfo=dt.timezone(dt.timedelta(hours=-6)))
    assert "Date header" in parsed.parse_error


def test_implausible_future_date_falls_back_to_received(mime_root: Path) -> None:
    parsed = load(mime_root, "mikel-mail/plain_emails/raw_email_bad_time.eml")  # Date: ... 3609 ...
    assert parsed.date is not None and parsed.date.year == 2008


def test_stray_line_in_the_header_block_is_skipped(mime_root: Path) -> None:
    # "quite Delivered-To: ..." in the middle of the headers: the stdlib would read From/Subject as body.
    parsed = load(mime_root, "mikel-mail/plain_emails/raw_email_incorrect_header.eml")
    assert parsed.parse_error
    assert parsed.subject == "Stop adware/spyware once and for all."
    assert parsed.from_ == ParsedAddress("xxx xxx", "xxx@xxx.xxx")
    assert parsed.message_id == "4D6AA7EB.6490534@xxx.xxx"


def test_obsolete_whitespace_before_colon(mime_root: Path) -> None:
    parsed = load(mime_root, "mikel-mail/rfc2822/example13.eml")  # "Subject     : Saying Hello"
    assert parsed.subject == "Saying Hello"
    assert parsed.from_ is not None and parsed.from_.address == "jdoe@machine.example"


# --- hand-built hostile and edge cases -------------------------------------------------------------


def test_two_megabyte_header_of_encoded_words_is_capped() -> None:
    word = "=?utf-8?q?caf=C3=A9_?= "
    subject = "\r\n ".join(word * 20 for _ in range(2 * 1024 * 1024 // (len(word) * 20) + 1))
    raw = f"From: a@example.com\r\nSubject: {subject}\r\nMessage-ID: <big@example.com>\r\n\r\nbody\r\n".encode()
    assert len(raw) > 2 * 1024 * 1024
    parsed = parse_message(raw)
    assert "raw headers stored with each field cut" in parsed.parse_error
    assert "subject header truncated" in parsed.parse_error
    assert parsed.subject.startswith("café café")
    assert parsed.message_id == "big@example.com"  # the field after the huge one is still read
    assert len(parsed.subject) <= parsing.MAX_HEADER_VALUE_CHARS
    assert len(parsed.raw_headers.encode()) <= parsing.MAX_HEADER_BYTES
    assert parsed.size == len(raw)
    assert parsed.body_text == "body\n"


def test_many_headers_beyond_the_cap() -> None:
    headers = "".join(f"X-Filler-{i}: {'x' * 60}\r\n" for i in range(10_000))
    raw = f"Subject: kept\r\n{headers}From: late@example.com\r\n\r\nbody".encode()
    parsed = parse_message(raw)
    assert parsed.subject == "kept"
    assert parsed.from_ == ParsedAddress(name="", address="late@example.com")  # read, however late
    assert parsed.body_text == "body"
    assert len(parsed.raw_headers.encode()) <= parsing.MAX_HEADER_BYTES
    assert "fields left out" in parsed.parse_error


def test_oversized_message_is_truncated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parsing.message, "MAX_MESSAGE_BYTES", 1000)
    raw = b"Subject: big\r\n\r\n" + b"a" * 5000
    parsed = parse_message(raw)
    assert parsed.size == len(raw)
    assert parsed.raw_sha256 == hashlib.sha256(raw).hexdigest()
    assert "truncated" in parsed.parse_error
    assert len(parsed.body_text) < 1000


def test_many_parts_are_capped() -> None:
    part = b"--x\r\nContent-Type: application/octet-stream\r\n\r\nabc\r\n"
    raw = b"Subject: parts\r\nContent-Type: multipart/mixed; boundary=x\r\n\r\n" + part * 20_000 + b"--x--\r\n"
    parsed = parse_message(raw, keep_attachment_payloads=False)
    assert len(parsed.attachments) == parsing.MAX_PARTS
    assert parsed.attachments[-1].part_ref == str(parsing.MAX_PARTS)
    assert "boundary lines" in parsed.parse_error and "MIME parts" in parsed.parse_error


def test_huge_html_is_cut_before_text_extraction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parsing.html, "MAX_HTML_TO_TEXT_CHARS", 1000)
    html = "<p>start</p>" + "<p>filler paragraph</p>" * 500 + "<p>unreachable end</p>"
    parsed = parse_message(b"Content-Type: text/html\r\n\r\n" + html.encode())
    assert parsed.body_text.startswith("start")
    assert "unreachable end" not in parsed.body_text
    assert "unreachable end" in parsed.body_html  # sanitizing is cheap and keeps everything
    assert "HTML body cut" in parsed.parse_error


def test_time_budget_stops_the_part_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parsing.body, "PARSE_TIME_BUDGET_SECONDS", -1.0)
    parsed = parse_message(nested_multipart())
    assert "time budget" in parsed.parse_error
    assert parsed.subject == "nested"
    assert parsed.attachments == []


def nested_multipart() -> bytes:
    return (
        b"Subject: nested\r\nMessage-ID: <nested@example.com>\r\nMIME-Version: 1.0\r\n"
        b'Content-Type: multipart/mixed; boundary="outer"\r\n\r\n'
        b"--outer\r\nContent-Type: text/plain\r\n\r\nfirst body\r\n"
        b'--outer\r\nContent-Type: multipart/alternative; boundary="inner"\r\n\r\n'
        b"--inner\r\nContent-Type: text/plain\r\n\r\nsecond plain\r\n"
        b"--inner\r\nContent-Type: text/html\r\n\r\n<p>second <b>html</b><script>alert(1)</script></p>\r\n"
        b'--inner\r\nContent-Type: multipart/related; boundary="deep"\r\n\r\n'
        b"--deep\r\nContent-Type: image/gif\r\nContent-ID: <logo@x>\r\nContent-Transfer-Encoding: base64\r\n\r\n"
        b"R0lGODlhAQABAAAAACw=\r\n"
        b"--deep--\r\n"
        b"--inner--\r\n"
        b"--outer\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment\r\n"
        b"Content-Transfer-Encoding: base64\r\n\r\nJVBERi0=\r\n"
        b"--outer\r\nContent-Type: message/rfc822\r\n\r\n"
        b'Subject: inner\r\nContent-Type: multipart/mixed; boundary="x"\r\n\r\n'
        b"--x\r\nContent-Type: image/png; name=hidden.png\r\n\r\nPNG\r\n--x--\r\n"
        b"--outer--\r\n"
    )


def test_nested_multipart_part_refs() -> None:
    parsed = parse_message(nested_multipart())
    refs = [(a.part_ref, a.mime_type, a.filename) for a in parsed.attachments]
    assert refs == [
        ("2.3.1", "image/gif", "attachment-2.3.1.gif"),
        ("3", "application/pdf", "attachment-3.pdf"),
        ("4", "message/rfc822", "inner.eml"),  # not walked into: hidden.png is not listed
    ]
    gif = parsed.attachments[0]
    assert gif.is_inline and gif.content_id == "logo@x"  # no disposition, but inside multipart/related
    assert parsed.attachments[1].payload == b"%PDF-"
    assert parsed.body_text == "first body"  # the first text/plain wins (the CRLF before a boundary is not content)
    assert parsed.body_html == "<p>second <b>html</b></p>"  # script gone
    assert parsed.parse_error == ""


def test_single_part_body_is_part_one() -> None:
    raw = b"Subject: s\r\nContent-Type: image/png\r\nContent-Transfer-Encoding: base64\r\n\r\niVBORw0KGgo=\r\n"
    (attachment,) = parse_message(raw).attachments
    assert (attachment.part_ref, attachment.filename, attachment.payload) == (
        "1",
        "attachment-1.png",
        b"\x89PNG\r\n\x1a\n",
    )


def test_broken_charset_names_fall_back() -> None:
    raw = (
        b"Subject: =?x-no-such-charset?Q?caf=C3=A9?= and =?windows-1252?Q?na=EFve?=\r\n"
        b'Content-Type: text/plain; charset="x-no-such-charset"\r\n\r\n' + "café\r\n".encode()
    )
    parsed = parse_message(raw)
    assert parsed.subject == "café and naïve"
    assert parsed.body_text == "café\n"
    latin = parse_message(b"Content-Type: text/plain; charset=us-ascii\r\n\r\nna\xefve")  # mislabelled 8-bit
    assert latin.body_text == "naïve"
    rot13 = parse_message(b"Content-Type: text/plain; charset=rot13\r\n\r\nhello")  # a codec, not a charset
    assert rot13.body_text == "hello"


def test_8bit_parts_inside_multipart_keep_their_charset() -> None:
    raw = (
        b"Content-Type: multipart/mixed; boundary=x\r\n\r\n"
        b"--x\r\nContent-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: 8bit\r\n\r\n"
        b"na\xefve caf\xe9\r\n"
        b'--x\r\nContent-Type: text/html; charset="bad\x00name"\r\n\r\n<p>\xe9t\xe9</p>\r\n--x--\r\n'
    )
    parsed = parse_message(raw)
    assert parsed.body_text == "naïve café"
    assert parsed.body_html == "<p>été</p>"
    assert parsed.parse_error == ""


def test_date_without_timezone_is_utc() -> None:
    parsed = parse_message(b"Date: Tue, 1 Jul 2003 10:52:37\r\nSubject: x\r\n\r\nbody")
    assert parsed.date == dt.datetime(2003, 7, 1, 10, 52, 37, tzinfo=dt.UTC)
    minus_zero = parse_message(b"Date: Tue, 1 Jul 2003 10:52:37 -0000\r\n\r\nbody")
    assert minus_zero.date is not None and minus_zero.date.utcoffset() == dt.timedelta(0)


def test_missing_date_uses_the_last_received_header() -> None:
    raw = (
        b"Received: from b by c; Wed, 02 Jul 2003 08:00:00 +0200\r\n"
        b"Received: from a by b;\r\n\tTue, 01 Jul 2003 23:59:00 -0400 (EDT)\r\n"
        b"Subject: no date\r\n\r\nbody"
    )
    parsed = parse_message(raw)
    assert parsed.date == dt.datetime(2003, 7, 1, 23, 59, tzinfo=dt.timezone(dt.timedelta(hours=-4)))
    assert parsed.parse_error == ""  # no Date header is not an error


def test_message_id_normalization() -> None:
    raw = (
        b"Message-ID:  <abc\r\n @example.com>  (comment)\r\n"
        b"In-Reply-To: Your message of Monday <parent@example.com>\r\n"
        b"References: <a@x> <b@x>\r\n <a@x>,<c@x>\r\n\r\n"
    )
    parsed = parse_message(raw)
    assert parsed.message_id == "abc@example.com"
    assert parsed.in_reply_to == "parent@example.com"
    assert parsed.references == ["a@x", "b@x", "c@x"]
    assert parse_message(b"Message-ID: bare@example.com\r\n\r\n").message_id == "bare@example.com"


def test_groups_and_garbage_in_address_lists() -> None:
    raw = (
        b'To: undisclosed-recipients:;, Friends: "Doe, Jane" <jane@x.org>, bob@x.org;\r\n'
        b"Cc: =?utf-8?q?Ren=C3=A9_M=C3=BCller?= <rene@x.org>, <>, ,\r\n"
        b'From: "Quoted \\"Name\\"" <q@x.org> (comment)\r\n\r\n'
    )
    parsed = parse_message(raw)
    assert [(a.name, a.address) for a in parsed.to] == [("Doe, Jane", "jane@x.org"), ("", "bob@x.org")]
    assert parsed.cc == [ParsedAddress("René Müller", "rene@x.org")]
    assert parsed.from_ == ParsedAddress('Quoted "Name"', "q@x.org")


def test_html_is_sanitized() -> None:
    html = (
        '<html><head><title>T</title><style>p{}</style></head><body onload="x()">'
        '<p onclick="steal()">Hi <a href="javascript:alert(1)">bad</a> <a href="https://ok.example">ok</a></p>'
        '<form action="/x"><input name="p"></form><iframe src="https://evil"></iframe>'
        '<img src="cid:logo@x" onerror="x()"><table><tr><td style="color: red; position: fixed">c</td></tr></table>'
        "</body></html>"
    )
    parsed = parse_message(b"Content-Type: text/html; charset=utf-8\r\n\r\n" + html.encode())
    clean = parsed.body_html
    for banned in ("<script", "onload", "onclick", "javascript:", "<form", "<input", "<iframe", "onerror", "position"):
        assert banned not in clean
    assert '<a href="https://ok.example" rel="noopener noreferrer">ok</a>' in clean
    assert '<img src="cid:logo@x">' in clean
    assert 'style="color:red"' in clean
    assert "Hi" in parsed.body_text and "ok" in parsed.body_text and "p{}" not in parsed.body_text


def test_nul_bytes_and_surrogates_never_reach_the_result() -> None:
    raw = b"Subject: a\x00b \xff\xfe\r\nFrom: N\x00ame <n@x>\r\n\r\nbo\x00dy \xed\xa0\x80"
    parsed = parse_message(raw)
    for text in (parsed.subject, parsed.body_text, parsed.raw_headers, parsed.from_.name if parsed.from_ else ""):
        assert_storable(text)
    assert parsed.subject.startswith("ab")


def deeply_nested(depth: int) -> bytes:
    parts = [f'Content-Type: multipart/mixed; boundary="b{i}"\r\n\r\n--b{i}\r\n'.encode() for i in range(depth)]
    return b"Subject: deep\r\nDate: Tue, 1 Jul 2003 10:52:37 +0000\r\n" + b"".join(parts) + b"\r\nleaf\r\n"


def test_nesting_beyond_the_stdlib_recursion_limit() -> None:
    parsed = parse_message(deeply_nested(3000))
    assert "nested too deeply" in parsed.parse_error
    assert parsed.subject == "deep"
    assert parsed.date is not None
    assert parsed.raw_headers.startswith("Subject: deep")


def test_nesting_beyond_max_depth_is_skipped() -> None:
    parsed = parse_message(deeply_nested(parsing.MAX_DEPTH + 5))
    assert f"deeper than {parsing.MAX_DEPTH}" in parsed.parse_error
    assert parsed.body_text == ""


def test_pathological_address_comment_does_not_lose_the_message() -> None:
    raw = b"Subject: parens\r\nTo: " + b"(" * 60_000 + b"\r\nCc: ok@example.com\r\n\r\nstill here"
    parsed = parse_message(raw)
    assert parsed.to == []
    assert parsed.cc == [ParsedAddress("", "ok@example.com")]
    assert parsed.body_text == "still here"
    assert "address list" in parsed.parse_error


@pytest.mark.parametrize("seed", range(20))
def test_random_bytes_never_raise(seed: int) -> None:
    rng = random.Random(seed)
    pieces = [
        b"Subject: =?utf-8?b?",
        b"Content-Type: multipart/mixed; boundary=z\r\n",
        b"--z\r\n",
        b"\r\n\r\n",
        b"=?",
        b"?=",
        b"Date: ",
        b"From: <",
        b"\xff\xfe\x00",
        b"Content-Transfer-Encoding: base64\r\n",
        bytes(rng.randrange(256) for _ in range(64)),
    ]
    raw = b"".join(rng.choice(pieces) for _ in range(rng.randrange(1, 200)))
    parsed = parse_message(raw)
    assert parsed.size == len(raw)
    assert_storable(parsed.subject)
    assert_storable(parsed.body_text)


def test_a_crash_inside_still_returns_raw_headers(monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(*args: object, **kwargs: object) -> str:
        raise RuntimeError("boom")

    monkeypatch.setattr(parsing.message, "_fill_headers", explode)
    raw = b"Subject: survives\r\nX-Other: 1\r\n\r\nbody"
    parsed = parse_message(raw)
    assert parsed.raw_headers == "Subject: survives\r\nX-Other: 1\r\n"
    assert "parse failed: RuntimeError: boom" in parsed.parse_error
    assert parsed.size == len(raw) and parsed.raw_sha256 == hashlib.sha256(raw).hexdigest()


def test_not_even_bytes() -> None:
    parsed = parse_message(12345)  # type: ignore[arg-type]
    assert "input is not bytes" in parsed.parse_error


def test_a_message_with_bare_cr_line_endings_is_read_like_its_crlf_twin_with_a_note() -> None:
    # Classic Mac OS line endings: no LF anywhere. Before, the whole message became one header line, stored
    # with an empty subject and body and no note.
    crlf = (
        b"From: Ana Lima <ana@example.com>\r\nTo: bo@example.com\r\nSubject: Quarterly figures\r\n"
        b"Date: Tue, 1 Jul 2003 10:52:37 +0000\r\nMessage-ID: <cr@example.com>\r\n\r\n"
        b"Revenue is up.\r\nSee you Monday.\r\n"
    )
    twin = parse_message(crlf)
    parsed = parse_message(crlf.replace(b"\r\n", b"\r"))
    assert (parsed.subject, parsed.message_id, parsed.date) == (twin.subject, twin.message_id, twin.date)
    assert parsed.from_ == twin.from_ and parsed.to == twin.to
    assert parsed.body_text.split() == twin.body_text.split() == ["Revenue", "is", "up.", "See", "you", "Monday."]
    assert "bare CR line endings" in parsed.parse_error and not twin.parse_error
    assert parsed.raw_sha256 != twin.raw_sha256  # the stored original is the bytes received


def test_a_stray_cr_inside_a_crlf_message_changes_nothing() -> None:
    raw = b"Subject: ok\r\nFrom: a@example.com\r\n\r\nline one\rstill line one\r\nline two\r\n"
    parsed = parse_message(raw)
    assert parsed.subject == "ok" and "bare CR" not in parsed.parse_error
    assert "line two" in parsed.body_text


def test_escaping_never_takes_the_stored_html_past_its_cap() -> None:
    # Every stray "<" becomes "&lt;": 4.9 MB of such text came out of sanitizing as 3.6 MB, over the 2 MB cap.
    html = "<p>" + "a < b & c > d " * 350_000 + "</p>"
    parsed = parse_message(b"Subject: soup\r\nContent-Type: text/html; charset=utf-8\r\n\r\n" + html.encode())
    assert 0.9 * MAX_HTML_SANITIZE_CHARS < len(parsed.body_html) <= MAX_HTML_SANITIZE_CHARS
    assert parsed.body_html.startswith("<p>a &lt; b &amp; c &gt; d") and parsed.body_html.endswith("</p>")
    assert parsed.parse_error.count("characters for display") == 1
