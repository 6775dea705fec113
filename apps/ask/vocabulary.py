"""Ask's vocabulary, loaded from data/vocabulary.json (the one place words live; see its "about").

Everything here is optional: with an empty file the answer type is "any" and no hint boosts anything, and
retrieval still works through bm25 and the multilingual embedder. `MAILAGENT_ASK_VOCABULARY` may point to
another file (an empty `{}` turns the vocabulary off, which the tests and the benchmark use)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from apps.ask.textutil import contains_word, normalize

DEFAULT_PATH = Path(__file__).resolve().parent / "data" / "vocabulary.json"
ANSWER_TYPE_ORDER = ("time", "duration", "date", "amount", "measure", "quantity", "phone", "identifier", "name")


@dataclass(frozen=True, slots=True)
class Vocabulary:
    answer_types: dict[str, tuple[str, ...]] = field(default_factory=dict)
    yesno_openers: tuple[str, ...] = ()
    hints: dict[str, tuple[str, ...]] = field(default_factory=dict)
    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()


# A phrase written "^where" counts among a question's first words only ("where is …", "so who …"), not as
# the relative word inside it ("the people who worked …").
OPENING_WORDS = 2
_WORD = re.compile(r"\w+")


def phrase_in(folded_text: str, phrase: str) -> bool:
    """A vocabulary phrase in folded lowercase text: whole words, or a word prefix for a trailing *; a leading
    ^ anchors it to the text's first OPENING_WORDS words."""
    if phrase.startswith("^"):
        return phrase_in(" ".join(_WORD.findall(folded_text)[:OPENING_WORDS]), phrase[1:])
    if phrase.endswith("*"):
        stem = normalize(phrase[:-1])
        start = folded_text.find(stem)
        while start != -1:
            if start == 0 or not folded_text[start - 1].isalnum():
                return True
            start = folded_text.find(stem, start + 1)
        return False
    return contains_word(folded_text, normalize(phrase))


def _path() -> Path:
    return Path(os.environ.get("MAILAGENT_ASK_VOCABULARY") or DEFAULT_PATH)


@lru_cache(maxsize=4)
def _load(path: str) -> Vocabulary:
    data = json.loads(Path(path).read_text(encoding="utf-8")) if Path(path).exists() else {}
    return Vocabulary(
        answer_types={k: tuple(v) for k, v in (data.get("answer_types") or {}).items()},
        yesno_openers=tuple(data.get("yesno_openers") or ()),
        hints={k: tuple(v) for k, v in (data.get("hints") or {}).items()},
        before=tuple((data.get("follow_up") or {}).get("before") or ()),
        after=tuple((data.get("follow_up") or {}).get("after") or ()),
    )


def vocabulary() -> Vocabulary:
    return _load(str(_path()))


def answer_types_of(question: str) -> list[str]:
    """Every kind of value the question asks for, in ANSWER_TYPE_ORDER ("when is it due and how much is
    it" → date, amount); ["yesno"] or [] when none."""
    vocab = vocabulary()
    folded = normalize(question)
    kinds = [
        kind
        for kind in ANSWER_TYPE_ORDER
        if any(phrase_in(folded, phrase) for phrase in vocab.answer_types.get(kind, ()))
    ]
    if "time" in kinds and "date" in kinds:
        kinds.remove("date")  # "what time … when" asks for the time
    if "measure" in kinds and {"amount", "quantity", "duration"} & set(kinds):
        kinds.remove("measure")  # "how much does it cost": an amount; "how much time": a length of time
    if "quantity" in kinds and {"duration", "amount"} & set(kinds):
        kinds.remove("quantity")  # "how many days" asks for a length of time, "how many dollars" for an amount
    if "phone" in kinds and "identifier" in kinds:
        kinds.remove("identifier")  # "what phone number …": a phone number, not any reference
    if "name" in kinds and len(kinds) > 1:
        kinds.remove("name")  # "the phone number of the resort where we stay": the phone number
    if kinds:
        return kinds
    first = folded.split(" ", 1)[0] if folded else ""
    return ["yesno"] if first and first in {normalize(w) for w in vocab.yesno_openers} else []


def answer_type_of(question: str) -> str:
    """time | date | amount | identifier | yesno | any, from the vocabulary's phrases (first kind that matches
    in ANSWER_TYPE_ORDER, "what time" before "when"); "any" when nothing matches or the file is empty."""
    vocab = vocabulary()
    folded = normalize(question)
    for kind in ANSWER_TYPE_ORDER:
        if any(phrase_in(folded, phrase) for phrase in vocab.answer_types.get(kind, ())):
            return kind
    first = folded.split(" ", 1)[0] if folded else ""
    if first and first in {normalize(w) for w in vocab.yesno_openers}:
        return "yesno"
    return "any"


def hints_in(question: str) -> list[str]:
    """The hint groups whose words occur in the question."""
    folded = normalize(question)
    return [name for name, words in vocabulary().hints.items() if any(phrase_in(folded, w) for w in words)]


def hint_words(names: list[str]) -> list[str]:
    hints = vocabulary().hints
    return [word for name in names for word in hints.get(name, ())]


def direction_of(question: str) -> str:
    """ "before" / "after" when a follow-up asks for the mail before or after the previous answer, else ""."""
    vocab = vocabulary()
    folded = normalize(question)
    if any(phrase_in(folded, phrase) for phrase in vocab.before):
        return "before"
    if any(phrase_in(folded, phrase) for phrase in vocab.after):
        return "after"
    return ""
