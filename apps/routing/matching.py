"""Filter evaluation: precompiled patterns grouped per owner, each search under a time budget.

Semantics (also in the filter help text): a pattern is *searched* in the field, so `urgent` matches a
subject containing it and `^urgent` only one starting with it. From/To/CC/BCC are tested against
"Name <address>" of every person on the line (any one matching is a match), Subject and Body against
their text (Body is the plain-text body, capped at BODY_CHARS), Date against the message date as ISO
8601 in the server's time zone (`2026-11-23T09:15:00+00:00`). Filters of one director are OR-ed: the
first matching one (by order) is recorded and the others are not evaluated. A message is routed to
each matching director once.

Patterns use the `regex` package (a superset of `re`) because it can abandon a search after a
timeout: a catastrophic pattern costs one bounded evaluation and a recorded filter error, never a hung
fetcher. Compiling is bounded too: the regex engine unrolls counted repetitions, so `a{1000000}` compiles
to ~250 MB and `a{2147483648}` grew a web process to 21 GB. check_pattern_size refuses a pattern whose
repetition counts or estimated compiled size are over the limits before anything compiles it.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import regex
from django.conf import settings
from django.utils import timezone
from regex import Pattern as RegexPattern

BODY_CHARS = 200_000
PERSON_FIELDS = ("from", "to", "cc", "bcc")


# The largest count a repetition ({n}, {n,m}, {n,}) may give, and the largest estimated compiled size: the
# pattern's atoms, each multiplied by the counts of the repetitions around it. The engine's memory grows
# ~260 bytes per unit (measured: a{100000} +27 MB, (a{1000}){1000} +260 MB), so 20,000 units is ~5 MB.
MAX_REPEAT_COUNT = 1000
MAX_PATTERN_UNITS = 20_000
_COUNTED_REPEAT = regex.compile(r"\{(\d*)(?:(,)(\d*))?\}")


class InvalidPattern(ValueError):
    """Raised with the user-facing message "Invalid regex pattern: <reason>"."""


def _repeat_count(digits: str) -> int:
    # More digits than any allowed count has: over the limit, without converting a huge number.
    return int(digits) if len(digits) <= 9 else MAX_REPEAT_COUNT * 10**9


def check_pattern_size(pattern: str) -> int:
    """The pattern's estimated compiled size in units; InvalidPattern naming the limit when a repetition
    count is over MAX_REPEAT_COUNT or the estimate over MAX_PATTERN_UNITS. A scan of the text, not a
    parse: anything it misreads (a quantifier-like run inside a class, an escape's braces) only counts
    as extra literal characters, so the estimate errs upwards. Alternatives add up (all are compiled)."""
    # One frame per open group: [total units so far, units of the last atom (what a quantifier repeats)]
    frames: list[list[int]] = [[0, 0]]
    position = 0
    length = len(pattern)
    while position < length:
        char = pattern[position]
        frame = frames[-1]
        if char == "\\":
            position += 2
            frame[0] += 1
            frame[1] = 1
            continue
        if char == "[":
            end = position + 1
            if end < length and pattern[end] == "^":
                end += 1
            if end < length and pattern[end] == "]":
                end += 1
            while end < length and pattern[end] != "]":
                end += 2 if pattern[end] == "\\" else 1
            position = end + 1
            frame[0] += 1
            frame[1] = 1
            continue
        if char == "(":
            frames.append([0, 0])
            position += 1
            continue
        if char == ")" and len(frames) > 1:
            inner = frames.pop()[0] or 1
            frames[-1][0] += inner
            frames[-1][1] = inner
            position += 1
            continue
        if char == "|":
            frame[1] = 0
            position += 1
            continue
        if char == "{":
            counted = _COUNTED_REPEAT.match(pattern, position)
            if counted is not None and (counted.group(1) or counted.group(3)):
                low, comma, high = counted.group(1), counted.group(2) or "", counted.group(3) or ""
                if max(_repeat_count(digits) for digits in (low, high) if digits) > MAX_REPEAT_COUNT:
                    shown = counted.group(0) if len(counted.group(0)) <= 30 else counted.group(0)[:27] + "…}"
                    raise InvalidPattern(
                        f"Invalid regex pattern: the repetition {shown} is over the limit; a repetition count "
                        f"may be at most {MAX_REPEAT_COUNT:,}"
                    )
                # {n,} compiles like {n} plus an open loop; {n,m} like {m}
                times = _repeat_count(high) if high else _repeat_count(low) + (1 if comma else 0)
                frame[0] += frame[1] * max(times - 1, 0)
                frame[1] *= max(times, 1)
                position = counted.end()
                if frame[0] > MAX_PATTERN_UNITS:
                    break
                continue
        frame[0] += 1
        frame[1] = 1
        position += 1
    while len(frames) > 1:  # unbalanced: the compile reports it; count what was open
        inner = frames.pop()[0]
        frames[-1][0] += inner
    units = frames[0][0]
    if units > MAX_PATTERN_UNITS:
        raise InvalidPattern(
            f"Invalid regex pattern: it would compile to about {units:,} units (each character, times the "
            f"repetitions around it); the limit is {MAX_PATTERN_UNITS:,}. Use smaller repetition counts, or "
            "an open repetition such as a{3,} or a+"
        )
    return units


def compile_pattern(pattern: str, *, case_insensitive: bool) -> RegexPattern[str]:
    if not pattern or not pattern.strip():
        raise InvalidPattern("Invalid regex pattern: the pattern is empty")
    check_pattern_size(pattern)
    flags = regex.V0 | (regex.IGNORECASE if case_insensitive else 0)
    try:
        return regex.compile(pattern, flags)
    except regex.error as exc:
        raise InvalidPattern(f"Invalid regex pattern: {exc}") from None
    except (OverflowError, RecursionError, ValueError) as exc:
        raise InvalidPattern(f"Invalid regex pattern: {exc}") from None


PROBE_LENGTH = 2000
PROBE_CHARACTERS = "a1 .@-_"
MAX_PROBES = 16


def backtracking_warning(pattern: str, *, case_insensitive: bool) -> str:
    """A warning when the pattern is measured to take runaway time (catastrophic backtracking), else "".

    Measured, not guessed from the pattern's shape: the pattern is searched, with the routing timeout, in
    texts made of one character repeated (each letter or digit the pattern names, and a few common ones)
    and ending in a character nothing expects, the input on which nested repetitions such as (a+)+$ try
    every way to split the run. A pattern that passes routes real mail in linear time in practice."""
    try:
        compiled = compile_pattern(pattern, case_insensitive=case_insensitive)
    except InvalidPattern:
        return ""  # refused elsewhere with its own message
    timeout = filter_timeout_seconds()
    characters = sorted({char for char in pattern if char.isalnum()} | set(PROBE_CHARACTERS))[:MAX_PROBES]
    for char in characters:
        try:
            compiled.search(char * PROBE_LENGTH + "\u2603", timeout=timeout)
        except TimeoutError:
            shown = "a space" if char == " " else f"“{char}”"
            return (
                f"This pattern backtracks catastrophically: on a text of {shown} repeated {PROBE_LENGTH:,} times "
                f"it did not finish within the {round(timeout * 1000)} ms a filter gets per field, so such mail "
                "would be "
                "skipped with a filter error. Nested repetitions like (a+)+ or (\\w+\\s?)+ cause this; "
                "write each repetition once, e.g. a+ or [\\w\\s]+."
            )
    return ""


def filter_timeout_seconds() -> float:
    return float(getattr(settings, "ROUTING_FILTER_TIMEOUT_MS", 50)) / 1000.0


def message_budget_seconds() -> float:
    return float(getattr(settings, "ROUTING_MESSAGE_BUDGET_MS", 1000)) / 1000.0


def _person(entry: Any) -> str:
    if isinstance(entry, Mapping):
        name = str(entry.get("name") or "").strip()
        address = str(entry.get("address") or entry.get("email") or "").strip()
        if name and address:
            return f"{name} <{address}>"
        return address or name
    return str(entry or "")


@dataclass(slots=True)
class RoutableMessage:
    """The fields filters look at, built once per message from a values() row (no model instances)."""

    message_id: int
    owner_id: int
    when: dt.datetime | None
    from_: tuple[str, ...]
    to: tuple[str, ...]
    cc: tuple[str, ...]
    bcc: tuple[str, ...]
    subject: str
    body: str
    date_iso: str
    # Imported with "route through my filters" (MessageOutbox): filters apply whatever the mail's date.
    route_regardless_of_date: bool = False

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> RoutableMessage:
        date = row.get("date")
        sender = _person({"name": row.get("from_name"), "address": row.get("from_address")})
        return cls(
            message_id=int(row["id"]),
            owner_id=int(row["account__owner_id"]),
            when=date or row.get("stored_at"),
            from_=(sender,) if sender else (),
            to=tuple(_person(p) for p in row.get("to") or () if p),
            cc=tuple(_person(p) for p in row.get("cc") or () if p),
            bcc=tuple(_person(p) for p in row.get("bcc") or () if p),
            subject=str(row.get("subject") or ""),
            body=str(row.get("body_text") or "")[:BODY_CHARS],
            route_regardless_of_date=bool(row.get("outbox__route_regardless_of_date")),
            date_iso=timezone.localtime(date).isoformat() if date else "",
        )

    def values(self, field_name: str) -> tuple[str, ...]:
        if field_name == "from":
            return self.from_
        if field_name in ("to", "cc", "bcc"):
            return getattr(self, field_name)
        if field_name == "subject":
            return (self.subject,)
        if field_name == "body":
            return (self.body,)
        if field_name == "date":
            return (self.date_iso,) if self.date_iso else ()
        raise ValueError(f"unknown filter field {field_name!r}")


@dataclass(frozen=True, slots=True)
class CompiledFilter:
    id: int
    director_id: int
    director_name: str
    owner_id: int
    field: str
    regex: str
    description: str
    created_at: dt.datetime
    pattern: RegexPattern[str]


@dataclass(slots=True)
class FilterMatch:
    filter_id: int
    director_id: int
    director_name: str
    field: str
    regex: str
    matched_text: str

    def as_json(self) -> dict[str, Any]:
        return {
            "filter_id": self.filter_id,
            "field": self.field,
            "regex": self.regex,
            "matched": self.matched_text,
        }


@dataclass(slots=True)
class FilterError:
    filter_id: int
    message_id: int
    error: str


@dataclass(slots=True)
class RouteResult:
    message_id: int
    matches: list[FilterMatch] = field(default_factory=list)
    errors: list[FilterError] = field(default_factory=list)
    evaluations: int = 0


@dataclass(slots=True)
class RoutingOutcome:
    messages: int = 0
    evaluations: int = 0
    routes: list[tuple[int, FilterMatch]] = field(default_factory=list)  # (message id, match)
    errors: list[FilterError] = field(default_factory=list)
    created_run_ids: list[int] = field(default_factory=list)


class RuleSet:
    """All enabled filters of enabled directors, compiled once, in order, grouped by owner."""

    def __init__(self, filters: Iterable[CompiledFilter]) -> None:
        self.by_owner: dict[int, list[CompiledFilter]] = {}
        for compiled in filters:
            self.by_owner.setdefault(compiled.owner_id, []).append(compiled)

    def __len__(self) -> int:
        return sum(len(group) for group in self.by_owner.values())

    def route(
        self,
        message: RoutableMessage,
        *,
        respect_creation: bool = True,
        director_ids: set[int] | None = None,
        timeout: float | None = None,
        budget: float | None = None,
    ) -> RouteResult:
        result = RouteResult(message_id=message.message_id)
        filters = self.by_owner.get(message.owner_id)
        if not filters:
            return result
        timeout = filter_timeout_seconds() if timeout is None else timeout
        deadline = time.monotonic() + (message_budget_seconds() if budget is None else budget)
        routed: set[int] = set()
        for compiled in filters:
            if compiled.director_id in routed:
                continue
            if director_ids is not None and compiled.director_id not in director_ids:
                continue
            if respect_creation and message.when is not None and message.when < compiled.created_at:
                continue  # mail older than the filter is only routed by an explicit replay
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                result.errors.append(
                    FilterError(compiled.id, message.message_id, "not evaluated: this message's time budget ran out")
                )
                continue
            for value in message.values(compiled.field):
                result.evaluations += 1
                try:
                    found = compiled.pattern.search(value, timeout=min(timeout, remaining))
                except TimeoutError:
                    result.errors.append(
                        FilterError(
                            compiled.id,
                            message.message_id,
                            f"timed out after {round(min(timeout, remaining) * 1000)} ms on the "
                            f"{compiled.field} of message {message.message_id} (catastrophic backtracking?)",
                        )
                    )
                    break
                if found is not None:
                    routed.add(compiled.director_id)
                    result.matches.append(
                        FilterMatch(
                            filter_id=compiled.id,
                            director_id=compiled.director_id,
                            director_name=compiled.director_name,
                            field=compiled.field,
                            regex=compiled.regex,
                            matched_text=found.group(0)[:200],
                        )
                    )
                    break
        return result
