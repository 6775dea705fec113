# ruff: noqa: RUF001
"""Attachment text: PDF (plain and compressed, WinAnsi and ToUnicode fonts), DOCX, HTML,
text, through the shared extractor; dates and amounts in mail text."""

from __future__ import annotations

import datetime as dt
import io
import zipfile
import zlib

import pytest

from apps.accounts.demo_mailbox.pdf import build_pdf
from apps.ask.answer import EvidenceMessage, EvidenceText, collect_passages
from apps.ask.extraction import ExtractionError, attachment_kind, extract_text
from apps.ask.extractive import extractive_answer
from apps.ask.mailparts import forwarded_text, split_closing
from apps.ask.planner import Plan, plan_question
from apps.ask.textutil import (
    Passage,
    amount_number,
    find_amounts,
    find_dates,
    find_identifiers,
    find_phones,
    find_times,
    parse_day,
    passages,
    value_key,
)


def one_mail(subject: str, sender: str, date: str, body: str) -> list[EvidenceText]:
    """Evidence [1]: one mail read as the pipeline reads it (own text, closing, forwarded text)."""
    own, closing = split_closing(body)
    found = collect_passages(subject=subject, body=own, closing=closing, forwarded=forwarded_text(body), attachments=[])
    return [EvidenceText(1, subject, sender, date, "", body, found)]


def test_pdf_from_the_demo_writer() -> None:
    pdf = build_pdf(
        title="Hesap Özeti", lines=["Son Ödeme Tarihi: 11/05/2026", "a (b) \\ c"], created=dt.datetime.now(dt.UTC)
    )
    text = extract_text(pdf, filename="statement.pdf")
    assert "Hesap Özeti" in text
    assert "Son Ödeme Tarihi: 11/05/2026" in text.splitlines()
    assert "a (b) \\ c" in text


def _compressed_pdf_with_cid_font() -> bytes:
    """Flate content, a Type0 font whose 2-byte codes map to Unicode through a compressed ToUnicode CMap,
    and TJ kerning between words."""
    text = "Ödeme günü"
    codes = {ch: 0x0100 + i for i, ch in enumerate(sorted(set(text)))}
    encoded = "".join(f"{codes[ch]:04X}" for ch in text)
    cmap = "/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n"
    cmap += "1 begincodespacerange <0000> <FFFF> endcodespacerange\n"
    cmap += f"{len(codes)} beginbfchar\n" + "".join(f"<{c:04X}> <{ord(ch):04X}>\n" for ch, c in codes.items())
    cmap += "endbfchar\nendcmap end end\n"
    content = f"BT /C0 12 Tf 72 700 Td [<{encoded}>] TJ /F1 10 Tf 0 -14 Td [(Tutar)-250(12,50)] TJ ( TL) Tj ET".encode()
    objects: dict[int, bytes] = {}
    objects[1] = b"<< /Type /Catalog /Pages 2 0 R >>"
    objects[2] = b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>"
    objects[3] = b"<< /Type /Page /Parent 2 0 R /Resources << /Font << /C0 5 0 R /F1 8 0 R >> >> /Contents 4 0 R >>"
    objects[8] = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
    flate = zlib.compress(content)
    objects[4] = b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(flate) + flate + b"\nendstream"
    objects[5] = b"<< /Type /Font /Subtype /Type0 /BaseFont /Fake /Encoding /Identity-H /ToUnicode 6 0 R >>"
    cmap_bytes = zlib.compress(cmap.encode())
    objects[6] = b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(cmap_bytes) + cmap_bytes + b"\nendstream"
    out = bytearray(b"%PDF-1.5\n")
    offsets: dict[int, int] = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += b"%d 0 obj\n" % number + objects[number] + b"\nendobj\n"
    size = max(objects) + 2
    xref = len(out)
    out += b"xref\n0 %d\n" % size
    for number in range(size):
        out += b"%010d 00000 n \n" % offsets[number] if number in offsets else b"0000000000 65535 f \n"
    out += b"trailer\n<< /Root 1 0 R /Size %d >>\nstartxref\n%d\n%%%%EOF\n" % (size, xref)
    return bytes(out)


def test_compressed_pdf_with_unicode_font() -> None:
    text = extract_text(_compressed_pdf_with_cid_font(), mime_type="application/pdf")
    assert text.splitlines()[:2] == ["Ödeme günü", "Tutar 12,50 TL"]


def test_broken_or_encrypted_pdfs_raise() -> None:
    with pytest.raises(ExtractionError):
        extract_text(b"not a pdf at all", filename="a.pdf")
    with pytest.raises(ExtractionError):
        extract_text(
            b"%PDF-1.4\n1 0 obj << >> endobj\ntrailer << /Root 1 0 R /Encrypt 2 0 R >>\n%%EOF", filename="e.pdf"
        )


W_NAMESPACE = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def test_docx_html_and_text() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(
            "word/document.xml",
            f'<?xml version="1.0"?><w:document xmlns:w="{W_NAMESPACE}"><w:body>'
            "<w:p><w:r><w:t>Rechnung &amp; Zahlung</w:t></w:r>"
            '</w:p><w:p><w:r><w:t xml:space="preserve">Zahlbar bis </w:t><w:tab/><w:t>05.12.2026</w:t></w:r></w:p>'
            "</w:body></w:document>",
        )
    assert extract_text(buffer.getvalue(), filename="r.docx") == "Rechnung & Zahlung\nZahlbar bis 05.12.2026"
    html = "<html><body><h1>Invoice</h1><p>Total: <b>12 EUR</b></p><script>x()</script></body></html>"
    assert extract_text(html.encode(), mime_type="text/html").splitlines() == ["Invoice", "", "Total: 12 EUR"]
    assert extract_text("Grüße".encode("cp1252"), filename="a.txt") == "Grüße"
    assert extract_text(b"\x89PNG...", filename="photo.png") == ""
    assert attachment_kind("x.bin", "application/pdf") == "pdf"
    with pytest.raises(ExtractionError):
        extract_text(b"PK broken", filename="a.docx")


def test_dates_amounts_and_passages() -> None:
    text = "Son Ödeme Tarihi: 11/05/2026, Dönem Borcu: 8.406,90 TL; due December 5, 2026 or 15 Aralık 2026 (€1,234.56)"
    assert find_dates(text) == ["11/05/2026", "December 5, 2026", "15 Aralık 2026"]
    assert find_amounts(text) == ["8.406,90 TL", "€1,234.56"]
    assert value_key("15 Aralık 2026") == value_key("15.12.2026") == "15122026"
    wrapped = (
        "The replacement frame left our warehouse today (ParcelPoint tracking\nPP-5521-0938-DE). Thanks.\nTotal: 5 EUR"
    )
    assert [p.text for p in passages(wrapped, source="body")] == [
        "The replacement frame left our warehouse today (ParcelPoint tracking PP-5521-0938-DE). Thanks.",
        "Total: 5 EUR",
    ]


def test_month_names_come_from_dateparser_and_dates_may_lack_a_year() -> None:
    # Dutch was never in a list of ours: its month names come from dateparser's language data.
    assert find_dates("betaling op 12 januari 2027 graag") == ["12 januari 2027"]
    text = "Comments by Sept. 27th; he moves on Tuesday October 23. Ships 12 December 2001."
    assert find_dates(text) == ["Sept. 27th", "October 23", "12 December 2001"]
    # Without a year only a name of four letters or more, or a capitalised one, is a month: "may 5", "set 2"
    # are not dates, "Nov 26 - Jan 28 (no class Dec 24)" holds three.
    assert find_dates("you may 5 times, set 2 of 3, March 2001 report") == []
    assert find_dates("Monday nights, Nov 26 - Jan 28 (no class Dec 24)") == ["Nov 26", "Jan 28", "Dec 24"]
    assert parse_day("October 23", reference=dt.date(2001, 10, 17)) == dt.date(2001, 10, 23)
    assert parse_day("October 23") is None
    assert value_key("October 23") == value_key("10/23") == "1023"


def _evidence(*sentences: str) -> list[EvidenceText]:
    found = [Passage(s, "body") for s in sentences]
    return [EvidenceText(1, "Increased security", "security@example.com", "2001-10-26", "", " ".join(sentences), found)]


def test_an_answer_never_repeats_a_value_the_question_states() -> None:
    plan = Plan(question="when do futures close on October 4, 2001?", intent="question", answer_types=["date"])
    plan.keywords = ["futures", "close"]
    no_time = extractive_answer(plan, _evidence("Trading hours change on October 4, 2001.", "Futures close early."))
    assert "**October 4, 2001**" not in no_time.text and no_time.kinds_missing == ["time"]
    # the question names the day, so "when" asks for the time
    answer = extractive_answer(plan, _evidence("Trading hours change on October 4, 2001.", "Futures close at 2:30 PM."))
    assert answer.text.startswith("Time: **2:30 PM** [1]") and answer.kinds_found == ["time"]


def test_without_a_recognised_value_the_closest_sentences_are_quoted_and_the_gap_said() -> None:
    plan = Plan(question="what number should I call about suspicious behaviour?", intent="question")
    plan.answer_types, plan.keywords = ["amount"], ["number", "call", "suspicious", "behaviour"]
    answer = extractive_answer(
        plan, _evidence("We received a threat last week.", "If you see suspicious behaviour, call 3-6200.")
    )
    assert answer.text.startswith("I found no amount I could recognise in the best match")
    assert "“If you see suspicious behaviour, call 3-6200.” [1]" in answer.text
    assert answer.confidence == "low" and answer.kinds_missing == ["amount"]


def test_phone_numbers_and_extensions_are_identifiers_ranges_are_not() -> None:
    text = "Dial 1-800-937-6563 or call security at 3-6200; see pages 5-10 and ticket 7710-3392-18."
    assert find_identifiers(text) == ["1-800-937-6563", "3-6200", "7710-3392-18"]


def test_a_phone_number_keeps_its_area_code_and_international_prefix() -> None:
    text = "Call Corporate Security at (713) 345-2804 or our Istanbul desk on +90 212 555 0142 from 9 to 5."
    assert find_identifiers(text) == ["(713) 345-2804", "+90 212 555 0142"]
    assert find_identifiers("Fax (030) 1234567, room (12) 3.") == ["(030) 1234567"]


def test_an_open_question_quotes_the_sentence_with_a_new_value_not_one_restating_the_question() -> None:
    plan = Plan(question="what rate is on the credit request for contract 27496?", intent="question")
    plan.keywords = ["rate", "credit", "request", "contract"]
    sentences = (
        "Subject: Credit request Reliant Energy",
        "Contract # : 27496",
        "Please review the credit request below.",
        "Rate: $0.10",
    )
    evidence = [
        EvidenceText(1, "Credit request Reliant Energy", "credit@example.com", "2002-01-31", "", " ".join(sentences),
                     [Passage(s, "body") for s in sentences])
    ]  # fmt: skip
    answer = extractive_answer(plan, evidence)
    assert "“Rate: $0.10” [1]" in answer.text
    assert "Contract # : 27496" not in answer.text  # only restates the question's number
    assert "Subject: Credit request" not in answer.text  # a header line repeating the mail's subject


def test_a_long_mail_embeds_the_sentences_sharing_the_question_words_within_the_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from apps.ask import extractive

    embedded: list[str] = []
    similarities = extractive._similarities

    def counting(question: str, texts: list[str]) -> object:
        embedded.extend(texts)
        return similarities(question, texts)

    monkeypatch.setattr(extractive, "_similarities", counting)
    plan = Plan(question="what rate is on the credit request for contract 27496?", intent="question")
    plan.keywords = ["rate", "credit", "request", "contract"]
    filler = [f"Paragraph {n} of the weekly market commentary is about weather and storage. " * 3 for n in range(80)]
    sentences = (*filler[:50], "The credit request rate: $0.10 for the contract.", *filler[50:])
    answer = extractive_answer(plan, _evidence(*sentences))
    assert "$0.10" in answer.text
    assert sum(len(text) for text in embedded) <= extractive.EMBED_CHARACTERS + 500
    assert len(embedded) < len(sentences)


def test_a_value_is_marked_whole_never_inside_a_longer_number() -> None:
    plan = Plan(question="how much is the fee for marketing 101 MW?", intent="question", answer_types=["amount"])
    plan.keywords = ["fee", "marketing"]
    answer = extractive_answer(
        plan, _evidence("New fees.", "For 101 MW we charge $4 on the whole 101 MW, a total fee of $404.")
    )
    assert "we charge **$4** on the whole 101 MW, a total fee of **$404**." in answer.text, answer.text
    assert "$4**04" not in answer.text


def test_a_sentence_ending_in_a_colon_is_quoted_with_the_lines_it_introduces() -> None:
    body = (
        "We plan to hold a special meeting of the Board next week.\n"
        "Following are the proposed dates and times:\n\n\n"
        "October 22nd\t3:00 p.m. - 4:00 p.m. (CDT)\n"
        "October 23rd\t8:30 a.m. - 9:30 a.m. (CDT)\n\n"
        "Please reserve the above on your calendars.\n\n"
        "Kelly Johnson\nExecutive Assistant\n"
    )
    found = passages(body, source="body")
    assert [p.paragraph for p in found] == [0, 0, 1, 1, 2, 3, 3]
    plan = Plan(question="what is the first proposed slot for the special board meeting?", intent="question")
    plan.keywords = ["first", "proposed", "slot", "special", "board", "meeting"]
    evidence = [EvidenceText(1, "Special Board Meeting", "board@example.com", "2001-10-17", "", body, found)]
    answer = extractive_answer(plan, evidence)
    lines = answer.text.splitlines()
    intro = lines.index("“Following are the proposed dates and times:” [1]")
    assert lines[intro + 1 : intro + 3] == [
        "“October 22nd 3:00 p.m. - 4:00 p.m. (CDT)” [1]",
        "“October 23rd 8:30 a.m. - 9:30 a.m. (CDT)” [1]",
    ], answer.text
    assert "Executive Assistant" not in answer.text  # the list ends with its paragraph


def test_an_amount_keeps_its_scale_and_is_never_cut_inside_a_number() -> None:
    # Found on Enron: "$1.3 B" was answered as "$1.3"; "$500K" was read as "$50".
    text = "Receivables est. at $1.3 B for SCE and $1.0 B for PG&E; a $500K fee, $10MM of credit, 3 bn USD."
    assert find_amounts(text) == ["$1.3 B", "$1.0 B", "$500K", "$10MM", "3 bn USD"]
    assert amount_number("$1.3 B") == 1.3e9 and amount_number("$500K") == 5e5 and amount_number("£84.20") == 84.2


def test_a_time_keeps_its_am_or_pm() -> None:
    assert find_times("Meet at 2:00 p.m. (CST), or 9:30am; the desk closes at 10:15 PM.") == [
        "2:00 p.m.",
        "9:30am",
        "10:15 PM",
    ]


def test_a_month_abbreviated_with_a_period_is_a_date_even_across_a_wrapped_line() -> None:
    # Found on Enron: "the basketball tourney Feb.\n23 and 24" was cut after "Feb." and no date was found.
    body = (
        "You once asked me to let you know when the next Special Olympics event would\n"
        "be. It will be the basketball tourney Feb.\n23 and 24 at the fieldhouse.\n\n1. Parking\n2. Tickets"
    )
    texts = [p.text for p in passages(body, source="body")]
    assert any("tourney Feb. 23 and 24 at the fieldhouse." in text for text in texts)
    assert texts[-2:] == ["1. Parking", "2. Tickets"]  # numbered items stay lines
    assert find_dates("the tourney Feb. 23 and 24, not may 5") == ["Feb. 23"]


def test_a_phone_question_is_answered_with_the_phone_number_not_another_reference() -> None:
    question = "what's the phone number of the resort for the conference in Idaho?"
    assert plan_question(question, now=dt.datetime(2001, 10, 1, tzinfo=dt.UTC)).answer_types == ["phone"]
    plan = Plan(question=question, intent="question", answer_types=["phone"])
    plan.keywords = ["phone", "number", "resort", "conference", "idaho"]
    answer = extractive_answer(
        plan,
        _evidence(
            "The reception is in the Hagadone Suite (room #1801) at the resort.",
            "For reservations call the resort at (208) 765-4000 before October 1.",
        ),
    )
    assert "Phone: **(208) 765-4000** [1]" in answer.text, answer.text
    assert find_phones("room #1801, ticket PP-5521-0938-DE, call 3-6200 or (208) 765-4000") == [
        "3-6200",
        "(208) 765-4000",
    ]


def test_of_several_amounts_the_one_written_next_to_the_named_company_is_stated() -> None:
    # Found on Enron: "how much does PG&E owe" was answered with SCE's $1.3 B (the largest) instead of $1.0 B.
    plan = Plan(question="roughly how much does PG&E owe the QFs?", intent="question", answer_types=["amount"])
    plan.keywords, plan.entities = ["owe", "qfs"], ["PG&E", "QFs"]
    sentence = "The QFs want to know when they will be paid (est. at $1.3 B for SCE and about $1.0 B for PG&E)."
    answer = extractive_answer(plan, _evidence(sentence))
    assert "Amount: **$1.0 B** [1]" in answer.text, answer.text
    plan.entities = ["QFs"]  # no name next to either amount: the largest (the total) is stated
    assert "Amount: **$1.3 B** [1]" in extractive_answer(plan, _evidence(sentence)).text


def test_list_items_stay_passages_of_their_own() -> None:
    # Found on Enron: a list of "- " items without periods was joined into one passage, so the room of one item
    # answered a question about the course number of another.
    body = (
        "Course details:\n"
        "     - Class is held at Enron in room ECN560 and is restricted to Enron\n"
        "\t\temployees\n"
        "     - Each course is limited to eight students\n"
        "     * Meets once a week for eight weeks\n"
    )
    texts = [p.text for p in passages(body, source="body")]
    assert texts == [
        "Course details:",
        "Class is held at Enron in room ECN560 and is restricted to Enron employees",
        "Each course is limited to eight students",
        "Meets once a week for eight weeks",
    ]


def test_a_list_item_is_quoted_alone_so_another_item_does_not_answer() -> None:
    # Found on Enron: "what course number should I write…" was answered with the room "ECN560" of a list whose
    # "- " items had been joined into one long passage holding "course" three times.
    body = (
        "The next GMAT review course at Enron will begin Monday, November 26th:\nThe schedule is:\n"
        "     Course # 7019-00:  Monday nights, Nov 26 - Jan 28 (no class Dec 24 or\nDec 31)\n\n"
        "Course details:\n"
        "     - Class is held at Enron in room ECN560 and is restricted to Enron\n\t\temployees\n"
        "     - Each course is limited to eight students\n"
        "     - Meets once a week for eight weeks\n"
        "     - Course includes a total of four practice GMAT exams\n"
    )
    question = "what course number should I write on the registration form for the GMAT class at Enron?"
    plan = Plan(question=question, intent="question", answer_types=["identifier"])
    plan.keywords = ["course", "number", "write", "registration", "form", "gmat", "class", "enron"]
    subject = "FW: GMAT Review available at Enron"
    found = passages(body, source="body")
    evidence = [EvidenceText(1, subject, "david.allan@enron.com", "2001-11-15", "", body, found)]
    answer = extractive_answer(plan, evidence)
    assert "Reference: **7019-00** [1]" in answer.text, answer.text


def test_a_phone_number_in_the_closing_answers_a_phone_question_and_nothing_else() -> None:
    # Found on Enron: the resort's "Telephone: (208) 765-4000" sat in the short-line paragraphs at the end of
    # the mail, which were dropped as a signature, so "what's the phone number of the resort" had no answer.
    body = (
        "WSPP Meeting, October 11-12, 2001, Coeur D'Alene, Idaho\n\n"
        "Reception, Thursday, October 11, 6:30 - 8:30 p.m. (Sponsored by Williams)\n\n"
        "Lodging Information\n\n"
        "Coeur D'Alene Resort - The Lake\n115 S 2nd Street\nCoeur D'Alene, ID 83814\n\n"
        "Telephone:          (208) 765-4000\n"
    )
    own, closing = split_closing(body)
    assert "765-4000" not in own and "Telephone:" in closing
    found = collect_passages(subject="WSPP attendance details", body=own, closing=closing, attachments=[])
    # The better-ranked mail's closing is its sender's signature: its phone number is not the resort's.
    invitation = (
        "For those of you arriving on Wednesday to the WSPP conference in Coeur d'Alene, Idaho we would like to"
        " invite you to a reception from 8:00 - 10:00 p.m. in the Hagadone Suite at the Coeur d'Alene Resort.\n\n"
        "Jennifer Lietz\nCalpine Corporation\nPhone: 503-552-3785\n"
    )
    own_invitation, signature = split_closing(invitation)
    evidence = [
        EvidenceText(
            1, "WSPP Conference Reception", "jlietz@calpine.com", "2001-10-05", "", invitation,
            collect_passages(subject="Reception", body=own_invitation, closing=signature, attachments=[]),
            score=1.0,
        ),
        EvidenceText(2, "WSPP attendance details", "anna.mehrer@enron.com", "2001-09-24", "", body, found, score=0.9),
    ]  # fmt: skip
    question = "what's the phone number of the resort where we stay for the WSPP meeting in Idaho?"
    plan = plan_question(question, now=dt.datetime(2001, 10, 1, tzinfo=dt.UTC))
    assert plan.answer_types == ["phone"]
    answer = extractive_answer(plan, evidence)
    assert "Phone: **(208) 765-4000** [2]" in answer.text, answer.text
    assert "503-552-3785" not in answer.text
    # Any other question quotes the mail's own text, never its closing.
    plan = plan_question("where do we stay for the WSPP meeting?", now=dt.datetime(2001, 10, 1, tzinfo=dt.UTC))
    answer = extractive_answer(plan, evidence)
    assert "765-4000" not in answer.text and "Lodging" not in answer.text, answer.text


def test_a_label_line_ending_in_a_colon_and_its_value_line_are_one_passage() -> None:
    # Found on Enron: "Avista not paid that has been processed to SAP (…):" / "$2,731,844.49" were two passages,
    # so the amount of the line above ($744,060.96) answered "how much is still unpaid on the Avista side".
    body = (
        "Harry & Wade - Here is what I am seeing for Con Ed:\n\n"
        "CSC payables not paid (all power):\n"
        "$682,263.97  +  $61796.99 (rec'd from CSC yesterday but not in SAP yet) = $744,060.96\n\n"
        "Avista not paid that has been processed to SAP (there are files that have not been processed):\n"
        "$2,731,844.49\n\n"
        "The new fees are as follows:\n- $10 a month\n- $12 a month\n"
    )
    texts = [p.text for p in passages(body, source="body")]
    assert texts[2] == (
        "Avista not paid that has been processed to SAP (there are files that have not been processed): $2,731,844.49"
    )
    assert texts[-3:] == ["The new fees are as follows:", "$10 a month", "$12 a month"]  # a list stays lines
    question = "how much is still unpaid on the Avista side that has already been processed in SAP?"
    plan = plan_question(question, now=dt.datetime(2001, 12, 20, tzinfo=dt.UTC))
    evidence = [
        EvidenceText(
            1, "FW: Con Ed Update", "lynne.ruffer@enron.com", "2001-12-18", "", body, passages(body, source="body")
        )
    ]
    assert "Amount: **$2,731,844.49** [1]" in extractive_answer(plan, evidence).text


def test_a_forwarded_message_below_the_separator_can_answer_without_its_header_block() -> None:
    # Found on Enron: "what daily fee did PNM pay…" is answered in the message a colleague forwarded below
    # "-----Original Message-----"; only the forwarder's two lines of their own were read.
    body = (
        "Shelley, wanted to pass this on to you.  Mike and I just talked about this and we are going\n"
        "to work with Richard to be sure this cannot happen in the future.  Thanks. Lynn\n\n"
        " -----Original Message-----\n"
        "From: \tBodnar, Michael  \nSent:\tFriday, October 12, 2001 4:06 PM\nTo:\tWatson, Kimberly\nCc:\t\n"
        "Subject:\tPNR Balance on PNM Cr# 25672\n\n"
        "In analyzing shipper imbalance statements, Laura discovered a PNR balance of 10,000 Dth on the above\n"
        "noted contract. The balance was parked on TW on April 26, 2000 and PNM paid a $0.03 per Dth/d fee in\n"
        "that month. TW has not billed PNR fees on the balance since May 1, 2000.\n"
    )
    forwarded = forwarded_text(body)
    assert forwarded.startswith("In analyzing shipper imbalance statements")
    assert "Sent:" not in forwarded and "Subject:" not in forwarded and "Thanks. Lynn" not in forwarded
    own, closing = split_closing(body)
    found = collect_passages(subject="FW: PNR Balance", body=own, closing=closing, forwarded=forwarded, attachments=[])
    evidence = [EvidenceText(1, "FW: PNR Balance", "michael.bodnar@enron.com", "2001-10-17", "", body, found)]
    question = "how much was the daily fee PNM paid in the month its 10,000 Dth imbalance was parked?"
    answer = extractive_answer(plan_question(question, now=dt.datetime(2001, 10, 20, tzinfo=dt.UTC)), evidence)
    assert "Amount: **$0.03** [1]" in answer.text and "PNM paid a **$0.03** per Dth/d fee" in answer.text, answer.text
    # Quoted reply lines (">") stay out: they are the reader's own words sent back.
    assert forwarded_text("Sounds good to me, see you there then.\n\n> When do we meet?\n> Tuesday at 10") == ""


def test_a_forward_that_only_relays_an_older_message_of_the_thread_does_not_take_its_answer() -> None:
    # Found on Enron: once forwarded text was read, "FW: MLMG shares in Bears" (newest of its thread, and
    # quoting the original's values) won over the original, and its best sentences held no bid.
    original = (
        "Sara\n\nWe have a bid on the 91,674 MLMG shares held in account # 102-25786-USD-27 at Bear Stearns.\n"
        "Paul Voigt from Jefferies showed us a bid of $2.25 several days ago. The bid now\n"
        "may be $1.50 only due to size of the holding & illiquidity in the name.\n"
    )
    forward = (
        "Mike,\nThis is the updated status I had on the Position still in the Enron Credit Inc. account at Bear"
        " Stearns.\n\nThanks for the follow-up.\nSheila\n\n -----Original Message-----\nFrom: \tHemsley, Simon\n"
        "Sent:\tThursday, December 20, 2001 9:34 AM\nSubject:\tMLMG shares in Bears\n\n" + original
    )

    def message(subject: str, body: str, day: int) -> EvidenceMessage:
        own, closing = split_closing(body)
        found = collect_passages(
            subject=subject, body=own, closing=closing, forwarded=forwarded_text(body), attachments=[]
        )
        return EvidenceMessage(subject, "x@enron.com", f"2001-12-{day}", dt.datetime(2001, 12, day).timestamp(), found)

    members = [message("MLMG shares in Bears", original, 20), message("FW: MLMG shares in Bears", forward, 27)]
    evidence = [EvidenceText(1, members[0].subject, "x@enron.com", "2001-12-20", "", original, members[0].passages)]
    evidence[0].members = members
    plan = plan_question("what bid did we get for the MLMG shares at Bear Stearns?", now=dt.datetime(2002, 1, 5))
    answer = extractive_answer(plan, evidence)
    assert "From “MLMG shares in Bears”" in answer.text and "bid of $2.25" in answer.text, answer.text


def test_a_reference_question_takes_a_field_number_not_a_phone_number() -> None:
    # A field line's bare number is a reference ("New Contract Number: 2053"); a phone number in the same mail
    # is not (the phone kind asks for those); "#  5531" with a space is a ticket number too.
    body = (
        "Kim,\n\nThe capacity release is set up. Please call me at (713) 853-6795 with questions.\n\n"
        "New Contract Number: 2053\n\nThe release starts on the first of the month at the agreed rate.\n\n"
        "Thanks,\nTerry\n"
    )
    evidence = one_mail("Capacity release", "terry@enron.com", "2001-05-02", body)
    question = "what is the new contract number for the capacity release?"
    answer = extractive_answer(plan_question(question, now=dt.datetime(2001, 5, 5, tzinfo=dt.UTC)), evidence)
    assert "**2053**" in answer.text, answer.text
    assert "853-6795" not in answer.text.split("\n")[0], answer.text
    assert "# 5531" in find_identifiers("Your ticket is # 5531 now.")[0]


def test_a_rule_of_stars_inside_the_text_is_not_a_forward_header() -> None:
    # Only a block of "Label: value" lines naming an address or a time of day is a forwarded header; a table of
    # fields under a rule ("Contract: 933") stays readable text.
    body = "Please see the figures for the deal below.\n\n*****\nContract: 933\nVolume: 10,000\n\nThe rest.\n"
    forwarded = forwarded_text(body)
    assert "Contract: 933" in forwarded and "Volume: 10,000" in forwarded, forwarded
    header = "-----Original Message-----\nFrom: a@b.com\nSent: Friday, October 12, 2001 4:06 PM\n\nThe body.\n"
    assert forwarded_text("Fyi, this is the note from last week.\n\n" + header) == "The body."


def test_text_after_a_signature_and_a_short_rule_is_read_not_dropped_as_a_disclaimer() -> None:
    # Found on Enron: a note forwarding a filing below its signature and a "***" line; the filing (with the
    # protest deadline) was taken for a disclaimer after the signature and never read.
    body = (
        "Please let me know if you would like more information on the filing referenced below.\n\n"
        "Susan Scott Lindberg\n713.853.0596\nsscott3@enron.com\n\n***\n"
        "On June 12, 2001, the NSTAR Companies tendered for filing an amendment to their Open Access\n"
        "Transmission Tariff for the Phase I/Phase II HVDC facilities.  Protests are due July 3, 2001."
    )
    forwarded = forwarded_text(body)
    assert "Protests are due July 3, 2001." in forwarded, forwarded
    evidence = one_mail("NSTAR filing", "susan.scott@enron.com", "2001-06-19", body)
    question = "what was the deadline for protests against the NSTAR tariff amendment?"
    answer = extractive_answer(plan_question(question, now=dt.datetime(2001, 6, 20, tzinfo=dt.UTC)), evidence)
    assert "**July 3, 2001**" in answer.text, answer.text
    # "--" alone is still the signature marker, not a rule
    assert forwarded_text("Thanks for the quick answer on the filing today.\n--\nSusan\n") == ""


def test_a_number_to_call_is_answered_with_the_phone_number_when_the_mail_has_no_other() -> None:
    body = (
        "Thank you for the drafts.  We are working on comments and hope to get you a redraft this week.\n"
        "Please give me a call at 203-761-8497 if you have questions.\n\nBill Rippe\n"
    )
    evidence = one_mail("Re: Master Netting", "rippew@ld.example", "2001-11-26", body)
    plan = plan_question("which number do we use for Bill's comments on the agreement?", now=dt.datetime.now(dt.UTC))
    assert plan.answer_types == ["identifier"]
    answer = extractive_answer(plan, evidence)
    assert "Phone: **203-761-8497** [1]" in answer.text, answer.text


def test_a_field_lines_number_may_carry_a_pound_sign() -> None:
    # "Passcode: 5323#" (a conference call's passcode) is the field's reference, as "Contract: 2053" is.
    body = (
        "The call is set for Thursday afternoon and we have four ports reserved for the group.\n\n"
        "Passcode:\t5323#\n\nPlease let me know if you need more ports for the remote people.\n\nThanks,\nDee\n"
    )
    evidence = one_mail("Dial-in Information", "dee@enron.com", "2001-10-24", body)
    plan = plan_question("what passcode do we use to join the call?", now=dt.datetime(2001, 10, 24, tzinfo=dt.UTC))
    answer = extractive_answer(plan, evidence)
    assert "**5323#**" in answer.text, answer.text


def test_a_labelled_value_below_the_sign_off_answers_the_question_that_names_its_label() -> None:
    # Seen on Enron (bench/data/ask_questions_fifth.json): an airline's reply put "TRACKING NUMBER: …" under
    # its signature, and the answer took the customer's loyalty number from the quoted form below instead.
    body = (
        "Dear Ms. Ortiz:\n\nThank you for calling us about the missing itinerary; a copy is on its way by fax.\n\n"
        "Regards,\nPassenger Relations\nMarta Blum\n\n"
        "CASE TRACKING NUMBER: Q00000482211-00007731026\n\n"
        "     -----Original Message-----\n     From: dana.ortiz@example.com\n     Sent: 3 Apr 02 09:12:44\n\n"
        "Name: Dana Ortiz\nMember Account Number: KT558102\nI never received the itinerary for my flight.\n"
    )
    evidence = one_mail("Re: Feedback form", "relations@airline.example", "2002-04-04", body)
    now = dt.datetime(2002, 4, 5, tzinfo=dt.UTC)
    plan = plan_question("what tracking number did the airline give me for my complaint?", now=now)
    assert plan.answer_types == ["identifier"]
    answer = extractive_answer(plan, evidence)
    assert "**Q00000482211-00007731026**" in answer.text and "KT558102" not in answer.text, answer.text
    # A closing line whose label the question does not ask for still answers nothing.
    plan = plan_question("what account number is in the form I sent?", now=now)
    answer = extractive_answer(plan, evidence)
    assert "Q00000482211" not in answer.text, answer.text


def test_transport_header_lines_of_a_forwarded_raw_message_are_never_quoted() -> None:
    body = (
        "See below, thought you would like this one.\n\n"
        "Received: from relay-7.example.net ([10.2.10.242]) by mx.example.com with ESMTP id RELAYX5-1113095000;"
        " Tue, 13 Nov 2001 09:50:00 -0500\n"
        "Message-ID: <EX-20011113-085208-0001@mail.example.net>\n"
        "X-Mailer: Internet Mail Service (5.5.2653.19)\n\n"
        "The radio host tells the story of a farmer who sold his land on 13 November for $40,000.\n"
    )
    found = passages(body, source="body")
    assert [p.text for p in found if p.text.startswith(("Received:", "Message-ID:", "X-Mailer:"))] == []
    evidence = one_mail("Fwd: a story", "friend@example.com", "2001-11-14", body)
    plan = plan_question("when did the farmer sell his land?", now=dt.datetime(2001, 11, 20, tzinfo=dt.UTC))
    answer = extractive_answer(plan, evidence)
    assert "**13 November**" in answer.text and "ESMTP" not in answer.text, answer.text


def test_link_targets_after_a_links_text_are_not_words_or_values_but_a_written_url_stays() -> None:
    # Seen on Enron (the fifth question file): a booking confirmation converted from HTML quoted its link lines
    # ("… online at Cancun, Mexico <http://…?itid=36444927>") for "what was the total charged …": the host
    # matched the question's words and the link's digits counted as a reference.
    body = (
        "Thank you for booking with Travelsite.\n\n"
        "You can view your itinerary for Lisbon, Portugal online <http://www.travelsite.example/trip?itid=88123456&v=1>\n\n"
        "Print a receipt <http://www.travelsite.example/receipt?itid=88123456>\t\n\n"
        "Fare summary\t\n\n"
        "Total (Visa) \t$812.40 \t\n\n"
        "The new extranet lives at http://files.example.org/lisbon from Monday.\n"
    )
    texts = [p.text for p in passages(body, source="body")]
    assert "You can view your itinerary for Lisbon, Portugal online" in texts
    assert not any("itid=" in text for text in texts)
    assert "The new extranet lives at http://files.example.org/lisbon from Monday." in texts
    evidence = one_mail("Travelsite booking confirmed", "trips@travelsite.example", "2002-03-08", body)
    plan = plan_question(
        "What was the total charged to my Visa for the Travelsite trip to Lisbon?",
        now=dt.datetime(2002, 3, 10, tzinfo=dt.UTC),
    )
    answer = extractive_answer(plan, evidence)
    assert "Total (Visa) $812.40" in answer.text and "88123456" not in answer.text, answer.text
