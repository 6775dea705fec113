"""Lengths of time written in mail ("four to six weeks", "approximately 5 business days", "2 hours",
"3 Wochen", "10 días"): a number (digits, or a number word) or a range of two, an optional word between,
and a unit of time. The number and unit words come from dateparser's CLDR-derived language data for the
languages of settings.ASK_DATE_LANGUAGES (apps/ask/monthnames.py), not from a list written here."""

from __future__ import annotations

import re
import unicodedata
from functools import cache

from apps.ask.monthnames import language_data, languages
from apps.search.folding import STOPWORDS

UNIT_KEYS = ("year", "month", "week", "fortnight", "day", "hour", "minute", "second", "decade")

# Between the number and its unit, one word at most ("5 business days", "four working days").
_BETWEEN = r"(?:[\s-]+[^\W\d_]{3,14})?"


@cache
def unit_and_number_words(codes: tuple[str, ...]) -> tuple[frozenset[str], frozenset[str]]:
    """(units of time, number words) of these languages, accents removed; single letters ("h", "d") and
    stopwords ("a", "an") left out: alone they are too often something else."""
    units: set[str] = set()
    numbers: set[str] = set()
    for code in codes:
        info = language_data(code)
        units.update(_plain(w) for key in UNIT_KEYS for w in info.get(key, ()))
        for simplification in info.get("simplifications") or ():
            numbers.update(
                _plain(k) for k, v in simplification.items() if str(v).isdigit() and re.fullmatch(r"[^\W\d_]+", k)
            )

    def usable(word: str) -> bool:
        return len(word) >= 2 and word not in STOPWORDS and word.isalpha()

    return frozenset(filter(usable, units)), frozenset(w for w in numbers if usable(w) and len(w) >= 3)


@cache
def duration_pattern(codes: tuple[str, ...]) -> re.Pattern[str]:
    """The pattern, matched against `match_text` (accents removed, one character for one)."""
    units, numbers = unit_and_number_words(codes)
    number = r"(?:\d+(?:[.,]\d+)?|" + "|".join(re.escape(w) for w in sorted(numbers, key=len, reverse=True)) + ")"
    # a range: "4-6", "4 to 6", "four or five" (a joining word of one to three letters, in any language)
    joined = rf"{number}(?:\s*[-\u2013/]\s*{number}|\s+[^\W\d_]{{1,3}}\s+{number})?"
    unit = "(?:" + "|".join(re.escape(w) for w in sorted(units, key=len, reverse=True)) + ")"
    return re.compile(rf"(?<![\w.,:]){joined}{_BETWEEN}[\s-]+{unit}(?![\w])", re.IGNORECASE)


def _plain(word: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKD", word.lower()) if not unicodedata.combining(ch))


def match_text(text: str) -> str:
    """`text` with each character's accent removed, one character for one (so a match's span is the
    original text's): "días" → "dias"."""
    return "".join(unicodedata.normalize("NFKD", ch)[:1] or ch for ch in text)


def find_durations(text: str) -> list[str]:
    """The lengths of time in `text`, as written there."""
    plain = match_text(text)
    found: list[str] = []
    for match in duration_pattern(languages()).finditer(plain):
        value = text[match.start() : match.end()]
        if value not in found:
            found.append(value)
    return found
