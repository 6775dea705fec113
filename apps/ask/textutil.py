"""Dates, amounts and passages in mail text: shared by the planner, the reranker and the answer."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from apps.ask.monthnames import language_data, languages, months, weekdays
from apps.search.folding import STOPWORDS, fold

# Month names come from dateparser's language data (apps/ask/monthnames.py), not from a list kept here.
MONTHS: dict[str, int] = months()
WEEKDAYS: frozenset[str] = weekdays()

# 11/05/2026, 15.12.2026, 2026-12-05, 5 December 2026, December 5, 2026, 15 Aralik 2026, June 6th, 23 oct.,
# Wed, 6th (a day of the week and an ordinal day)
# (matched on folded text). The word is a month only when MONTHS knows it; without a year only a name of
# four letters or more counts ("Sept. 27th", "October 23"), so "may 5" or "set 2" are not dates.
_NUMERIC_DATE_RE = r"\d{1,2}[./-]\d{1,2}[./-](?:\d{4}|\d{2})\b|\d{4}-\d{2}-\d{2}\b"
_ORDINAL = r"(?:st|nd|rd|th)?"
_ORDINAL_ENDS = ("st", "nd", "rd", "th")


def _pertain_words() -> list[str]:
    """The words that join a day to its month in the configured languages ("19th of November", "1 de mayo"),
    from dateparser's language data."""
    words: set[str] = set()
    for code in languages():
        words.update(fold(w).lower() for w in language_data(code).get("pertain") or () if w.isalpha())
    return sorted(words, key=len, reverse=True)


_PERTAIN = "|".join(re.escape(w) for w in _pertain_words()) or "(?!)"
DATE_RE = re.compile(
    rf"\b(?:(?P<numeric>{_NUMERIC_DATE_RE})"
    rf"|\d{{1,2}}{_ORDINAL}\.?\s+(?:(?:{_PERTAIN})\s+)?(?P<after>[^\W\d_]{{3,}})(?:(?P<dot_after>\.)|\b)(?:,?\s+(?P<year_after>\d{{4}})\b)?"
    rf"|(?P<before>[^\W\d_]{{3,}})(?P<dot_before>\.)?\s+\d{{1,2}}{_ORDINAL}(?:,?\s+(?P<year_before>\d{{4}}))?\b"
    rf"|(?P<weekday>[^\W\d_]{{3,}})\.?,?\s+\d{{1,2}}(?:st|nd|rd|th)\b)",
    re.IGNORECASE,
)


def _date_spans(folded: str) -> list[tuple[int, int]]:
    """Where DATE_RE finds a real date: a numeric one, or a month name MONTHS knows (with a year, of at least
    four letters, abbreviated with a period: "Feb. 23", or capitalised: "Nov 26", "Dec 24", not "may 5" or
    "set 2"). A rejected candidate is retried one character later, so "ships 12 December 2001" still yields
    "12 December 2001"."""
    spans: list[tuple[int, int]] = []
    position = 0
    while (match := DATE_RE.search(folded, position)) is not None:
        written = match.group("after") or match.group("before") or ""
        name = written.lower()
        year = match.group("year_after") or match.group("year_before")
        abbreviated = bool(match.group("dot_after") or match.group("dot_before")) or written[:1].isupper()
        if (
            match.group("numeric")
            or (name in MONTHS and (year or len(name) >= 4 or abbreviated))
            or (match.group("weekday") or "").lower() in WEEKDAYS  # "Wed, 6th"
            or (name in WEEKDAYS and not year and match.group(0)[-2:].lower() in _ORDINAL_ENDS)  # "Sunday 21st"
        ):
            spans.append((match.start(), match.end()))
            position = match.end()
        else:
            position = match.start() + 1
    return spans


_CURRENCY = r"(?:TL|TRY|EUR|USD|GBP|CHF|SEK|NOK|DKK|PLN|€|\$|£|₺|euros?|dollars?|lira)"
_NUMBER = r"\d{1,3}(?:[.,\u00a0\u202f]\d{3})*(?:[.,]\d{1,2})?|\d+(?:[.,]\d{1,2})?"
# A scale written after the number is part of the amount: "$1.3 B" is not "$1.3", "$500K" is not "$50".
_SCALES = {"k": 1e3, "thousand": 1e3, "m": 1e6, "mm": 1e6, "mn": 1e6, "mio": 1e6, "million": 1e6, "b": 1e9,
           "bn": 1e9, "mrd": 1e9, "billion": 1e9, "trillion": 1e12}  # fmt: skip
_SCALE = rf"(?:\s?(?:{'|'.join(sorted(_SCALES, key=len, reverse=True))})s?(?![A-Za-z]))"
# The lookahead (a digit, a sign, a currency symbol or the first letter of a currency word) lets the scan skip
# the other positions without trying every currency alternative there: 8 -> 4.6 ms over 20,000 characters.
AMOUNT_RE = re.compile(
    rf"(?=[\d\-$€£₺TEUGCSNDPL])(?:{_CURRENCY}[ \t]{{0,4}}-?(?:{_NUMBER})(?![\d.,]\d){_SCALE}?"
    rf"|-?(?:{_NUMBER})(?![\d.,]\d){_SCALE}?\s?{_CURRENCY})(?![A-Za-z\d])",
    re.IGNORECASE,
)
# A new sentence starts with a capital: not "Feb. 23", "No. 5" or "approx. 30"; and not after an initialism of
# single letters ("5:00 p.m. CST", "e.g. Houston") or one capital ("John W. Smith", "1963A W. Gray").
_SENTENCE_END = re.compile(r"(?<=[.!?])(?<!\b[^\W\d_]\.[^\W\d_]\.)(?<!\s[A-Z]\.)\s+(?=[A-ZÇĞİÖŞÜÄ])")


def names_days(word: str) -> bool:
    """A month or weekday name, or a range of them ("Nov-Jan", "Wednesday"; from dateparser's data)."""
    parts = [part.rstrip(".") for part in re.split(r"[-/\u2013]", normalize(word)) if part]
    return bool(parts) and all(part in MONTHS or part in WEEKDAYS for part in parts)


def find_dates(text: str) -> list[str]:
    """Date expressions as written (the original text, not the folded form)."""
    folded = fold(text)
    same_length = len(folded) == len(text)
    found: list[str] = []
    for start, end in _date_spans(folded):
        value = (text[start:end] if same_length else folded[start:end]).strip()
        if value and value not in found:
            found.append(value)
    return found


def find_amounts(text: str) -> list[str]:
    return _find(AMOUNT_RE, text)


def _find(pattern: re.Pattern[str], text: str) -> list[str]:
    folded = fold(text)
    # Folding may lengthen text (ß → ss); positions are then only approximate, so fall back to folded.
    same_length = len(folded) == len(text)
    found: list[str] = []
    for match in pattern.finditer(folded):
        value = text[match.start() : match.end()] if same_length else match.group(0)
        value = value.strip()
        if value and value not in found:
            found.append(value)
    return found


def value_key(value: str) -> str:
    """Digits (and month numbers) of a date or amount, to compare values written differently."""
    folded = fold(value).lower()
    for word in re.findall(r"[^\W\d_]+", folded):
        if word in MONTHS:
            folded = re.sub(rf"\b{re.escape(word)}\b", f" {MONTHS[word]:02d} ", folded)
            break
    return "".join(ch for ch in folded if ch.isdigit())


@dataclass(slots=True)
class Passage:
    text: str
    # "subject" | "body" | "closing" (sign-off, signature: split_closing) | "forwarded" (below a separator rule:
    # forwarded_text) | "attachment"
    source: str
    attachment: str = ""
    paragraph: int = 0  # blank lines separate paragraphs
    whole_line: bool = True  # False for a sentence of a long line
    heading: str = ""  # the short line over a one-line paragraph ("Where" over "4807 Elm Street"): _heading


KEY_VALUE = re.compile(r"^[^:]{1,40}:\s")
_CLAUSE_END = (".", "!", "?", ":", ";")


_ABBREVIATION_END = re.compile(r"(?:^|\s)[^\W\d_]{1,4}\.$")
_LIST_MARKER = re.compile(r"^\d+[.)]\s")


def _continues(previous: str, line: str) -> bool:
    """A wrapped line after a period that ends no sentence: the next line starts in lower case, or the period
    closes an abbreviation and a number follows ("… tourney Feb." / "23 and 24"), not a numbered item."""
    if not previous.endswith("."):
        return False
    if line[:1].islower():
        return True
    return line[:1].isdigit() and bool(_ABBREVIATION_END.search(previous)) and not _LIST_MARKER.match(line)


def _breaks_mid_clause(previous: str, line: str) -> bool:
    """A short line broken inside a clause: "Departs at 20.45 (8:45pm) and" / "arrives at 06.30 …" (no
    punctuation at its end, several words, and the next line goes on in lower case)."""
    return len(previous.split()) >= 4 and not previous.endswith((*_CLAUSE_END, ",")) and line[:1].islower()


HEADING_WORDS = 3


def _heading(lines: list[str], index: int) -> str:
    """The short line over a paragraph's one-line value, its label: "Where" over "4807 Elm Street in
    Bellaire", "Date & Time" over "Saturday November 3rd." (a paragraph of two lines, the first at most
    HEADING_WORDS words without punctuation at its end); "" for any other line."""
    if index == 0 or (index + 1 < len(lines) and lines[index + 1]) or len(lines[index]) > VALUE_LINE_CHARS:
        return ""
    heading = lines[index - 1].strip(" \t>|*-•")
    return (
        heading
        if heading
        and (index == 1 or not lines[index - 2])
        and len(heading.split()) <= HEADING_WORDS
        and not heading[:1].islower()
        and heading[-1:].isalnum()
        and not KEY_VALUE.match(heading)
        else ""
    )


_BULLET = re.compile(r"^[-*•·◦▪]\s|^\d{1,2}[.)]\s|^[a-z][.)]\s")


VALUE_LINE_CHARS = 100


def unwrap(text: str) -> list[str]:
    """Join hard-wrapped lines of running text, and a line ending in a colon with the one short line under
    it (a label and its value); "Key: value" lines, list items ("- Class is held in room ECN560", "2) …")
    and other short lines stay lines."""
    merged: list[str] = []
    raws = text.splitlines()
    for index, raw in enumerate(raws):
        line = raw.strip(" \t>|*-•")
        if not line:
            merged.append("")
            continue
        previous = merged[-1] if merged else ""
        bullet = _BULLET.match(raw.lstrip(" \t>|"))
        alone = index + 1 == len(raws) or not raws[index + 1].strip(" \t>|*-•")
        if previous.endswith(":") and alone and not bullet and len(line) <= VALUE_LINE_CHARS:
            # "Avista not paid that has been processed to SAP:" / "$2,731,844.49": a label and its value
            merged[-1] = f"{previous} {line}"
        elif (
            previous
            and not bullet
            and (len(previous) >= 50 or _breaks_mid_clause(previous, line))
            and (not previous.endswith(_CLAUSE_END) or _continues(previous, line))
            and not KEY_VALUE.match(line)
            and not KEY_VALUE.match(previous)
        ):
            merged[-1] = f"{previous} {line}"
        else:
            merged.append(line)
    return merged


# Transport and MIME header fields of RFC 5321/5322/2045 and DKIM (RFC 6376), and X- extension fields: a
# forwarded raw message keeps them in its body ("Received: from … with ESMTP id …"); they never answer.
TRANSPORT_HEADER = re.compile(
    r"^(?:Received|Message-ID|Return-Path|Delivered-To|MIME-Version|Content-(?:Type|Transfer-Encoding|Disposition)"
    r"|DKIM-Signature|Authentication-Results|X-[A-Za-z0-9-]+):\s",
    re.IGNORECASE,
)


# A link target that an HTML-to-text conversion wrote after its anchor text ("view your itinerary online
# <http://…?itid=36444927>"): its host and query words are not the mail's words, and its digits no reference.
LINK_TARGET = re.compile(r"<(?:https?|mailto):[^>\s]*>?", re.IGNORECASE)


def passages(text: str, *, source: str, attachment: str = "", limit: int = 400) -> list[Passage]:
    """Lines (statements and invoices put one fact per line) and sentences of unwrapped running text; a mail
    body's transport header lines (TRANSPORT_HEADER) are left out, and so are the link targets in angle
    brackets after a link's text (LINK_TARGET; a URL written in the text itself stays)."""
    found: list[Passage] = []
    paragraph = 0
    # Attachments (statements, invoices) are tables: one line, one fact. Mail bodies are hard-wrapped prose.
    lines = unwrap(LINK_TARGET.sub("", text)) if source != "attachment" else text.splitlines()
    for index, line in enumerate(lines):
        line = line.strip(" \t>|*-•")
        if not line:
            paragraph += 1 if found and found[-1].paragraph == paragraph else 0  # a run of blank lines is one break
        if len(line) < 3 or (source != "attachment" and TRANSPORT_HEADER.match(line)):
            continue
        pieces = _SENTENCE_END.split(line) if len(line) > 240 else [line]
        for piece in pieces:
            piece = " ".join(piece.split())
            if len(piece) >= 3:
                heading = _heading(lines, index) if len(pieces) == 1 else ""
                found.append(Passage(piece[:400], source, attachment, paragraph, len(pieces) == 1, heading))
                if len(found) >= limit:
                    return found
    return found


def contains_word(folded_text: str, folded_word: str) -> bool:
    """Whole-word (or whole-phrase) match in folded lowercase text."""
    if not folded_word:
        return False
    start = folded_text.find(folded_word)
    while start != -1:
        end = start + len(folded_word)
        before = folded_text[start - 1] if start > 0 else " "
        after = folded_text[end] if end < len(folded_text) else " "
        if not before.isalnum() and not after.isalnum():
            return True
        start = folded_text.find(folded_word, start + 1)
    return False


def normalize(text: str) -> str:
    return " ".join(fold(text).lower().split())


# 07:05, 18:40, 9:00, 2:00 p.m. (not inside a date or an amount: callers remove those first; not a time zone's
# offset, "GMT-06:00").
TIME_RE = re.compile(
    r"(?<![\d.,:/])(?<!GMT[+-])(?<!UTC[+-])(?:(?:[01]?\d|2[0-3]):[0-5]\d(?![\d:])(?:\s?(?:[ap]\.m\.|[ap]m\b))?"
    r"|(?:1[0-2]|0?[1-9])\s?(?:[ap]\.m\.|[ap]m\b))",  # "4PM", "10 a.m." (an hour alone needs its am / pm)
    re.IGNORECASE,
)
# Identifiers: codes mixing capitals and digits (K7Q2MA, PP-5521-0938-DE, HK7730019245), numbered
# references (#77104), dash-grouped digit runs of five digits or more (7710-3392-18, 2026-1187, phone
# numbers and extensions like 1-800-937-6563 or 3-6200; not a range like 5-10), phone numbers written with
# dots (503.829.5405, 01.23.45.67.89), and phone numbers written
# with their area code in parentheses or an international prefix ((713) 345-2804, +90 212 555 0142): the
# area code is part of the number.
IDENTIFIER_RE = re.compile(
    r"(?<![\w-])(?:#\s?\d{3,}(?![.,]\d)|(?=[A-Z0-9-]*\d)(?=[A-Z0-9-]*[A-Z])[A-Z0-9](?:[A-Z0-9-]{3,}[A-Z0-9])"
    r"|\(\d{2,5}\) ?(?:\d{2,}(?:[-.]\d{2,}){1,3}|\d{5,})"
    r"|\+\d{1,3}(?:[ .-]?(?:\(\d{1,5}\)|\d{2,5})){2,5}"
    r"|\d+(?:-\d{2,}){1,4}|\d{3}\.\d{3}\.\d{4}|\d{2}(?:\.\d{2}){4}|\d{8,})(?![\w-])"
)
_MIN_GROUPED_DIGITS = 5
_GROUPED = re.compile(r"\d+(?:-\d+)+")


def find_times(text: str) -> list[str]:
    masked = _mask(text, [*find_dates(text), *find_amounts(text)])
    return _find(TIME_RE, masked)


# A number and what it counts or measures: "150 people", "2.75 MW", "20.3 TBTU", "17,000 square feet", "37.7%"
# (the word after the number, and a second lower-case one; never a stopword: "3 of them" counts nothing).
QUANTITY_RE = re.compile(
    r"(?=\d)(?<![\w.,$€£₺#/-])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
    r"(?:[-\u2013](?P<upto>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?))?"  # a range: "100-300 MW"
    r"(?:\s?%|\s?(?P<unit>[^\W\d_][^\W\d_/.-]{0,14})(?P<more>\s[^\W\d_A-Z]{2,12})?)(?![\w-])"
)


YEAR = re.compile(r"(?:19|20)\d\d")  # a year written as four digits


def _counts_something(match: re.Match[str]) -> bool:
    """Not "3 of them": the word after the number is no stopword (a percent sign counts); and not "Carrera
    4S", "3D": one letter written against the number makes a name, not a quantity; nor "1996 Carrera", a
    year before a capitalised word ("2000 MW", in capitals, is one)."""
    unit = match.group("unit")
    if unit and len(unit) == 1 and match.string[match.start("unit") - 1].isdigit():
        return False
    number = match.group(0)[: match.start("unit") - match.start()].strip() if unit else ""
    if unit and YEAR.fullmatch(number) and unit[:1].isupper() and not unit.isupper():
        return False
    return not unit or unit.lower() not in STOPWORDS


def _is_range(match: re.Match[str]) -> bool:
    """No range, or a rising one of numbers alike in size ("100-300 MW", "5-10 people"; not "5-4667", an
    extension)."""
    upto = match.group("upto")
    if not upto:
        return True
    first = match.group(0)[: match.start("upto") - match.start() - 1]
    low, high = (float(n.replace(",", "")) for n in (first, upto))
    return low < high and abs(len(first.split(".")[0]) - len(upto.split(".")[0])) <= 1


def find_quantities(text: str) -> list[str]:
    masked = _mask(text, [*find_dates(text), *find_amounts(text)])
    masked = _mask(masked, _find(TIME_RE, masked))
    found: list[str] = []
    for match in QUANTITY_RE.finditer(masked):
        if not _counts_something(match) or not _is_range(match):
            continue
        unit, more = match.group("unit"), match.group("more")
        end = (
            match.end()
            if more and more.strip().lower() not in STOPWORDS
            else match.end("unit")
            if unit
            else match.end()
        )
        value = text[match.start() : end]
        if value not in found:
            found.append(value)
    return found


def has_value(kind: str, text: str) -> bool:
    """Whether `text` holds a value of `kind` (for a quantity, any number with a word after it that is no
    stopword: the cheap test the reranker runs over whole mails; find_values then says which values, sentence
    by sentence)."""
    if kind == "quantity":
        return any(_counts_something(match) for match in QUANTITY_RE.finditer(text))
    if kind == "measure":
        return has_value("amount", text) or has_value("quantity", text)
    return bool(find_values(kind, text))


_ZONE_OFFSET = re.compile(r"(?:GMT|UTC)[+-]\d{1,4}")  # "(GMT-06:00)": a time zone, not a reference


def find_identifiers(text: str) -> list[str]:
    masked = _mask(text, [*find_dates(text), *find_amounts(text)])

    def short_range(value: str) -> bool:
        return bool(_GROUPED.fullmatch(value)) and sum(c.isdigit() for c in value) < _MIN_GROUPED_DIGITS

    return [
        v
        for v in _find(IDENTIFIER_RE, masked)
        if not TIME_RE.fullmatch(v) and not short_range(v) and not _ZONE_OFFSET.fullmatch(v)
    ]


def _mask(text: str, values: list[str]) -> str:
    """`text` with `values` blanked out by a word character no pattern takes, so that what touches a blanked
    value still touches a word: "+21" in "December 20+21  281-358-8576" is no international prefix."""
    for value in values:
        text = text.replace(value, "_" * len(value))
    return text


_PHONE = re.compile(r"[+(]?\d[\d() .+-]*\d")


def find_phones(text: str) -> list[str]:
    """Identifiers written as a phone number or an extension: digits with their separators (at least five
    digits), area code and international prefix included ("(713) 345-2804", "+90 212 555 0142", "3-6200")."""
    return [v for v in find_identifiers(text) if is_phone_number(v)]


def is_phone_number(identifier: str) -> bool:
    """An identifier written as a phone number or an extension (see find_phones)."""
    return (
        bool(_PHONE.fullmatch(identifier))
        and sum(c.isdigit() for c in identifier) >= _MIN_GROUPED_DIGITS
        and not identifier.isdigit()
    )


# The kinds of value an answer can state, and how the page names them.
VALUE_KINDS = ("date", "time", "duration", "amount", "measure", "quantity", "phone", "identifier")
VALUE_KIND_LABELS = {
    "date": "a date",
    "time": "a time",
    "duration": "a length of time",
    "quantity": "a quantity",
    "amount": "an amount",
    "measure": "an amount or quantity",
    "phone": "a phone number",
    "identifier": "a reference number",
}


def find_values(kind: str, text: str) -> list[str]:
    """Values of one answer kind (date, time, duration, amount, quantity, phone, identifier) as written in `text`."""
    if kind == "duration":
        from apps.ask.durations import find_durations

        return find_durations(text)
    if kind == "quantity":
        return find_quantities(text)
    if kind == "measure":  # "how much": of money or of anything counted
        return [*find_amounts(text), *find_quantities(text)]
    if kind == "phone":
        return find_phones(text)
    if kind == "date":
        return find_dates(text)
    if kind == "time":
        return find_times(text)
    if kind == "amount":
        return find_amounts(text)
    if kind == "identifier":
        return find_identifiers(text)
    return []


_NUMERIC_DATE = re.compile(r"(\d{1,4})[./-](\d{1,2})[./-](\d{2,4})")


def parse_day(value: str, *, reference: dt.date | None = None) -> dt.date | None:
    """The calendar day of a date value as find_dates returns it (day first, except ISO year first). A date
    written without a year ("October 23") takes the year of `reference` (the mail's date) when given."""
    folded = fold(value).lower()
    match = _NUMERIC_DATE.search(folded)
    try:
        if match:
            first, second, third = (int(g) for g in match.groups())
            if len(match.group(1)) == 4:
                return dt.date(first, second, third)
            year = third + 2000 if third < 100 else third
            return dt.date(year, second, first) if second <= 12 else dt.date(year, first, second)
        month = next((MONTHS[word] for word in re.findall(r"[^\W\d_]+", folded) if word in MONTHS), 0)
        numbers = [int(n) for n in re.findall(r"\d+", folded)]
        year = next((n for n in numbers if n > 999), 0) or (reference.year if reference else 0)
        day = next((n for n in numbers if 0 < n <= 31), 0)
        return dt.date(year, month, day) if month and year and day else None
    except ValueError:
        return None


def day_pattern(value: str) -> re.Pattern[str] | None:
    """A pattern for the day a date value names, however a mail writes it (folded lowercase text): any
    language's name or abbreviation of its month before or after the day, or day and month in figures
    ("January 23" also finds "Jan. 23rd", "23 Ocak", "1/23/02", "23.01.")."""
    day = parse_day(value, reference=dt.date(2000, 1, 1))
    if day is None:
        return None
    names = "|".join(
        sorted((re.escape(name) for name, number in MONTHS.items() if number == day.month), key=len, reverse=True)
    )
    number = rf"0?{day.day}(?:st|nd|rd|th)?"
    return re.compile(
        rf"\b(?:(?:{names})\.?\s+{number}\b|{number}\.?\s+(?:{names})\b"
        rf"|0?{day.month}/0?{day.day}\b|0?{day.day}\.0?{day.month}\b)"
    )


def amount_number(value: str) -> float:
    """The number of an amount value ("1.428,00 EUR" → 1428.0, "£84.20" → 84.2, "$1.3 B" → 1.3e9)."""
    digits = re.sub(r"[^\d.,]", "", value)
    if not digits:
        return 0.0
    last = max(digits.rfind("."), digits.rfind(","))
    if last != -1 and len(digits) - last - 1 in (1, 2):
        whole, fraction = digits[:last], digits[last + 1 :]
    else:
        whole, fraction = digits, "0"
    whole = re.sub(r"[.,]", "", whole) or "0"
    scale = re.search(r"\d\s?([^\W\d_]+)", value)
    return float(f"{whole}.{fraction}") * _SCALES.get(scale.group(1).lower().rstrip("s") if scale else "", 1.0)
