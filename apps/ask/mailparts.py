"""The parts of a mail body, by structure only (no language word lists): the text its sender wrote, the
closing (sign-off, signature, disclaimer) and the messages it forwards or replies to below a separator rule,
without their header blocks."""

from __future__ import annotations

import re

from apps.ask.textutil import KEY_VALUE, TIME_RE, find_amounts, find_dates


def _is_closing(paragraph: str) -> bool:
    """Sign-off, name, company, address lines: short lines, no sentence, no date or amount."""
    rows = [r for r in paragraph.split("\n") if r.strip()]
    return (
        bool(rows)
        and all(len(r.split()) <= 10 and not r.rstrip().endswith((".", "?", "!")) for r in rows)
        and not find_dates(paragraph)
        and not find_amounts(paragraph)
    )


# A separator rule: "-----Original Message-----", "_____", or a line of three or more of one rule character
# alone ("***", "---"; "--" alone is the signature marker).
_RULE_LINE = re.compile(r"^\s*(?:[-_=*~]{5,}|([-_=*~])\1{2,}\s*$)")
QUOTE_LINE = re.compile(r"^\s*(?:>\s?)+")


# After a paragraph of short lines, a last paragraph of one line of this many words (from, below) is the mail's
# own sentence ("Any questions, please call Rich Jolly (505) 260-4003.", 14 words), and so is the short paragraph
# above it ("(877) 795-3687   Code No. 491582"); a shorter one is a name ("Regards," / "Karen."), a longer
# one a disclaimer ("This e-mail is the property of … and may contain confidential …", 60-100 words).
OWN_LINE_WORDS = (5, 25)


def _own_last_line(paragraph: str) -> bool:
    """One line of OWN_LINE_WORDS words: a sentence of the sender's, not a name or a signature's lines."""
    line = paragraph.strip()
    return "\n" not in line and OWN_LINE_WORDS[0] <= len(line.split()) < OWN_LINE_WORDS[1]


def _is_sign_off(paragraph: str) -> bool:
    """A paragraph that is one short line ending in a comma ("Many Thanks,", "Best regards,")."""
    line = paragraph.strip()
    return "\n" not in line and line.endswith(",") and len(line.split()) <= 4


def own_text(body: str) -> str:
    return split_closing(body)[0]


def _history_starts(line: str, kept: list[str], *, notes_header: bool = False) -> bool:
    """A separator rule ("-----Original Message-----", "_____") or the first line of a Lotus Notes header
    block (_notes_headers), once the mail has text of its own."""
    return (bool(_RULE_LINE.match(line)) or notes_header) and any(len(k.split()) >= 5 for k in kept)


# A field label written in a column of its own, after a wide gap or a deep indent: the tabular header Lotus Notes
# writes above a message it replies to or forwards ("            10/16/2001 09:24 AM          Subject: …").
# A gap is entered only after a non-blank character and taken whole (possessive), so a line of long blank runs
# costs linear time: the lazy form took 2.5 s on a 16,000-character line (a text table) and 3 s for one question.
_COLUMN_LABEL = re.compile(r"^(?:[ \t]*+\S(?:.*?\S)??[ \t]{5,}+|[ \t]{20,}+)[^\W\d_][\w-]{0,20}:(?:\s|$)")


def _notes_headers(lines: list[str]) -> tuple[set[int], set[int]]:
    """(first lines, all lines) of Lotus Notes header blocks: runs of non-blank lines holding two labels in a
    column of their own (_COLUMN_LABEL), an address ("@") and a time of day. No word of any language is read:
    the labels' column, the address and the time make the block."""
    starts: set[int] = set()
    inside: set[int] = set()
    index = 0
    while index < len(lines):
        if not lines[index].strip():
            index += 1
            continue
        end = index
        while end < len(lines) and lines[end].strip():
            end += 1
        run = lines[index:end]
        text = "\n".join(run)
        if sum(1 for line in run if _COLUMN_LABEL.match(line)) >= 2 and "@" in text and TIME_RE.search(text):
            starts.add(index)
            inside.update(range(index, end))
        index = end
    return starts, inside


_HEADER_LINE = re.compile(r"^\s*[^\s:][^:]{0,30}:(?:\s|$)")
HEADER_LEAD_LINES = 3  # lines before a header block's first "Label:" line (Notes: '"Name" <a@b> on 10/11/2001')


def forwarded_text(body: str) -> str:
    """The messages a mail forwards or replies to below a separator rule, which own_text leaves out, without
    their header blocks ("From:", "Sent:", "Von:", "Kimden:" … the "Label: value" lines after a rule) and
    quote marks. A forward's answer is often there ("PNM paid a $0.03 per Dth/d fee in that month")."""
    lines = body.replace("\r\n", "\n").split("\n")
    notes_starts, notes_lines = _notes_headers(lines)
    kept: list[str] = []
    start: int | None = None
    for index, line in enumerate(lines):
        if line.rstrip() == "--" or line == "-- ":
            return ""
        if _history_starts(line, kept, notes_header=index in notes_starts):
            start = index
            break
        kept.append(line)
    if start is None:
        return ""
    history: list[str] = []
    header: list[str] | None = None  # the lines of the header block being skipped, None outside one
    for index, line in enumerate(lines[start:], start=start):
        if index in notes_lines:
            continue
        plain = QUOTE_LINE.sub("", line)
        if _RULE_LINE.match(plain):
            header = []
            continue
        if header is not None:
            labelled = any(_HEADER_LINE.match(h) for h in header)
            if _HEADER_LINE.match(plain) or (not plain.strip() and not labelled):
                header.append(plain)
                continue
            if not labelled and plain.strip() and len(header) < HEADER_LEAD_LINES:
                header.append(plain)
                continue
            was_header = _is_message_header(header)
            if not was_header:  # a rule inside the text ("*****"), not a forward: keep it all
                history.extend(header)
            header = None
            if was_header and not plain.strip():  # the blank line that ends the header block
                continue
        history.append(plain)
    if header and not _is_message_header(header):
        history.extend(header)
    return "\n".join(history).strip()


def _without_header_blocks(lines: list[str]) -> list[str]:
    """`lines` less each separator rule followed by a forwarded message's header block ("-----Original
    Message-----" / "From: …" / "Sent: …"): kept in a mail's own text when it starts with a reply of a few
    words ("old one. thanks!."), a "Sent: Tuesday, January 22, 2002 10:00 AM" line was quoted as an answer."""
    kept: list[str] = []
    index = 0
    while index < len(lines):
        if not _RULE_LINE.match(lines[index]):
            kept.append(lines[index])
            index += 1
            continue
        end = index + 1
        while end < len(lines) and (_HEADER_LINE.match(lines[end]) or not lines[end].strip()):
            end += 1
        if _is_message_header([line for line in lines[index + 1 : end] if line.strip()]):
            index = end
        else:
            kept.append(lines[index])
            index += 1
    return kept


def _is_message_header(lines: list[str]) -> bool:
    """A forwarded message's header block: "Label: value" lines, one naming an address or a time of day
    ("From: a@b.com", "Sent: Friday, October 12, 2001 4:06 PM"), not a table of fields ("Contract: 933")."""
    text = "\n".join(lines)
    return any(_HEADER_LINE.match(line) for line in lines) and ("@" in text or bool(TIME_RE.search(text)))


def split_closing(body: str) -> tuple[str, str]:
    """(own text, closing). The own text is the part of a mail body its sender wrote, by structure only
    (no language word lists): quoted
    lines (">"), the attribution line just before them, everything after a separator rule ("-----Original
    Message-----", "_____") once the mail has text of its own, the "-- " signature and everything after it,
    and the closing block: the last paragraph(s) of short lines (sign-off, name, company) plus whatever
    follows them (disclaimers). The closing's short-line paragraphs (sign-off, name, phone, address) are
    returned apart: a phone number is asked for there, nothing else is."""
    lines = body.replace("\r\n", "\n").split("\n")
    notes_starts, notes_lines = _notes_headers(lines)
    kept: list[str] = []
    for index, line in enumerate(lines):
        if line.rstrip() == "--" or line == "-- ":
            break
        if _history_starts(line, kept, notes_header=index in notes_starts):
            break
        if index in notes_lines:  # a Notes header block before any text of the mail's own
            continue
        if line.lstrip().startswith(">"):
            continue
        following = next((n for n in lines[index + 1 :] if n.strip()), "")
        if line.rstrip().endswith(":") and following.lstrip().startswith(">"):
            continue
        kept.append(line)
    kept = _without_header_blocks(kept)
    # blank lines (whitespace-only ones too: "assistance.\n    \nKind regards,") separate paragraphs
    paragraphs = re.split(r"\n[ \t\u00a0]*\n(?:[ \t\u00a0]*\n)*", "\n".join(kept).strip())
    # The closing: from the end, drop the disclaimer-and-signature tail. A paragraph whose every line is
    # short (≤ 6 words, no sentence) is a sign-off/signature; a long paragraph after one is a disclaimer.
    cut = len(paragraphs)
    for position in range(len(paragraphs) - 1, 0, -1):
        if _is_closing(paragraphs[position]):
            cut = position
            continue
        if cut < len(paragraphs) and position == cut - 1:
            break
        # a trailing long paragraph is a disclaimer only when a short signature paragraph precedes it
        if (
            cut == len(paragraphs)
            and position == len(paragraphs) - 1 > 1
            and _is_closing(paragraphs[position - 1])
            and not _own_last_line(paragraphs[position])
        ):
            cut = position - 1
            continue
        break
    # Short lines above the sign-off are the mail's own ("Host Code: 869944" / "Participant code: 107058",
    # then "Many Thanks," and the name): the closing starts at a sign-off line when it has one.
    sign_off = next((p for p in range(cut, len(paragraphs)) if _is_sign_off(paragraphs[p])), None)
    if sign_off is not None:
        cut = sign_off
    else:
        # Without a sign-off, "Label: value" paragraphs right after the text ("Cell Number: 011-44-…" under
        # "The following is contact information for John Sheriff.") are its own; a signature starts with a name.
        while cut < len(paragraphs) and all(KEY_VALUE.match(row.strip()) for row in paragraphs[cut].split("\n")):
            cut += 1
    closing = "\n\n".join(p for p in paragraphs[cut:] if _is_closing(p))
    paragraphs = paragraphs[:cut]
    # The greeting: a first line of at most four words ending in a comma or colon ("Dear Mr Kaya,").
    if paragraphs:
        first_rows = paragraphs[0].split("\n")
        head = first_rows[0].strip()
        if len(head.split()) <= 4 and head.endswith((",", ":", "!")):
            paragraphs[0] = "\n".join(first_rows[1:])
    return "\n\n".join(p for p in paragraphs if p.strip()), closing
