"""The period a question names ("last month", "geçen ay", "letzten Monat", "in March 2025", "yesterday"),
through `dateparser` (its own per-language data; no hand-written date words here).

A relative period ("last month", "the last 10 days") limits which mail is searched. A named period
("in March", "in 2024") is only a hint: "the trip in December" is about an event in December, not about
mail sent then, so it boosts mail from then instead of filtering the rest out."""

from __future__ import annotations

import calendar
import datetime as dt
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from dateparser.date import DateDataParser

MAX_WINDOW = 4
_WORD = re.compile(r"[^\W_][\w'-]*", re.UNICODE)


@dataclass(slots=True)
class DateRange:
    start: dt.datetime | None = None
    end: dt.datetime | None = None
    label: str = ""
    # True: limit the search to the range; False: prefer mail from it.
    limits: bool = True


_NOT_ANCHORS = {"none", "hour", "minute", "second", "am", "pm", "in", "ago", "utc", "gmt", "z", "early_morning"}


def anchor_words() -> frozenset[str]:
    return frozenset(_anchor_locales())


NAMES = frozenset(
    (
        *("january", "february", "march", "april", "may", "june"),
        *("july", "august", "september", "october", "november", "december"),
        *("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"),
    )
)  # dateparser's normalised (English) values for month and weekday words in every language


@lru_cache(maxsize=1)
def _name_words() -> frozenset[str]:
    from dateparser.conf import settings as parser_settings
    from dateparser.languages import default_loader

    names: set[str] = set()
    for locale in default_loader.get_locales():
        dictionary = locale._get_dictionary(parser_settings)
        for key in dictionary:
            if str(dictionary[key]).strip().lower() in NAMES and " " not in str(key):
                names.add(str(key).lower())
    return frozenset(names)


@lru_cache(maxsize=1)
def _anchor_locales() -> dict[str, frozenset[str]]:
    """Words dateparser's own language data knows as months, weekdays, period units or relative periods
    ("month", "Monat", "ay", "yesterday", "geçen"): only windows holding one (or a digit) are parsed, which
    keeps planning fast (parsing every window in every language takes seconds)."""
    from dateparser.conf import settings as parser_settings
    from dateparser.languages import default_loader

    words: dict[str, set[str]] = {}
    for locale in default_loader.get_locales():
        dictionary = locale._get_dictionary(parser_settings)
        for key in dictionary:
            value = str(dictionary[key]).strip().lower()
            if not value or value in _NOT_ANCHORS or not any(ch.isalpha() for ch in value):
                continue
            for word in str(key).lower().split():
                if any(ch.isalpha() for ch in word):
                    words.setdefault(word, set()).add(locale.shortname)
    for common in ("in", "the", "and", "from", "of", "on", "at", "a", "an", "to", "do", "i"):
        words.pop(common, None)
    return {word: frozenset(codes) for word, codes in words.items()}


@lru_cache(maxsize=256)
def _cached_parser(base: dt.datetime, languages: tuple[str, ...]) -> DateDataParser:
    settings: dict[str, Any] = {
        "RELATIVE_BASE": base,
        "PREFER_DATES_FROM": "past",
        "RETURN_TIME_AS_PERIOD": True,
    }
    return DateDataParser(languages=list(languages) or None, settings=settings)


def warm_up(now: dt.datetime) -> None:
    """Build what dateparser builds lazily on a language's first use (its split and simplification
    patterns, compiled once per process: 4 s for all languages) and this module's word tables, so that a
    question naming a period in a language not seen yet since the process started does not wait for them."""
    anchors = _anchor_locales()
    _name_words(), _unit_words(), _number_words()
    base = now.replace(tzinfo=None, minute=0, second=0, microsecond=0)
    _cached_parser(base, ("en",)).get_date_data("yesterday 10:00 UTC")  # also builds the time zone patterns
    for code in sorted({code for codes in anchors.values() for code in codes}):
        _cached_parser(base, (code,)).get_date_data("3 x")


def _start(day: dt.date, tz: dt.tzinfo) -> dt.datetime:
    return dt.datetime.combine(day, dt.time.min, tzinfo=tz)


def _end(day: dt.date, tz: dt.tzinfo) -> dt.datetime:
    return dt.datetime.combine(day, dt.time.max, tzinfo=tz)


def _period_range(day: dt.date, period: str, tz: dt.tzinfo) -> tuple[dt.datetime, dt.datetime]:
    if period == "year":
        return _start(dt.date(day.year, 1, 1), tz), _end(dt.date(day.year, 12, 31), tz)
    if period == "month":
        last = calendar.monthrange(day.year, day.month)[1]
        return _start(day.replace(day=1), tz), _end(day.replace(day=last), tz)
    if period == "week":
        monday = day - dt.timedelta(days=day.weekday())
        return _start(monday, tz), _end(monday + dt.timedelta(days=6), tz)
    return _start(day, tz), _end(day, tz)


def _only_filler_around_a_unit(window: list[str]) -> bool:
    """ "a month" (in "trades shorter than a month") is a length, not a period: a window of several words
    is a period only with a digit or a word that is neither a date word nor a stopword ("last", "geçen")."""
    from apps.search.folding import STOPWORDS

    if len(window) < 2 or any(ch.isdigit() for word in window for ch in word):
        return False
    # a number written as a word counts as filler too: "around in five years" is a length
    return all(
        word.lower() in _unit_words() or word.lower() in STOPWORDS or word.lower() in _number_words() for word in window
    )


UNITS = frozenset(("year", "month", "week", "day", "fortnight", "decade", "hour", "minute", "second"))


@lru_cache(maxsize=1)
def _unit_words() -> frozenset[str]:
    """Words dateparser's data maps to a bare unit ("month", "Monat", "ay", "maand", "mes")."""
    from dateparser.conf import settings as parser_settings
    from dateparser.languages import default_loader

    units: set[str] = set()
    for locale in default_loader.get_locales():
        dictionary = locale._get_dictionary(parser_settings)
        for key in dictionary:
            if str(dictionary[key]).strip().lower() in UNITS and " " not in str(key):
                units.add(str(key).lower())
    return frozenset(units)


@lru_cache(maxsize=1)
def _number_words() -> frozenset[str]:
    """Words dateparser's language data rewrites to a number ("five" → 5, "fünf", "cinco")."""
    from dateparser.languages import default_loader

    numbers: set[str] = set()
    for locale in default_loader.get_locales():
        for simplification in locale.info.get("simplifications") or []:
            for key, value in simplification.items():
                if str(value).isdigit() and re.fullmatch(r"[^\W\d_]+", str(key)):
                    numbers.add(str(key).lower())
    return frozenset(numbers)


def _is_plain_word_or_number(window: list[str], anchors: dict[str, frozenset[str]]) -> bool:
    """A single short word or a bare number is too ambiguous to be a period ("do", "may", "12"); so is a number
    with lone letters ("7500/d"); so is a run
    without a digit whose only date words are two-letter abbreviations ("we must": "we" is Wednesday in
    dateparser's English data)."""
    if len(window) == 1:
        word = window[0]
        return (word.isdigit() and len(word) != 4) or len(word) <= 3
    words = [word for word in window if not word.isdigit()]
    if words and all(len(word) == 1 for word in words):
        # a number and a lone letter: "7500/d" (a volume per day), "5 m", "3 h" are units of something else
        return True
    if any(ch.isdigit() for word in window for ch in word):
        return False
    return all(len(word) <= 2 for word in window if _anchor_key(word, anchors))


def _anchor_key(word: str, anchors: dict[str, frozenset[str]]) -> str:
    """`word` as dateparser's data spells it ("geçen" is "gecen" there), or "" when it is no date word."""
    lower = word.lower()
    if lower in anchors:
        return lower
    folded = "".join(ch for ch in unicodedata.normalize("NFKD", lower) if not unicodedata.combining(ch))
    return folded if folded in anchors else ""


# A number, or a number with an ordinal ending of any language ("24th", "1st", "3e", "2º", "24ste").
_NUMBER_WORD = re.compile(r"\d+(?:[^\W\d_]{1,3}|º|ª)?")


def parse_date_range(question: str, now: dt.datetime) -> DateRange:
    """The longest run of up to four words that dateparser reads as a date, turned into a period."""
    tz = now.tzinfo or dt.UTC
    words = _WORD.findall(question)
    base = now.astimezone(tz).replace(tzinfo=None, minute=0, second=0, microsecond=0)
    anchors = _anchor_locales()
    anchored = [any(ch.isdigit() for ch in w) or w.lower() in anchors for w in words]
    if not any(anchored):
        return DateRange()
    for size in range(min(MAX_WINDOW, len(words)), 0, -1):
        for index in range(len(words) - size + 1):
            window = words[index : index + size]
            if not any(anchored[index : index + size]) or _is_plain_word_or_number(window, anchors):
                continue
            if _only_filler_around_a_unit(window):
                continue
            text = " ".join(window)
            codes: set[str] = set()
            for word in window:
                codes |= anchors.get(word.lower(), frozenset())
            languages = tuple(sorted(codes)) if codes else ("en",)
            data = _cached_parser(base, languages).get_date_data(text)
            if data.date_obj is None or not data.period:
                continue
            while len(window) > 1:  # "from last month" → "last month": drop edge words that change nothing
                for trimmed in (window[1:], window[:-1]):
                    again = _cached_parser(base, languages).get_date_data(" ".join(trimmed))
                    if again.date_obj == data.date_obj and again.period == data.period:
                        window = trimmed
                        break
                else:
                    break
            text = " ".join(window)
            # Numbers alone ("4.4", "1.7", "3/15", "the 24th") are a section, a version, an amount or the day
            # of an event as often as the day a mail was sent: like a named month they only prefer mail of
            # that day, never filter the rest out.
            numeric = all(_NUMBER_WORD.fullmatch(word) for word in window)
            named = numeric or any(w.lower() in _name_words() or re.fullmatch(r"(?:19|20)\d\d", w) for w in window)
            found = _range_for(text, data.date_obj, data.period, now, tz, named=named)
            if found is not None:
                return found
    return DateRange()


def _range_for(
    text: str, when: dt.datetime, period: str, now: dt.datetime, tz: dt.tzinfo, *, named: bool
) -> DateRange | None:
    """A named month, weekday or year is a hint; anything else dateparser read ("last month", "gestern",
    "the last 10 days") is relative to now and limits the search."""
    day = when.date()
    if day > now.astimezone(tz).date():
        return None
    relative = not named
    numbers = [int(n) for n in re.findall(r"\d+", text)]
    if relative and numbers and period == "day" and all(n not in (day.day, day.month, day.year) for n in numbers):
        # "the last 10 days": from then until now.
        return DateRange(_start(day, tz), now, text, limits=True)
    start, end = _period_range(day, period, tz)
    if period == "year" and not relative:
        label = f"in {day.year}"
    elif period == "month" and not relative:
        label = f"in {calendar.month_name[day.month]} {day.year}"
    else:
        label = text
    return DateRange(start, end, label, limits=relative)
