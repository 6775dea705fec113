"""Step 2 of an Ask run: plan the search. A pure function of the question, the earlier turns of the
conversation and "now"; no database access, so each rule is unit-tested.

No language lexicon lives here. The plan carries the question's own words (bm25 ORs them and drops the
ones nearly every mail contains), its names (capitalised words, addresses: the strongest signal), the
kind of value it asks for (from data/vocabulary.json, optional), a period read by dateparser, and the text
for the multilingual embedder, which is what finds a Turkish statement for an English question. With a
language model, `rewrites` adds the question rewritten into the mailbox's languages (see rewrite.py).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from apps.ask.dates import DateRange, parse_date_range
from apps.ask.intent import DraftRequest, IntentName, classify_intent, draft_request, refusal_text
from apps.ask.textutil import normalize
from apps.ask.vocabulary import answer_types_of, direction_of, hints_in
from apps.search.folding import STOPWORDS

__all__ = [
    "DateRange",
    "DraftRequest",
    "Plan",
    "PreviousTurn",
    "classify_intent",
    "parse_date_range",
    "plan_question",
    "refusal_text",
]

# A follow-up with at most this many words of its own ("and the one before?") inherits the previous plan.
FOLLOW_UP_MAX_WORDS = 3


@dataclass(slots=True)
class Plan:
    question: str
    intent: IntentName
    refusal: str = ""  # what Ask will not do, for an unsupported action
    answer_type: str = "any"  # time | date | amount | identifier | yesno | any (the first of answer_types)
    answer_types: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    sender_hints: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)
    keyword_queries: list[str] = field(default_factory=list)
    semantic_query: str = ""
    rewrites: list[str] = field(default_factory=list)
    provider_queries: dict[str, str] = field(default_factory=dict)
    date_range: DateRange = field(default_factory=DateRange)
    wants_attachments: bool = True
    follow_up: bool = False
    draft: DraftRequest | None = None

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["date_range"] = {
            "start": self.date_range.start.isoformat() if self.date_range.start else None,
            "end": self.date_range.end.isoformat() if self.date_range.end else None,
            "label": self.date_range.label,
            "limits": self.date_range.limits,
        }
        return data

    @property
    def search_range(self) -> DateRange:
        """The range that filters the search (a named period only boosts, see dates.py)."""
        return self.date_range if self.date_range.limits else DateRange()


@dataclass(slots=True)
class PreviousTurn:
    """What planning needs from an earlier question of the same conversation."""

    question: str
    plan: dict[str, Any]
    top_evidence_date: dt.datetime | None = None
    answer: str = ""
    at: dt.datetime | None = None  # when it was answered


_WORD = re.compile(r"[\w][\w.&'@-]*[\w]|[\w]", re.UNICODE)
_ADDRESS = re.compile(r"^[\w.+-]+@[\w-]+(\.[\w-]+)+$|^[\w-]+(\.[\w-]+)*\.[a-z]{2,}$")


def _without_clitic(word: str) -> str:
    """A name written with an apostrophe and an ending or article ("Fidas's", "Ankara'dan", "l'Office") is the
    name: the capitalised piece; a name capitalised throughout ("O'Brien") stays whole. A word with no
    capitalised piece ("don't", "what's") is returned empty."""
    if "'" not in word:
        return word
    pieces = [piece for piece in word.split("'") if piece[:1].isupper()]
    return word if len(pieces) == word.count("'") + 1 else next(iter(pieces), "")


def extract_entities(question: str, *, skip: str = "") -> tuple[list[str], list[str]]:
    """(entities, sender hints): words written with a capital inside the sentence or in capitals
    ("Ergoform", "ACME", "Istanbul"), and addresses or domains (also sender hints). Script-neutral: it
    reads the writing, not a word list."""
    entities: list[str] = []
    senders: list[str] = []
    skipped = set(normalize(skip).split())
    words = _WORD.findall(question)
    for index, word in enumerate(words):
        plain = word.strip(".'")
        if "@" not in plain:
            plain = _without_clitic(plain)
        folded = normalize(plain)
        if len(plain) < 2 or folded in STOPWORDS or folded in skipped:
            continue
        if "@" in plain or _ADDRESS.match(plain.lower()):
            entities.append(plain)
            senders.append(plain)
            continue
        is_caps = plain.isupper() and any(c.isalpha() for c in plain)
        previous = words[index - 1] if index > 0 else ""
        sentence_start = index == 0 or previous.endswith((".", "?", "!"))
        is_capitalised = plain[:1].isupper() and not sentence_start
        if (is_caps or is_capitalised) and plain not in entities:
            entities.append(plain)
    return entities, senders


def content_keywords(question: str, *, skip: str = "") -> list[str]:
    """The question's words minus stopwords, digits and the words of its period ("last month")."""
    skipped = set(normalize(skip).split())
    words: list[str] = []
    for word in _WORD.findall(question):
        folded = normalize(_without_clitic(word.strip("'")))
        if len(folded) < 2 or folded in STOPWORDS or folded.isdigit() or "'" in folded or folded in skipped:
            continue
        if folded not in words:
            words.append(folded)
    return words


def keyword_queries(
    question_words: list[str], entities: list[str], rewrites: list[str], *, question: str = ""
) -> list[str]:
    """bm25 queries, each an OR of its words: the question's words, the question as typed (what the search
    box would run: it keeps numbers and codes such as "27496" or "PL-1"; the index drops its common words),
    its names alone (a name is the most precise thing a question has), then any rewrites."""
    queries = [" ".join(question_words), question.strip(), " ".join(entities), *rewrites]
    seen: set[str] = set()
    unique: list[str] = []
    for query in queries:
        if query.strip() and query not in seen:
            seen.add(query)
            unique.append(query)
    return unique[:8]


def provider_queries(plan: Plan) -> dict[str, str]:
    """Gmail `q=` and Graph `$search` strings. With entities they are the query (precise, and language
    independent: a name finds mail in any language, a translated word would not); otherwise the content words."""
    words = [f'"{e}"' if " " in e else e for e in plan.entities] if plan.entities else plan.keywords[:6]
    gmail = " ".join(words)
    search = plan.search_range
    if search.start:
        gmail += f" after:{search.start:%Y/%m/%d}"
    if search.end:
        gmail += f" before:{(search.end + dt.timedelta(days=1)):%Y/%m/%d}"
    graph = " ".join(plan.entities or plan.keywords[:4])
    return {"gmail": gmail.strip(), "graph": graph.strip()}


def _saved_range(saved: dict[str, Any]) -> DateRange:
    return DateRange(
        dt.datetime.fromisoformat(saved["start"]) if saved.get("start") else None,
        dt.datetime.fromisoformat(saved["end"]) if saved.get("end") else None,
        str(saved.get("label") or ""),
        bool(saved.get("limits", True)),
    )


def plan_question(
    question: str,
    *,
    now: dt.datetime,
    history: list[PreviousTurn] | None = None,
    rewrites: list[str] | None = None,
    drafts: bool = False,
) -> Plan:
    """drafts: the router read the request as follow-up drafts (in any language), whatever the rules say."""
    intent, refusal = classify_intent(question)
    if drafts:
        intent, refusal = "follow_up_drafts", ""
    plan = Plan(question=question, intent=intent, refusal=refusal)
    if intent == "unsupported":
        return plan
    if intent == "follow_up_drafts":
        plan.draft = draft_request(question)
        plan.keywords = plan.draft.topic_terms
        plan.date_range = parse_date_range(question, now)
        return plan
    date_range = parse_date_range(question, now)
    entities, senders = extract_entities(question, skip=date_range.label)
    keywords = content_keywords(question, skip=date_range.label)
    answer_types = answer_types_of(question)
    hints = hints_in(question)
    previous = history[-1] if history else None
    is_follow_up = previous is not None and not entities and len(keywords) <= FOLLOW_UP_MAX_WORDS
    if previous is not None and is_follow_up:
        before = previous.plan
        entities = list(before.get("entities") or [])
        senders = senders or list(before.get("sender_hints") or [])
        hints = hints or list(before.get("hints") or [])
        keywords = [*keywords, *(k for k in before.get("keywords") or [] if k not in keywords)]
        direction = direction_of(question)
        if direction == "before" and previous.top_evidence_date is not None:
            date_range = DateRange(
                None, previous.top_evidence_date - dt.timedelta(seconds=1), "before the previous answer"
            )
        elif direction == "after" and previous.top_evidence_date is not None:
            date_range = DateRange(
                previous.top_evidence_date + dt.timedelta(seconds=1), None, "after the previous answer"
            )
        elif not date_range.label and before.get("date_range"):
            date_range = _saved_range(before["date_range"])
        if not answer_types or answer_types == ["yesno"]:
            answer_types = list(before.get("answer_types") or answer_types)
    plan.follow_up = is_follow_up
    plan.answer_types = answer_types
    plan.answer_type = answer_types[0] if answer_types else "any"
    plan.entities = entities
    plan.sender_hints = senders
    plan.hints = hints
    plan.keywords = keywords
    plan.date_range = date_range
    plan.rewrites = list(rewrites or [])
    plan.keyword_queries = keyword_queries(keywords, entities, plan.rewrites, question="" if is_follow_up else question)
    context = previous.question + " " if is_follow_up and previous is not None else ""
    plan.semantic_query = (context + question).strip()
    plan.provider_queries = provider_queries(plan)
    return plan
