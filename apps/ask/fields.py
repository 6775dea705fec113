"""Field lines ("Label: value") and what their labels ask for: the vocabulary's phrases for each kind of value
(data/vocabulary.json) read in a line's label, and in the question."""

from __future__ import annotations

import re

from apps.ask.planner import Plan
from apps.ask.textutil import Passage, normalize
from apps.ask.vocabulary import phrase_in, vocabulary

LABEL = re.compile(r"^[^:]{2,40}:\s*")


def labelled(text: str, values: list[str]) -> bool:
    """A field line of a statement, invoice or booking: "Total to pay: £84.20", "Due date: 11/05/2026"."""
    match = LABEL.match(text)
    return match is not None and any(text[match.end() :].startswith(v) for v in values)


def asking_phrases(plan: Plan) -> dict[str, list[str]]:
    """{kind: the vocabulary's phrases in the question that ask for it} ("tracking number" → identifier)."""
    folded = normalize(plan.question)
    table = vocabulary().answer_types
    return {kind: [p for p in table.get(kind, ()) if phrase_in(folded, p)] for kind in plan.answer_types}


def kinds_in(passage: Passage, kinds: list[str], asking: dict[str, list[str]] | None = None) -> list[str]:
    """The asked kinds a sentence may answer: a mail's closing (sign-off, signature) only a phone number, or
    a value its own label asks for in the question's words ("TRACKING NUMBER: A0006…" below a sign-off
    when the question asks for the tracking number)."""
    if passage.source != "closing":
        return kinds
    name = label_of(passage)
    return [
        kind
        for kind in kinds
        if kind == "phone" or (name and any(phrase_in(name, phrase) for phrase in (asking or {}).get(kind, ())))
    ]


def label_of(passage: Passage) -> str:
    """The folded label of a field line ("Tracking Number: …" → "tracking number"), "" for other lines."""
    label = LABEL.match(passage.text)
    return normalize(label.group(0).rstrip(": \t")) if label else ""


def label_asks_name(passage: Passage) -> bool:
    """A field labelled with a phrase that asks for a name: "Where: The Dog House Tavern", or a line under
    the heading "Where"."""
    name = label_of(passage) or normalize(passage.heading)
    return bool(name) and any(phrase_in(name, phrase) for phrase in vocabulary().answer_types.get("name", ()))


# Kinds a label may name for another: "When:" holds the day and the hour.
KIN = {"date": {"date", "time"}, "time": {"date", "time"}, "measure": {"measure", "amount", "quantity"}}


def label_fits(passage: Passage, kind: str) -> bool:
    """A field whose label names no kind of value, or this one: "Where: Reservations set for 11:30" is a
    place's field, so its hour is not labelled as the answer to "what time" ("When: … 11:30 AM-1:00 PM" is)."""
    name = label_of(passage)
    if not name:
        return True
    table = vocabulary().answer_types
    named = {k for k, phrases in table.items() if any(phrase_in(name, phrase) for phrase in phrases)}
    return not named or bool(named & KIN.get(kind, {kind}))


def label_asked(passage: Passage, kinds: list[str], asking: dict[str, list[str]]) -> bool:
    """A closing line labelled with what the question asks for: it answers whoever signed the mail."""
    return any(kind != "phone" for kind in kinds_in(passage, kinds, asking))
