"""The answer without a language model: one message, the sentences of it that carry what was asked.

1. The kinds of value the question asks for (plan.answer_types: date, time, amount, identifier).
2. Among the best evidence threads (close to the top score) and their read messages, the one message whose
   own text (no quotes, greetings, signatures or disclaimers: mailparts.own_text) holds every asked kind in
   the sentences most similar to the question. Similarity is the multilingual embedder's (an English
   question finds the due-date line of a Turkish statement), plus the question's words and names.
3. Quote those sentences with the values marked, cite [n], and never mix values from two messages.
When the best message lacks an asked kind, say so and point to the closest mails; an answer the confidence
model (apps/ask/confidence.py) rates low says it is unsure."""

from __future__ import annotations

import datetime as dt
import logging
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from apps.ask.answer import EvidenceMessage, EvidenceText
from apps.ask.answer_values import answer_values, kind_name, named_values
from apps.ask.confidence import answer_features, confidence_level
from apps.ask.fields import LABEL, asking_phrases, kinds_in, label_asked, label_asks_name, label_fits, labelled
from apps.ask.names import new_names
from apps.ask.planner import Plan
from apps.ask.quoting import address_block, introduced_lines, mark
from apps.ask.textutil import (
    VALUE_KIND_LABELS,
    VALUE_KINDS,
    Passage,
    amount_number,
    contains_word,
    find_values,
    normalize,
    parse_day,
    value_key,
)
from apps.ask.vocabulary import phrase_in, vocabulary

logger = logging.getLogger(__name__)

# The kinds whose values make a sentence likelier to answer a question that asks for no kind: any number
# with a word after it (a quantity) is too common for that.
OPEN_KINDS = tuple(kind for kind in VALUE_KINDS if kind not in ("quantity", "measure"))
# Threads scoring at least this share of the best one are considered for the answer.
CONTENDER_SHARE = 0.75
MAX_CONTENDERS = 3
MAX_PASSAGES_EMBEDDED = 60
# Embedding costs ~25 ms per 1,000 characters on 2 cores: past this budget, the sentences sharing most of the
# question's words (then the best-ranked mails' first) are embedded, the rest are not considered.
EMBED_CHARACTERS = 3000


@dataclass(slots=True)
class ExtractiveAnswer:
    text: str
    number: int = 0  # the cited evidence item, 0 when nothing is quoted
    values: list[str] = field(default_factory=list)
    kinds_found: list[str] = field(default_factory=list)
    kinds_missing: list[str] = field(default_factory=list)
    confidence: str = "low"  # high | medium | low
    similarity: float = 0.0
    chance: float | None = None  # the confidence model's estimate that the cited mail answers (apps/ask/confidence)
    features: list[float] = field(default_factory=list)  # what it was estimated from (confidence.FEATURES)
    attribution: str = ""  # "“subject” from sender, date": names the cited mail, claims nothing about it

    def checked_text(self) -> str:
        """The answer's claims, for the citation check: the quoted sentences and the headline values, without
        the subject and date that only name the cited mail (its date would count as "1 value found")."""
        text = self.text.replace("**", "")
        return text.replace(self.attribution, "") if self.attribution else text

    def summary(self) -> dict[str, Any]:
        return {
            "cited": self.number,
            "values": self.values,
            "kinds_found": self.kinds_found,
            "kinds_missing": self.kinds_missing,
            "confidence": self.confidence,
            "similarity": round(self.similarity, 3),
            "chance": None if self.chance is None else round(self.chance, 3),
            "features": [round(x, 4) for x in self.features],
        }


def _similarities(question: str, texts: list[str]) -> np.ndarray:
    if not texts:
        return np.zeros(0, dtype=np.float32)
    try:
        from apps.search.embedders import embed_passages_cached, embed_query_cached, get_embedder

        embedder = get_embedder()
        query = np.asarray(embed_query_cached(embedder, question[:2000]), dtype=np.float32).reshape(-1)
        rows = embed_passages_cached(embedder, [t[:500] for t in texts])
        return np.asarray(rows @ query, dtype=np.float32)
    except Exception:  # the embedder is optional here: words and names still rank the sentences
        logger.warning("ask: sentence similarity unavailable", exc_info=True)
        return np.zeros(len(texts), dtype=np.float32)


def _word_overlap(plan: Plan, text: str, subject: str = "") -> float:
    """The question's words and names in a sentence; those of the mail's subject count half: they name the
    message (and are in every sentence's embedded text already) more than the sentence that answers."""
    folded = normalize(text)
    heading = normalize(subject)
    # whole words, punctuation aside: "Rate: $0.10" holds "rate"
    found = sum(0.5 if contains_word(heading, word) else 1.0 for word in plan.keywords if contains_word(folded, word))
    found += sum(0.5 if name in heading else 1.0 for entity in plan.entities if (name := normalize(entity)) in folded)
    return min(found, 4) / 4


@dataclass(slots=True)
class _Option:
    number: int
    message: EvidenceMessage
    prior: float
    newest: bool = False  # the newest read message of a thread of several
    scored: list[tuple[float, float, Passage]] = field(default_factory=list)  # (score, similarity, passage)


# How much the question's words in a sentence count (_word_overlap), next to its similarity: half as much when
# a place or person is asked for, which a sentence names without restating the question (measured over the 55
# name questions of the bench files: 43 answered at 0.3, 45 at 0.15, 44 at 0.225 and at 0.075).
OVERLAP_WEIGHT = 0.3
NAME_OVERLAP_WEIGHT = 0.15
# A sentence of the message a mail forwards counts a little less than one of the mail's own text.
FORWARDED_PENALTY = 0.1
# Within a thread the newest message that carries the value wins ties (a schedule change supersedes the booking).
NEWEST_BONUS = 0.3
LABELLED_BONUS = 0.3
# A value under a label naming another kind ("Where: Reservations set for 11:30" for "what time …") counts less.
MISFIT = 0.3
# Per word of the question standing right before a value (its label), at most two: answer_values.named_values.
NAMED_VALUE_BONUS = 0.2
NEW_VALUE_BONUS = 0.15
# A sentence naming a place or person the question does not give, when it asks "where", "who", "which
# hotel": per new word of its names, up to NEW_NAME_WORDS (apps/ask/names.py).
NEW_NAME_BONUS = 0.1
NEW_NAME_WORDS = 3
LATER_DATE_BONUS = 0.5
SUPERSEDES_BONUS = 0.5


def _question_words(plan: Plan) -> set[str]:
    """The question's keywords and the words of its names, numbers left out."""
    words = {*plan.keywords, *(w for entity in plan.entities for w in normalize(entity).split())}
    return {w for w in words if not w.isdigit()}


def _label_words(plan: Plan, subject: str) -> set[str]:
    """The question's words that may name a value in a sentence, less those of the mail's subject (they say
    which mail, not which of its values)."""
    return _question_words(plan) - set(normalize(subject).split())


def _number_labels(plan: Plan) -> frozenset[str]:
    """The question's words that may name a bare number when it asks for a reference ("sale deal" in "the
    sale deal number", "code" in "conference code" for "Code No. 491582"): its keywords and names."""
    if "identifier" not in plan.answer_types:
        return frozenset()
    return frozenset(_question_words(plan))


# "82,000", "1,250.50": a number in groups of thousands, not inside a code or a date.
_GROUPED_NUMBER = re.compile(r"(?<![\w.,/$#-])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w/-]|[.,]\d)")
_RANGE_END = re.compile(r"\s?[-\u2013]\s?\d")


def _names_a_day(question: str) -> bool:
    """The question names a day, not a period: "October 4, 2001", not "the October 16-31 pay period"."""
    for value in find_values("date", question):
        at = question.find(value)
        if at >= 0 and not _RANGE_END.match(question, at + len(value)):
            return True
    return False


def _restates(text: str, question_numbers: set[str]) -> bool:
    """Every number of the text is one the question gives ("contract 27496" → "Contract # : 27496")."""
    numbers = re.findall(r"\d+", text)
    return bool(numbers) and all(n in question_numbers for n in numbers)


def _echoes_subject(text: str, subject: str) -> bool:
    """A quoted header line that repeats the mail's own subject ("Subject: Credit request …")."""
    rest = normalize(LABEL.sub("", text, count=1))
    core = normalize(re.sub(r"^\s*((re|fwd?|aw|wg|tr)\s*:\s*)+", "", subject, flags=re.IGNORECASE))
    return bool(core) and rest.endswith(core) and len(rest) <= len(core) + 8


def _structural_preference(kind: str, option: _Option) -> Any:
    """Language-neutral tie-breakers between sentences holding the same kind of value: a date after the
    message was sent (a deadline, an appointment, a delivery) over one before it (an issue or cut-off date,
    past transactions); the largest amount of the message (the total) over its parts."""
    if kind == "date":
        sent = dt.date.fromtimestamp(option.message.timestamp) if option.message.timestamp else None

        def later(passage: Passage) -> float:
            days = [parse_day(v, reference=sent) for v in find_values("date", passage.text)]
            return LATER_DATE_BONUS if sent and any(d and d > sent for d in days) else 0.0

        return later
    if kind in ("amount", "measure"):  # the largest amount, for "how much" too
        largest = max(
            (amount_number(v) for _s, _m, p in option.scored for v in find_values("amount", p.text)), default=0.0
        )

        def biggest(passage: Passage) -> float:
            return (
                0.15
                if largest and any(amount_number(v) == largest for v in find_values("amount", passage.text))
                else 0.0
            )

        return biggest
    return lambda passage: 0.0


def _supersedes(option: _Option, options: list[_Option], chosen: list[tuple[Passage, list[str]]]) -> bool:
    """A newer message of the same thread that repeats a value an older one gave ("has moved from 18:40
    to 19:25") updates it: the newer message is the answer. A value it only forwards (below a separator
    rule) updates nothing."""
    values = {v for p, vs in chosen if p.source != "forwarded" for v in vs}
    if not values:
        return False
    for other in options:
        if other is option or other.number != option.number or other.message.timestamp >= option.message.timestamp:
            continue
        if any(v in p.text for p in other.message.passages for v in values):
            return True
    return False


def _nearest_to_names(plan: Plan, chosen: list[tuple[Passage, list[str]]], values: list[str]) -> list[str]:
    """The values written closest to a name the question gives ("how much does PG&E owe" in "$1.3 B for SCE
    and about $1.0 B for PG&E" is $1.0 B); all of them when no sentence holding them names one."""
    distances: dict[str, int] = {}
    names = [name for entity in plan.entities if (name := entity.lower())]
    for passage, passage_values in chosen:
        text = passage.text.lower()
        spots = [m.start() for name in names for m in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", text)]
        if not spots:
            continue
        for value in passage_values:
            at = text.find(value.lower())
            if value in values and at != -1:
                distance = min(abs(at - spot) for spot in spots)
                distances[value] = min(distance, distances.get(value, distance))
    if not distances:
        return values
    nearest = min(distances.values())
    return [v for v in values if distances.get(v) == nearest]


def _headline(
    plan: Plan,
    kind: str,
    chosen: list[tuple[Passage, list[str]]],
    message: EvidenceMessage,
    labels: frozenset[str] = frozenset(),
) -> list[str]:
    """The values of one kind to state up front: a date after the mail was sent (else all dates), the
    amount written next to a name the question gives (else the largest: the total), or every time /
    reference (at most three)."""
    values = [v for passage, vs in chosen for v in vs if v in answer_values(kind, passage.text, set(), labels)]
    if kind == "date" and message.timestamp:
        sent = dt.date.fromtimestamp(message.timestamp)
        later = [v for v in values if (day := parse_day(v, reference=sent)) is not None and day > sent]
        values = later or values
    elif values and (kind == "amount" or (kind == "measure" and all(find_values("amount", v) for v in values))):
        values = [max(_nearest_to_names(plan, chosen, values), key=amount_number)]
    return list(dict.fromkeys(values))[:3]


def _within_budget(plan: Plan, flat: list[tuple[_Option, Passage]]) -> list[tuple[_Option, Passage]]:
    """The sentences worth embedding, in their order: all of them when they fit MAX_PASSAGES_EMBEDDED and
    EMBED_CHARACTERS, else each message's sentence sharing most of the question's words, then the others
    sharing most (ties: the better-ranked mail first). So one long mail cannot take the whole budget."""
    sizes = [len(o.message.subject) + min(len(p.text), 500) for o, p in flat]
    if len(flat) <= MAX_PASSAGES_EMBEDDED and sum(sizes) <= EMBED_CHARACTERS:
        return flat
    by_overlap = sorted(
        range(len(flat)),
        key=lambda i: (-_word_overlap(plan, flat[i][1].text, flat[i][0].message.subject), -flat[i][0].prior, i),
    )
    firsts: dict[int, int] = {}  # option → its best sentence
    for i in by_overlap:
        firsts.setdefault(id(flat[i][0]), i)
    chosen_first = set(firsts.values())
    order = [i for i in by_overlap if i in chosen_first] + [i for i in by_overlap if i not in chosen_first]
    kept: list[int] = []
    used = 0
    for i in order:
        if kept and (used + sizes[i] > EMBED_CHARACTERS or len(kept) >= MAX_PASSAGES_EMBEDDED):
            continue
        kept.append(i)
        used += sizes[i]
    return [flat[i] for i in sorted(kept)]


def _options(items: list[EvidenceText], top_score: float) -> list[_Option]:
    """Every read message of these evidence threads, with a prior from its thread's score."""
    options: list[_Option] = []
    for item in items:
        members = item.members or [
            EvidenceMessage(item.subject, item.sender, item.date_label, 0.0, [p for p in item.passages])
        ]
        newest = max((m.timestamp for m in members), default=0.0)
        for position, message in enumerate(members):
            # the thread's score relative to the best (NEWEST_BONUS is added where the newest one answers)
            prior = 2.0 * item.score / top_score - (0.0 if position == 0 else 0.1)
            is_newest = len(members) > 1 and message.timestamp == newest
            options.append(_Option(item.number, message, prior, newest=is_newest))
    return options


def _closings_about_the_question(plan: Plan, options: list[_Option]) -> set[int]:
    """The options whose closing names what the question asks about: "the phone number of the resort" is
    in a closing that names the resort, not in the signature of the mail's sender. The words that ask for
    the kind of value ("phone", "number") do not count: every signature holds them."""
    asking = [phrase for kind in plan.answer_types for phrase in vocabulary().answer_types.get(kind, ())]
    asking_words = {word for phrase in asking for word in normalize(phrase.rstrip("*")).split()}
    words = [
        word
        for word in [*plan.keywords, *(normalize(entity) for entity in plan.entities)]
        if word and word not in asking_words and not any(phrase_in(word, phrase) for phrase in asking)
    ]
    about: set[int] = set()
    for option in options:
        closing = normalize(" ".join(p.text for p in option.message.passages if p.source == "closing"))
        if closing and any(contains_word(closing, word) for word in words):
            about.add(id(option))
    return about


def _could_answer(
    passage: Passage,
    kinds: list[str],
    given: set[str],
    asking: dict[str, list[str]] | None = None,
    labels: frozenset[str] = frozenset(),
) -> bool:
    """A sentence holding an asked kind of value; any sentence of the mail's own text when no kind is asked."""
    if passage.source == "subject":
        return False
    if not kinds:
        # a lone word ("Cathy", "Chris": a greeting or sign-off the closing rules missed) answers nothing
        single = len(passage.text.split()) < 2 and not any(ch.isdigit() for ch in passage.text)
        return passage.source != "closing" and not single
    return any(answer_values(kind, passage.text, given, labels) for kind in kinds_in(passage, kinds, asking))


def extractive_answer(plan: Plan, evidence: list[EvidenceText]) -> ExtractiveAnswer:
    kinds = [k for k in plan.answer_types if k in VALUE_KINDS]
    given = {key for kind in VALUE_KINDS for v in find_values(kind, plan.question) if (key := value_key(v))}
    if "date" in kinds and "time" not in kinds and _names_a_day(plan.question):
        # "when do futures close on October 4, 2001?": the question names the day, so it asks for a time
        kinds = ["time" if kind == "date" else kind for kind in kinds]
    question_numbers = set(re.findall(r"\d+", plan.question))
    asks_name = "name" in plan.answer_types
    if not evidence:
        return ExtractiveAnswer(text="Nothing in your mail matched.")
    top_score = evidence[0].score or 1.0
    contenders = [e for e in evidence[:MAX_CONTENDERS] if e.score >= CONTENDER_SHARE * top_score] or evidence[:1]
    options = _options(contenders, top_score)
    # Only sentences that could answer are embedded.
    about = _closings_about_the_question(plan, options)
    asking = asking_phrases(plan)
    labels = _number_labels(plan)
    # A forwarded sentence that a read message holds as its own text is that message's, not the forward's.
    own = {p.text for o in options for p in o.message.passages if p.source == "body"}
    flat = _within_budget(
        plan,
        [
            (o, p)
            for o in options
            for p in o.message.passages
            if _could_answer(p, kinds, given, asking, labels)
            and (p.source != "closing" or id(o) in about or label_asked(p, kinds, asking))
            and (p.source != "forwarded" or p.text not in own)
        ],
    )
    asked = kinds
    # An amount or a quantity was asked and none was recognised: a grouped number may still be it.
    counted = not flat and bool({"amount", "measure", "quantity"} & set(kinds))
    if kinds and not flat:
        # No sentence holds a value of the asked kind that the patterns recognise (a phone number, a room, a
        # name, "5 business days"): quote the sentences closest to the question instead, and say so.
        kinds = []
        flat = _within_budget(
            plan, [(o, p) for o in options for p in o.message.passages if _could_answer(p, [], given)]
        )
    # Each sentence is embedded with its mail's subject (a bare "label: date" line says little).
    similarities = _similarities(
        plan.semantic_query or plan.question, [f"{o.message.subject}: {p.text}" for o, p in flat]
    )
    for (option, passage), similarity in zip(flat, similarities, strict=True):
        overlap = _word_overlap(plan, passage.text, option.message.subject)
        score = float(similarity) + (NAME_OVERLAP_WEIGHT if asks_name else OVERLAP_WEIGHT) * overlap
        score -= FORWARDED_PENALTY if passage.source == "forwarded" else 0.0
        option.scored.append((score, float(similarity), passage))
    best: tuple[float, _Option, list[tuple[Passage, list[str]]], list[str], float] | None = None
    for option in options:
        if not option.scored:
            continue
        ranked = sorted(option.scored, key=lambda item: -item[0])
        chosen: list[tuple[Passage, list[str]]] = []
        found: list[str] = []
        quality = 0.0
        best_similarity = 0.0
        label_words = _label_words(plan, option.message.subject)
        for kind in kinds:
            preferred = _structural_preference(kind, option)

            def named(passage: Passage, kind: str = kind, label_words: set[str] = label_words) -> float:
                values = answer_values(kind, passage.text, given, labels)
                return NAMED_VALUE_BONUS * named_values(passage.text, values, label_words)

            for score, similarity, passage in sorted(
                ranked,
                key=lambda item: (
                    -(item[0] + preferred(item[2]) + named(item[2]) - (0.0 if label_fits(item[2], kind) else MISFIT))
                ),
            ):
                values = (
                    answer_values(kind, passage.text, given, labels) if kind in kinds_in(passage, kinds, asking) else []
                )
                if values:
                    found.append(kind)
                    quality += score + preferred(passage) + named(passage)
                    quality += LABELLED_BONUS if labelled(passage.text, values) and label_fits(passage, kind) else 0
                    best_similarity = max(best_similarity, similarity)
                    existing = next((c for c in chosen if c[0] is passage), None)
                    if existing is None:
                        chosen.append((passage, values))
                    else:
                        existing[1].extend(v for v in values if v not in existing[1])
                    break
        if not kinds:
            # The kind of value is unknown ("what bid…", "what rate…"): a sentence that states a value the
            # question does not give (an amount, a date, a time, a reference) is more likely the answer than
            # one that only restates the question ("Contract # : 27496") or repeats the mail's subject.
            def open_score(
                item: tuple[float, float, Passage],
                message: EvidenceMessage = option.message,
                label_words: set[str] = label_words,
            ) -> float:
                passage = item[2]
                if _echoes_subject(passage.text, message.subject):
                    return item[0] - 1.0
                if _restates(passage.text, question_numbers):
                    return item[0] - NEW_VALUE_BONUS
                values = [v for kind in OPEN_KINDS for v in answer_values(kind, passage.text, given)]
                if counted:  # "how much did he pay": "for 82,000", a number written without its currency
                    values += _GROUPED_NUMBER.findall(passage.text)
                new = any(not _restates(value, question_numbers) for value in values)
                if asks_name:  # a place or a person: a new name, not a phone number or a date, answers
                    names, novel = new_names(passage.text, [plan.question, message.subject, message.sender])
                    bonus = NEW_NAME_BONUS * min(len(novel), NEW_NAME_WORDS)
                else:
                    names = []
                    bonus = NEW_VALUE_BONUS if new else 0.0
                named = NAMED_VALUE_BONUS * named_values(passage.text, values + names, label_words)
                return item[0] + bonus + named + (LABELLED_BONUS if asks_name and label_asks_name(passage) else 0.0)

            # each sentence scored once (finding names and values costs more than the sort)
            for open_total, scored in sorted(((open_score(e), e) for e in ranked), key=lambda pair: -pair[0])[:2]:
                chosen.append((scored[2], []))
                quality += open_total
                best_similarity = max(best_similarity, scored[1])
        total = option.prior + len(found) * 1.0 + quality / max(1, len(kinds) or 2)
        if option.newest and any(passage.source != "forwarded" for passage, _values in chosen):
            total += NEWEST_BONUS  # a newer message that only relays the older one below a rule updates nothing
        if _supersedes(option, options, chosen):
            total += SUPERSEDES_BONUS
        if best is None or total > best[0]:
            best = (total, option, chosen, found, best_similarity)
    if best is None:
        top = evidence[0]
        return ExtractiveAnswer(
            text=f"The best match is “{top.subject or '(no subject)'}” from {top.sender or 'an unknown sender'} "
            f"[1], but it has no sentence of its own that answers the question.",
            number=1,
        )
    _total, option, chosen, found, similarity = best
    message = option.message
    missing = [k for k in asked if k not in found]
    where = f"“{message.subject or '(no subject)'}” from {message.sender or 'an unknown sender'}"
    if message.date_label:
        where += f", {message.date_label}"
    cite = f"[{option.number}]"
    values = [v for _p, vs in chosen for v in vs]
    lines: list[str] = []
    features = answer_features(similarity, [e.score for e in evidence])
    level, chance = confidence_level(features)
    unsure = bool(missing) or level == "low"
    if found:
        headlines = {kind: _headline(plan, kind, chosen, message, labels) for kind in found}
        facts = " · ".join(
            f"{kind_name(kind, shown)}: " + ", ".join(f"**{v}**" for v in shown) for kind, shown in headlines.items()
        )
        lines.append(("I'm not sure, but the closest answer is — " if unsure else "") + f"{facts} {cite}")
    if missing and not found:
        lines.append(
            f"I found no {' or '.join(VALUE_KIND_LABELS[k].split(' ', 1)[1] for k in missing)} I could recognise in"
            f" the best match, {where} {cite}; these are its sentences closest to your question:"
        )
    elif missing:
        lines.append(
            f"The best match, {where} {cite}, does not state "
            + " or ".join(VALUE_KIND_LABELS[k] for k in missing)
            + ". The closest mails are listed below."
        )
    elif not kinds and unsure:
        lines.append(f"I'm not sure this answers it. The closest match is {where} {cite}:")
    else:
        lines.append(f"From {where}:")
    quoted = [passage for passage, _values in chosen]
    for passage, passage_values in chosen:
        origin = f" (attachment {passage.attachment})" if passage.attachment else ""
        if asks_name and not kinds:  # a place: its whole address block
            for line in address_block(message, passage):
                if line is passage or not any(line is q for q in quoted):
                    quoted.append(line)
                    lines.append(f"“{mark(line.text, passage_values)}”{origin} {cite}")
            continue
        lines.append(f"“{mark(passage.text, passage_values)}”{origin} {cite}")
        for line in introduced_lines(message, passage, quoted):
            quoted.append(line)
            lines.append(f"“{mark(line.text, values)}”{origin} {cite}")
    confidence = "low" if unsure else level
    return ExtractiveAnswer(
        text="\n".join(lines),
        number=option.number,
        values=values,
        kinds_found=found,
        kinds_missing=missing,
        confidence=confidence,
        similarity=similarity,
        chance=chance,
        features=features,
        attribution=where,
    )
