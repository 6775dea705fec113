"""The search syntax people know from Gmail and notmuch: `from:lena subject:"visit" has:attachment -spam`.

A small typed tokenizer: a token is `-`? then either `operator:value`, `operator:"quoted value"`, a
"quoted phrase" or a bare word. Only the operators below are operators; any other `word:word` (a time like
10:30, "re:") stays free text. The free text (words and phrases) goes to the ranking backends; operators
become index filters. Dates are read by dateparser, so "2024-03", "march 2024", "last week" and "geçen ay"
are all periods; `date:` takes a period or `A..B`.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from django.utils import timezone

from apps.search.headers import term_pattern

OPERATORS = (
    "from",
    "to",
    "cc",
    "bcc",
    "subject",
    "has",
    "filename",
    "is",
    "in",
    "account",
    "before",
    "after",
    "date",
    "kind",
    "tag",
)
HEADER_OPERATORS = frozenset({"from", "to", "cc", "bcc", "subject"})
ME = "me"  # from:me, to:me, cc:me, bcc:me: the address of the account the message is in
HAS_VALUES = ("attachment",)
IS_VALUES = ("unread", "read", "starred")
KIND_VALUES = ("mail", "file", "message", "attachment")

TOKEN_RE = re.compile(
    r'(?P<neg>-)?(?:(?P<op>[A-Za-z]+):(?:"(?P<opquoted>[^"]*)"?|(?P<opvalue>\S*))'
    r'|"(?P<phrase>[^"]*)"?|(?P<word>\S+))'
)


@dataclass(frozen=True, slots=True)
class Operator:
    name: str
    value: str
    negated: bool = False

    def __str__(self) -> str:
        value = f'"{self.value}"' if any(c.isspace() for c in self.value) else self.value
        return f"{'-' if self.negated else ''}{self.name}:{value}"


@dataclass(slots=True)
class SearchQuery:
    """A parsed query: free `text` for ranking, `operators` for filtering, words to exclude."""

    raw: str
    text: str = ""
    operators: list[Operator] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    date_from: dt.datetime | None = None
    date_to: dt.datetime | None = None
    # Periods a negated date operator leaves out, [start, end) with None for an open side: -after:2024 is
    # [2024-01-01, None), -before:2024 is [None, 2024-01-01), -date:2024-03 the month.
    excluded_periods: list[tuple[dt.datetime | None, dt.datetime | None]] = field(default_factory=list)

    @property
    def has_filters(self) -> bool:
        return bool(self.operators or self.excluded)

    @property
    def is_empty(self) -> bool:
        return not self.text.strip() and not self.has_filters

    def values(self, name: str, *, negated: bool = False) -> list[str]:
        return [op.value for op in self.operators if op.name == name and op.negated == negated]

    def with_text(self, text: str) -> str:
        """The whole query with its free text replaced (for "did you mean" links)."""
        parts = [text] if text else []
        parts += [str(op) for op in self.operators]
        parts += [f"-{word}" for word in self.excluded]
        return " ".join(parts)


def parse_search(raw: str) -> SearchQuery:
    query = SearchQuery(raw=raw)
    free: list[str] = []
    for match in TOKEN_RE.finditer(raw or ""):
        negated = bool(match.group("neg"))
        name = (match.group("op") or "").lower()
        if name and name in OPERATORS:
            value = match.group("opquoted") if match.group("opquoted") is not None else match.group("opvalue")
            _add_operator(query, Operator(name=name, value=(value or "").strip(), negated=negated))
            continue
        if match.group("phrase") is not None:
            phrase = match.group("phrase").strip()
            if phrase and negated:
                query.excluded.append(phrase)
            elif phrase:
                free.append(f'"{phrase}"')
            continue
        word = match.group(0)[1:] if negated else match.group(0)
        if negated and word:
            query.excluded.append(word)
        elif word:
            free.append(word)
    query.text = " ".join(free)
    return query


def _add_operator(query: SearchQuery, op: Operator) -> None:
    if not op.value:
        query.errors.append(f"{op.name}: needs a value, e.g. {op.name}:{_example(op.name)}")
        return
    value = op.value.lower()
    if op.name in HEADER_OPERATORS and value != ME and not term_pattern(op.value):
        query.errors.append(f"{op.name}:{op.value} has no letters or digits to match")
        return
    if op.name == "has" and value.rstrip("s") not in HAS_VALUES:
        query.errors.append(f"has:{op.value} is not known; use has:attachment")
        return
    if op.name == "is" and value not in IS_VALUES:
        query.errors.append(f"is:{op.value} is not known; use is:unread, is:read or is:starred")
        return
    if op.name == "kind" and value not in KIND_VALUES:
        query.errors.append(f"kind:{op.value} is not known; use kind:mail or kind:file")
        return
    if op.name in {"before", "after", "date"}:
        try:
            start, end = date_range(op.value) if op.name == "date" else period(op.value)
        except ValueError as exc:
            query.errors.append(str(exc))
            return
        if op.negated:
            query.excluded_periods.append(
                (start, None) if op.name == "after" else (None, start) if op.name == "before" else (start, end)
            )
        elif op.name == "after":
            query.date_from = _later(query.date_from, start)
        elif op.name == "before":
            query.date_to = _earlier(query.date_to, start - dt.timedelta(microseconds=1))
        else:
            query.date_from = _later(query.date_from, start)
            query.date_to = _earlier(query.date_to, end - dt.timedelta(microseconds=1))
    if op.name in {"has", "is", "kind"}:
        op = Operator(name=op.name, value=value.rstrip("s") if op.name == "has" else value, negated=op.negated)
    query.operators.append(op)


def _example(name: str) -> str:
    return {
        "from": "lena",
        "to": "anna@example.com",
        "cc": "team",
        "bcc": "anna",
        "subject": "invoice",
        "has": "attachment",
        "filename": "pdf",
        "is": "unread",
        "in": "inbox",
        "account": "work",
        "before": "2024-03-01",
        "after": "2024-01-01",
        "date": "2024-03",
        "kind": "file",
        "tag": "taxes",
    }.get(name, "value")


def _later(current: dt.datetime | None, value: dt.datetime) -> dt.datetime:
    return value if current is None else max(current, value)


def _earlier(current: dt.datetime | None, value: dt.datetime) -> dt.datetime:
    return value if current is None else min(current, value)


def period(text: str) -> tuple[dt.datetime, dt.datetime]:
    """[start, end) of the day, week, month or year `text` names, in the current time zone."""
    cleaned = text.strip()
    problem = f"{text!r} is not a date: try 2024-03-05, 2024-03, 2024 or 'last week'"
    iso = ISO_DATE_RE.fullmatch(cleaned)
    if iso:  # numeric ISO dates directly: a bare year or month is the whole period, not today's date in it
        year, month, day = (int(part) if part else None for part in iso.groups())
        try:
            moment = dt.datetime(year or 1, month or 1, day or 1)
        except ValueError as exc:
            raise ValueError(problem) from exc
        kind = "day" if day else "month" if month else "year"
    else:
        data = _date_parser().get_date_data(cleaned)
        if data.date_obj is None:
            raise ValueError(problem)
        moment = data.date_obj.replace(tzinfo=None)
        kind = data.period or "day"
    if kind == "year":
        start = dt.datetime(moment.year, 1, 1)
        end = dt.datetime(moment.year + 1, 1, 1)
    elif kind == "month":
        start = dt.datetime(moment.year, moment.month, 1)
        end = dt.datetime(moment.year + (moment.month == 12), moment.month % 12 + 1, 1)
    elif kind == "week":
        start = dt.datetime.combine(moment.date() - dt.timedelta(days=moment.weekday()), dt.time.min)
        end = start + dt.timedelta(days=7)
    elif kind == "time":
        start = moment
        end = moment + dt.timedelta(seconds=1)
    else:
        start = dt.datetime.combine(moment.date(), dt.time.min)
        end = start + dt.timedelta(days=1)
    return _aware(start), _aware(end)


ISO_DATE_RE = re.compile(r"(\d{4})(?:[-/](\d{1,2})(?:[-/](\d{1,2}))?)?")


@lru_cache(maxsize=1)
def _date_parser() -> Any:
    """One parser per process: dateparser loads its language data on first use (the first unreadable value
    costs seconds while every language is tried; later ones milliseconds)."""
    from dateparser.date import DateDataParser

    return DateDataParser(settings={"PREFER_DATES_FROM": "past", "RETURN_TIME_AS_PERIOD": True})


def date_range(text: str) -> tuple[dt.datetime, dt.datetime]:
    """`date:` values: one period, or `A..B` from the start of A to the end of B (either side may be empty)."""
    if ".." not in text:
        return period(text)
    left, right = (part.strip() for part in text.split("..", 1))
    if not left and not right:
        raise ValueError("date:.. needs at least one side, e.g. date:2024-01..2024-03")
    start = period(left)[0] if left else _aware(dt.datetime(1900, 1, 1))
    end = period(right)[1] if right else _aware(dt.datetime(9000, 1, 1))
    if end <= start:
        raise ValueError(f"date:{text} ends before it starts")
    return start, end


def _aware(moment: dt.datetime) -> dt.datetime:
    return timezone.make_aware(moment) if timezone.is_naive(moment) else moment
