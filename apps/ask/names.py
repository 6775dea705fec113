"""Proper names written in a sentence: the answer to "where …", "who …", "which hotel …" is usually one
("We play at the City Club", "please call Madde Delgado", "Where: The Dog House Tavern", "11410 South
Chestwood"). Found from the writing alone — a run of capitalised words, or a number leading into one (a
street address, a room) — with no list of names or of any language's words, so it is a preference for
the sentences that hold a name the question does not give, not a value the answer states as fact."""

from __future__ import annotations

import re
from collections.abc import Iterable

from apps.ask.textutil import find_dates, normalize

# A word: letters, digits and the marks written inside names ("Pete's", "O'Neil", "Saint-Denis", "St.").
_WORD = re.compile(r"[^\W_][\w'\u2019&.-]*", re.UNICODE)
# Where a sentence (or a field's value) starts: its first word is capitalised whatever it is.
_STARTS = re.compile(r"(?:^|[.!?:;]\s+|\n[\s>]*|\t\s*|[\"“(>]\s*)$")
# "St." "Dr." "Jr." go on with the name; a longer word ending in a period ends its sentence ("… Jeff Royed.").
_ABBREVIATION = 3
_WORDS = re.compile(r"\w+")


def _capitalised(word: str) -> bool:
    return word[0].isupper()


def _leads(word: str) -> bool:
    """A number that may lead a name: a street number ("11410"), a room or floor ("50M", "32C2")."""
    return word[0].isdigit() and len(word) <= 8


def name_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, name) of each run of capitalised words. A run that starts a sentence needs two words or a
    leading number: the first word of any sentence is capitalised ("Please", "Thanks"), one word alone
    there says nothing. Words that are part of a date ("Wednesday, January 23") are not names."""
    dates = [(m.start(), m.end()) for d in find_dates(text) for m in re.finditer(re.escape(d), text)]
    words = [(m.start(), m.end(), m.group(0).rstrip(".-'\u2019")) for m in _WORD.finditer(text)]
    spans: list[tuple[int, int, str]] = []
    run: list[tuple[int, int, str]] = []

    def close() -> None:
        if not run:
            return
        start, end = run[0][0], run[-1][1]
        at_start = bool(_STARTS.search(text[:start]))
        named = [w for w in run if not _leads(w[2])]
        if named and (not at_start or len(run) >= 2):
            spans.append((start, end, text[start:end].rstrip(".,;:")))
        run.clear()

    previous_end = 0
    previous = ""
    for start, end, word in words:
        in_date = any(a <= start < b for a, b in dates)
        gap = text[previous_end:start]
        joined = bool(run) and gap in {" ", ", "} and not (gap == ", " and not _leads(run[0][2]))
        if run and (not joined or (previous.endswith(".") and len(previous) > _ABBREVIATION + 1)):
            close()
        previous = text[start:end]
        if word and not in_date and (_capitalised(word) or _leads(word)):
            run.append((start, end, word))
        else:
            close()
        previous_end = end
    close()
    return spans


def new_names(text: str, known: Iterable[str]) -> tuple[list[str], set[str]]:
    """The names in `text` with words `known` (the question's words and names, the mail's subject and
    sender) lacks, and those words: "Madde Delgado", not John Crespo, for "who do I call if I can't reach
    John Crespo". A longer new name is the likelier answer: "CHICAGO PALMER HOUSE HILTON", not "Chicago, IL"."""
    seen = {w for k in known for w in _WORDS.findall(normalize(k))}
    names: list[str] = []
    words: set[str] = set()
    for _start, _end, name in name_spans(text):
        new = {w for w in _WORDS.findall(normalize(name)) if w not in seen and not w.isdigit()}
        if new:
            names.append(name)
            words |= new
    return names, words
