"""Month names for reading dates in mail, from dateparser's CLDR-derived language data (not a list kept
here): every name and abbreviation of the languages in settings.ASK_DATE_LANGUAGES, folded like the
index (lowercase, no diacritics). A name two languages give to different months is left out."""

from __future__ import annotations

import importlib
from collections import defaultdict
from functools import cache
from typing import Any

from django.conf import settings

from apps.search.folding import fold

MONTH_KEYS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
WEEKDAY_KEYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
DEFAULT_LANGUAGES = ("en", "de", "fr", "es", "it", "nl", "pt", "tr")


def language_data(code: str) -> dict[str, Any]:
    """dateparser's CLDR-derived data of one language ("en"): month names, units, "pertain" words …"""
    return dict(importlib.import_module(f"dateparser.data.date_translation_data.{code}").info)


def languages() -> tuple[str, ...]:
    return tuple(getattr(settings, "ASK_DATE_LANGUAGES", DEFAULT_LANGUAGES) or DEFAULT_LANGUAGES)


@cache
def month_names(codes: tuple[str, ...]) -> dict[str, int]:
    """{folded name: month number}. Unknown language codes raise ImportError naming the module."""
    numbers: dict[str, set[int]] = defaultdict(set)
    for code in codes:
        info = language_data(code)
        for number, key in enumerate(MONTH_KEYS, start=1):
            for name in info.get(key, ()):
                folded = fold(name).lower().rstrip(".")
                if folded.isalpha() and len(folded) >= 3:
                    numbers[folded].add(number)
    return {name: next(iter(found)) for name, found in numbers.items() if len(found) == 1}


def months() -> dict[str, int]:
    return month_names(languages())


@cache
def weekday_names(codes: tuple[str, ...]) -> frozenset[str]:
    """Folded names and abbreviations of the days of the week (three letters or more: "wed", "sonntag")."""
    names = set()
    for code in codes:
        info = language_data(code)
        for key in WEEKDAY_KEYS:
            for name in info.get(key, ()):
                folded = fold(name).lower().rstrip(".")
                if folded.isalpha() and len(folded) >= 3:
                    names.add(folded)
    return frozenset(names)


def weekdays() -> frozenset[str]:
    return weekday_names(languages())
