"""Values of an asked kind in a sentence, as the extractive answer states them: less those the question gives,
a field line's bare number as a reference, and how many of the question's words label a value."""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet

from apps.ask.textutil import YEAR, find_values, is_phone_number, normalize, value_key

KIND_NAMES = {
    "date": "Date",
    "time": "Time",
    "duration": "Duration",
    "amount": "Amount",
    "measure": "Amount",
    "quantity": "Quantity",
    "phone": "Phone",
    "identifier": "Reference",
}
# How many words before a value may be its label (named_values).
LABEL_SPAN = 4
LABEL_AFTER = 1  # and the word right after it: "the June 15th payroll"


def named_values(text: str, values: list[str], label_words: AbstractSet[str]) -> int:
    """How many of the question's words stand right before a value, as its label: "Host Code: 869944" for
    "the host code for the dial-in", "room rate of $149" for "what's the room rate", not the "Participant
    code: 107058" line below it; or right after it, "the June 15th payroll" for "which payroll" (the best
    value of the sentence counts; LABEL_SPAN words before it, LABEL_AFTER after)."""
    best = 0
    folded = text.lower()
    for value in values:
        at = folded.find(value.lower())
        if at <= 0:
            continue
        before = {w.strip(".,:;#()") for w in normalize(text[:at]).split()[-LABEL_SPAN:]}
        after = {w.strip(".,:;#()") for w in normalize(text[at + len(value) :]).split()[:LABEL_AFTER]}
        best = max(best, sum(1 for word in label_words if any(same_word(word, w) for w in before | after)))
    return min(best, 2)


def same_word(asked: str, written: str) -> bool:
    """The same word, or one written with an ending the question's lacks: "cancel" / "cancelled" (a shared
    start of four letters or more covering the shorter word)."""
    if asked == written:
        return True
    short, long = sorted((asked, written), key=len)
    return len(short) >= 4 and long.startswith(short)


def answer_values(kind: str, text: str, given: set[str], labels: frozenset[str] = frozenset()) -> list[str]:
    """Values of `kind` in `text`, less those the question itself states ("when do futures close on
    October 4, 2001?" is not answered by "October 4, 2001")."""
    values = find_values(kind, text)
    if kind == "identifier":
        # A reference is not a phone number (the phone kind asks for those), and a field line's bare number is
        # one: "New Contract Number: 2053".
        references = [v for v in values if not dialable(v)]
        if not references and (field := _FIELD_NUMBER.match(text)):
            references = [field.group(1)]
        if not references and labels:
            # so is a bare number the question's own words name just before it: "sale deal 618840" for "the
            # sale deal number" (not a year, and not the number's generic words: "number", "code")
            references = [
                m.group(0)
                for m in _BARE_NUMBER.finditer(text)
                if not YEAR.fullmatch(m.group(0)) and named_values(text[: m.end()], [m.group(0)], labels)
            ]
        # "What number should I call …" asks for a number and gets a phone number when that is all there is.
        values = references or values
    return [v for v in values if value_key(v) not in given]


def dialable(identifier: str) -> bool:
    """A phone number rather than a short reference shaped like one ("7019-00", "3-6200"): phone-shaped, with
    an area code in parentheses, an international prefix, or seven digits or more."""
    return is_phone_number(identifier) and (identifier[:1] in "(+" or sum(ch.isdigit() for ch in identifier) >= 7)


def kind_name(kind: str, values: list[str]) -> str:
    """How the answer's first line names its values: a reference question answered with phone numbers only
    ("what number should I call …") says "Phone", not "Reference"; "how much" answered with a quantity,
    "Quantity"."""
    if kind == "identifier" and values and all(dialable(v) for v in values):
        return KIND_NAMES["phone"]
    if kind == "measure" and values and not any(find_values("amount", v) for v in values):
        return KIND_NAMES["quantity"]  # "how much working gas": "Quantity: 20.3 TBTU"
    return KIND_NAMES[kind]


# "Passcode: 5323#", "Contract: 2053", "Host Code: 869944 (Greg)"
_BARE_NUMBER = re.compile(r"(?<![\w.,/$#-])\d{4,12}(?![\w/-]|[.,]\d)")
_FIELD_NUMBER = re.compile(r"^[^:\d]{2,40}:\s*(#?\d{3,}#?)(?:\s*\([^()\d]{1,40}\))?\s*$")
