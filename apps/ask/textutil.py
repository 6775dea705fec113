# ruff: noqa: RUF001 -- month names and currency marks in several languages are the point of this module.
"""Dates, amounts and passages in mail text: shared by the planner, the reranker and the answer."""

from __future__ import annotations

import re
from dataclasses import dataclass

from apps.search.folding import fold

MONTHS: dict[str, int] = {}
for _number, _names in enumerate(
    [
        "january jan januar ocak enero ene janvier janv gennaio",
        "february feb februar subat şubat febrero février fevrier févr fevr febbraio",
        "march mar märz maerz marz mart marzo mars",
        "april apr nisan abril avril aprile",
        "may mai mayis mayıs mayo maggio",
        "june jun juni haziran junio juin giugno",
        "july jul juli temmuz julio juillet juil luglio",
        "august aug agustos ağustos agosto août aout",
        "september sep sept eylul eylül septiembre septembre settembre",
        "october oct oktober ekim octubre octobre ottobre",
        "november nov kasim kasım noviembre novembre",
        "december dec dezember aralik aralık diciembre décembre decembre dicembre",
    ],
    start=1,
):
    for _name in _names.split():
        MONTHS[fold(_name).lower()] = _number

_MONTH_ALTERNATION = "|".join(sorted({re.escape(name) for name in MONTHS}, key=len, reverse=True))

# 11/05/2026, 15.12.2026, 2026-12-05, 5 December 2026, December 5, 2026, 15 Aralik 2026 (matched on folded text).
DATE_RE = re.compile(
    r"\b(?:\d{1,2}[./-]\d{1,2}[./-](?:\d{4}|\d{2})|\d{4}-\d{2}-\d{2}"
    rf"|\d{{1,2}}\.?\s+(?:{_MONTH_ALTERNATION})\.?,?\s+\d{{4}}"
    rf"|(?:{_MONTH_ALTERNATION})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}})\b",
    re.IGNORECASE,
)
_CURRENCY = r"(?:TL|TRY|EUR|USD|GBP|CHF|SEK|NOK|DKK|PLN|€|\$|£|₺|euros?|dollars?|lira)"
_NUMBER = r"\d{1,3}(?:[.,\s]\d{3})*(?:[.,]\d{1,2})?|\d+(?:[.,]\d{1,2})?"
AMOUNT_RE = re.compile(
    rf"(?:{_CURRENCY}\s?-?(?:{_NUMBER})|-?(?:{_NUMBER})\s?{_CURRENCY})(?![A-Za-z])",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-ZÇĞİÖŞÜÄ0-9])")


def find_dates(text: str) -> list[str]:
    """Date expressions as written (the original text, not the folded form)."""
    return _find(DATE_RE, text)


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
    for name, number in MONTHS.items():
        if re.search(rf"\b{re.escape(name)}\b", folded):
            folded = re.sub(rf"\b{re.escape(name)}\b", f" {number:02d} ", folded)
            break
    return "".join(ch for ch in folded if ch.isdigit())


@dataclass(slots=True)
class Passage:
    text: str
    source: str  # "subject" | "body" | "attachment"
    attachment: str = ""


_KEY_VALUE = re.compile(r"^[^:]{1,40}:\s")
_CLAUSE_END = (".", "!", "?", ":", ";")


def unwrap(text: str) -> list[str]:
    """Join hard-wrapped lines of running text; "Key: value" lines and short lines stay lines."""
    merged: list[str] = []
    for raw in text.splitlines():
        line = raw.strip(" \t>|*-•")
        if not line:
            merged.append("")
            continue
        previous = merged[-1] if merged else ""
        if (
            previous
            and len(previous) >= 50
            and not previous.endswith(_CLAUSE_END)
            and not _KEY_VALUE.match(line)
            and not _KEY_VALUE.match(previous)
        ):
            merged[-1] = f"{previous} {line}"
        else:
            merged.append(line)
    return merged


def passages(text: str, *, source: str, attachment: str = "", limit: int = 400) -> list[Passage]:
    """Lines (statements and invoices put one fact per line) and sentences of unwrapped running text."""
    found: list[Passage] = []
    for line in unwrap(text):
        line = line.strip(" \t>|*-•")
        if len(line) < 3:
            continue
        pieces = _SENTENCE_END.split(line) if len(line) > 240 else [line]
        for piece in pieces:
            piece = " ".join(piece.split())
            if len(piece) >= 3:
                found.append(Passage(piece[:400], source, attachment))
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
