"""Merge candidates per thread and rerank them. Every signal is a number in [0, 1]; the final score is the
weighted sum below. The weights live here and only here.

Signals (per candidate message):
- lexical    how well the local full-text search ranked it (best rank over the keyword variants) and how
             many of the question's words its text actually contains (subject, body, attachments), plus a
             small boost for a word of the optional vocabulary hints (data/vocabulary.json)
- semantic   cosine similarity of the question to its best chunk, relative to the best candidate
- provider   Gmail / Graph returned it for the provider query
- recency    1.0 for the newest mail of its series (same sender, same subject apart from numbers and month
             names: monthly statements, invoices), halving for each older one; plus a gentle age decay
             relative to the newest candidate. "When do I have to pay" means the latest statement.
- entity     the share of the plan's entities (a bank, a company, jeff.skilling@…) found in the sender or
             subject (full credit) or in the body/attachments (most credit). The strongest signal: an
             answer about another bank is wrong, however similar the text.
- evidence   the share of the asked kinds of value (a date, a time, an amount, a reference number) the
             text holds
- attachment an attachment's text carries the match (a statement PDF whose mail body says little)
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from apps.ask.planner import Plan
from apps.ask.textutil import DATE_RE, MONTHS, contains_word, find_values, normalize
from apps.ask.vocabulary import hint_words, phrase_in


def term_matches(folded_text: str, word: str) -> bool:
    return contains_word(folded_text, normalize(word))


WEIGHTS: dict[str, float] = {
    "lexical": 1.0,
    "semantic": 1.0,
    "provider": 0.3,
    "recency": 0.35,
    "entity": 1.5,
    "evidence": 0.6,
    "attachment": 0.2,
}
# How many more matching messages in one thread add to its score (a conversation about the subject).
THREAD_BONUS_PER_MESSAGE = 0.03
THREAD_BONUS_CAP = 0.12
RECENCY_HALF_LIFE_DAYS = 120.0
# Below this the best thread is not evidence, only "related mail".
MIN_EVIDENCE_SCORE = 0.45


@dataclass(slots=True)
class AttachmentText:
    id: int
    filename: str
    text: str


@dataclass(slots=True)
class Candidate:
    message_pk: int
    sources: set[str] = field(default_factory=set)
    keyword_rank: int | None = None
    keyword_lists: int = 0
    semantic_rank: int | None = None
    semantic_score: float = 0.0
    provider: bool = False
    hit_attachment_ids: set[int] = field(default_factory=set)
    # Filled in when the shortlist is read.
    thread_id: int | None = None
    rfc_message_id: str = ""
    subject: str = ""
    sender: str = ""
    from_address: str = ""
    date: dt.datetime | None = None
    body: str = ""
    attachments: list[AttachmentText] = field(default_factory=list)
    loaded: bool = False
    features: dict[str, float] = field(default_factory=dict)
    matched_fields: list[str] = field(default_factory=list)
    matched_attachment: AttachmentText | None = None
    score: float = 0.0

    def preliminary_score(self, keyword_lists: int, semantic_total: int) -> float:
        """Before any text is read: reciprocal ranks of the index hits (the shortlist order)."""
        score = 0.0
        if self.keyword_rank is not None:
            score += 1.0 / (10 + self.keyword_rank) + 0.02 * min(self.keyword_lists, keyword_lists)
        if self.semantic_rank is not None:
            score += 1.0 / (10 + self.semantic_rank)
        if self.provider:
            score += 0.05
        return score


_SERIES_NOISE = re.compile(r"\d+|[^\w\s]")


def series_key(candidate: Candidate) -> tuple[str, str]:
    words = [w for w in normalize(_SERIES_NOISE.sub(" ", candidate.subject)).split() if w not in MONTHS]
    words = [w for w in words if w not in {"re", "fw", "fwd", "aw", "wg"}]
    return candidate.from_address.lower(), " ".join(words[:6])


def _keyword_hits(plan: Plan, folded: str) -> int:
    return sum(1 for word in plan.keywords if term_matches(folded, word))


def _hint_hits(plan: Plan, folded: str) -> int:
    return sum(1 for word in hint_words(plan.hints) if phrase_in(folded, word))


def answer_evidence(plan: Plan, text: str) -> float:
    """The share of the asked kinds of value (date, time, amount, identifier) the text holds."""
    kinds = [k for k in plan.answer_types if k in ("date", "time", "amount", "identifier")]
    if not kinds:
        return 0.0
    return sum(1 for kind in kinds if find_values(kind, text[:20_000])) / len(kinds)


def score_candidates(plan: Plan, candidates: Iterable[Candidate], *, keyword_lists: int) -> list[Candidate]:
    """Compute every signal and the weighted score of the loaded candidates, best first."""
    loaded = [c for c in candidates if c.loaded]
    if not loaded:
        return []
    best_semantic = max((c.semantic_score for c in loaded), default=0.0) or 1.0
    newest = max((c.date for c in loaded if c.date), default=None)
    series: dict[tuple[str, str], list[Candidate]] = {}
    for candidate in loaded:
        series.setdefault(series_key(candidate), []).append(candidate)
    series_position: dict[int, int] = {}
    for members in series.values():
        members.sort(key=lambda c: c.date or dt.datetime.min.replace(tzinfo=dt.UTC), reverse=True)
        for position, member in enumerate(members):
            series_position[member.message_pk] = position
    entity_words = [normalize(e) for e in plan.entities]
    concept_total = len(plan.keywords)
    hinted = bool(plan.hints)
    for candidate in loaded:
        header = normalize(f"{candidate.sender} {candidate.from_address} {candidate.subject}")
        body = normalize(candidate.body)
        attachment_folded = [(a, normalize(a.text)) for a in candidate.attachments]
        everything = " ".join([header, body, *(text for _a, text in attachment_folded)])
        fields: list[str] = []
        # lexical
        rank_part = 0.0
        if candidate.keyword_rank is not None:
            rank_part = 1.0 / (1.0 + (candidate.keyword_rank - 1) / 5.0)
        coverage = 0.0
        if concept_total:
            coverage = _keyword_hits(plan, everything) / concept_total
        lexical = 0.4 * rank_part + 0.6 * min(1.0, coverage)
        if hinted and _hint_hits(plan, everything):
            lexical += 0.1  # a word from the vocabulary's hints (data/vocabulary.json): a small boost only
        # semantic
        semantic = 0.0
        if candidate.semantic_rank is not None:
            semantic = max(0.0, candidate.semantic_score) / best_semantic
            semantic = 0.7 * semantic + 0.3 / (1.0 + (candidate.semantic_rank - 1) / 5.0)
        # entity
        entity = 0.0
        if entity_words:
            found = 0.0
            sender_words = {normalize(s) for s in plan.sender_hints}
            sender_text = normalize(f"{candidate.sender} {candidate.from_address}")
            for word in entity_words:
                if word in sender_words:
                    # "what did Lena say": Lena's own mail, not mail that mentions her.
                    if term_matches(sender_text, word):
                        found += 1.0
                        fields.append("sender")
                    elif term_matches(everything, word):
                        found += 0.3
                elif term_matches(header, word):
                    found += 1.0
                    if "sender" not in fields and term_matches(
                        normalize(candidate.sender + " " + candidate.from_address), word
                    ):
                        fields.append("sender")
                elif term_matches(everything, word):
                    found += 0.8
            entity = found / len(entity_words)
        # recency
        recency = 0.0
        if candidate.date and newest:
            age_days = max(0.0, (newest - candidate.date).total_seconds() / 86400)
            recency = 0.5 * 0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS)
            recency += 0.5 * 0.5 ** series_position.get(candidate.message_pk, 0)
        hinted_range = plan.date_range
        if (
            not hinted_range.limits
            and candidate.date
            and (hinted_range.start is None or candidate.date >= hinted_range.start)
            and (hinted_range.end is None or candidate.date <= hinted_range.end)
            and hinted_range.label
        ):
            recency = 1.0  # a named period ("in March") is preferred, not a filter
        # evidence and attachments
        evidence = max(answer_evidence(plan, candidate.body), answer_evidence(plan, candidate.subject))
        attachment = 0.0
        best_attachment: tuple[int, AttachmentText] | None = None
        for item, text in attachment_folded:
            hits = _keyword_hits(plan, text) + sum(1 for w in entity_words if term_matches(text, w))
            if item.id in candidate.hit_attachment_ids:
                hits += 1
            found = answer_evidence(plan, item.text)
            if found:
                evidence = max(evidence, found)
                hits += 5  # the attachment holding the answer is the one to show
            if hits and (best_attachment is None or hits > best_attachment[0]):
                best_attachment = (hits, item)
        if best_attachment is not None:
            attachment = 1.0
            candidate.matched_attachment = best_attachment[1]
            candidate.sources.add("attachment_text")
            fields.append("attachment")
        if any(term_matches(normalize(candidate.subject), w) for w in plan.keywords):
            fields.append("subject")
        if _keyword_hits(plan, body):
            fields.append("body")
        candidate.features = {
            "lexical": round(lexical, 4),
            "semantic": round(semantic, 4),
            "provider": 1.0 if candidate.provider else 0.0,
            "recency": round(recency, 4),
            "entity": round(entity, 4),
            "evidence": evidence,
            "attachment": attachment,
        }
        candidate.matched_fields = fields
        candidate.score = sum(WEIGHTS[name] * value for name, value in candidate.features.items())
    return sorted(loaded, key=lambda c: (-c.score, -(c.date.timestamp() if c.date else 0), -c.message_pk))


@dataclass(slots=True)
class ThreadResult:
    key: int
    best: Candidate
    members: list[Candidate]
    score: float


def merge_threads(ranked: list[Candidate]) -> list[ThreadResult]:
    """One row per thread: its best message, plus a small bonus for more matching messages in it."""
    threads: dict[int, ThreadResult] = {}
    for candidate in ranked:
        key = candidate.thread_id if candidate.thread_id is not None else -candidate.message_pk
        current = threads.get(key)
        if current is None:
            threads[key] = ThreadResult(key=key, best=candidate, members=[candidate], score=candidate.score)
        else:
            current.members.append(candidate)
            for source in candidate.sources:
                current.best.sources.add(source)
    for thread in threads.values():
        extra = len([m for m in thread.members[1:] if m.score >= 0.5 * thread.best.score])
        thread.score = thread.best.score + min(THREAD_BONUS_CAP, THREAD_BONUS_PER_MESSAGE * extra)
    return sorted(threads.values(), key=lambda t: (-t.score, -t.best.message_pk))


def features_json(candidate: Candidate) -> dict[str, Any]:
    return dict(candidate.features)


__all__ = [
    "DATE_RE",
    "MIN_EVIDENCE_SCORE",
    "WEIGHTS",
    "AttachmentText",
    "Candidate",
    "ThreadResult",
    "merge_threads",
    "score_candidates",
]
