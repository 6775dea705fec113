"""Merge candidates per thread and rerank them. Every signal is a number in [0, 1]; the final score is the
weighted sum below. The weights live here and only here. They were fitted by coordinate descent on the 30
"used for tuning" questions of bench/ask.py, with the whole Enron corpus indexed and embedded (44,715 mails);
its 39 other questions were left out of the fit and are the measure (see the commit that set them).

Signals (per candidate message):
- keyword    the bm25 score the local full-text search gave it, relative to the best hit of the same query
             (the best over the keyword variants); the rank when no score is known
- coverage   how much of the question it contains, each word weighted by its rarity in the index (idf from
             the index's own document counts: "Enron" counts little in Enron's mail, "MLMG" a lot) — over
             the whole text (coverage), over what its sender wrote (own: subject and own text, not the quoted
             history, so the original beats the replies quoting it) and over the subject alone (subject);
             plus a small boost for a word of the optional vocabulary hints (data/vocabulary.json); coverage
             and own fall with the square root of a text longer than LENGTH_PIVOT characters
- day        the text names the day the question names ("the meeting on January 23" finds "Jan. 23rd",
             "1/23/02", "23 Ocak"): mail about that day, whenever it was sent. Weight 1.0 as for entity,
             set a priori, not fitted; measured: the 69 questions MRR 0.786 -> 0.797, the fresh 30
             0.661 -> 0.683, the 50 search questions unchanged
- semantic   cosine similarity of the question to its best chunk, relative to the best candidate, scored
             exactly for every shortlisted mail (retrieval.shortlist_similarities: a mail found by its words
             only counted as 0 before); plus a share for its rank when the semantic search found it
- hybrid     its rank in the search page's own (hybrid: bm25 fused with the semantic index) ranking of the
             question, (1 + HYBRID_K) / (HYBRID_K + rank); 0 when not in its top HYBRID_LIMIT
- provider   Gmail / Graph returned it for the provider query
- recency    1.0 for the newest mail of its series (same sender, same subject apart from numbers and month
             names: monthly statements, invoices), halving for each older one. "When do I have to pay" means
             the latest statement. A named period ("in March") sets it to 1.0 for mail from then.
- entity     the rarity-weighted share of the plan's entities (a bank, a company, jeff.skilling@…) found in
             the sender or subject (full credit) or in the body/attachments or the subject of its
             conversation (most credit: a reply need not repeat it). An answer about
             another bank is wrong, however similar the text.
- evidence   the share of the asked kinds of value (a date, a time, an amount, a phone or reference
             number) the text holds
- gist       how near its gist (subject + opening of its own words, or their continuation when that is
             nearer, apps/search/gist.py) is to the question, relative to the nearest of the shortlist:
             exp(GIST_SHARPNESS · (similarity - best)), 1.0 for the nearest; weight 4.0. It was the rank
             among the shortlist, which tells two near-identical monthly statements apart by a hair of
             similarity and outweighed recency once the weight grew. bench/ask_weights.py --sweep gist over
             239 labelled questions (six files), r@10 / MRR: the rank at 1.0 (before) 0.904 / 0.784 with openings
             only, 0.908 / 0.792 with continuations; this at 1.0 0.908 / 0.792, 3.0 0.912 / 0.802, 4.0 0.912 /
             0.809 (five files higher; the search questions, more keyword-like, 0.760 -> 0.746); weight 0
             0.916 / 0.780. bench/ask.py's 189 questions: 0.905 / 0.792 -> 0.910 / 0.825
- attachment an attachment's text carries the match (a statement PDF whose mail body says little)

Measured (bench/ask.py, Enron, keyword side only): the former weights (lexical rank + plain word coverage
1.0, entity 1.5, recency with age decay 0.35, evidence 0.6) ranked the answering mail in the top 10 for 0.67
of the 30 questions (MRR 0.53) where search's own ranking reached 0.87 (0.65): common capitalised words
("Houston") and any date in a mail outweighed the bm25 score.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from apps.ask.mailparts import own_text
from apps.ask.planner import Plan, content_keywords
from apps.ask.textutil import (
    DATE_RE,
    MONTHS,
    VALUE_KINDS,
    contains_word,
    day_pattern,
    find_values,
    has_value,
    normalize,
)
from apps.ask.vocabulary import hint_words, phrase_in


def term_matches(folded_text: str, word: str) -> bool:
    """The word in the text, or the word without its inner punctuation ("SCE&G" as "SCEG's" writes it) when
    that leaves three letters or more ("U.S." is not "us")."""
    folded = normalize(word)
    if contains_word(folded_text, folded):
        return True
    joined = "".join(ch for ch in folded if ch.isalnum() or ch == " ")
    return joined != folded and len(joined) >= 3 and contains_word(folded_text, joined)


WEIGHTS: dict[str, float] = {
    "keyword": 0.5,
    "coverage": 1.0,
    "own": 3.0,
    "subject": 0.0,
    "day": 1.0,
    "semantic": 1.0,
    "hybrid": 1.0,
    "provider": 0.3,
    "recency": 0.5,
    "entity": 1.0,
    "evidence": 0.1,
    "attachment": 0.2,
    "gist": 4.0,
}
GIST_SHORTLIST = 1.0  # the weight of the gist rank in the shortlist's order (preliminary_score)
GIST_SHARPNESS = 20.0  # gist = exp(SHARPNESS · (its gist similarity - the best one of the shortlist))
HYBRID_K = 10  # hybrid = (1 + K) / (K + rank): 1.0 for the search page's first hit, 0.55 for its tenth
HINT_BOOST = 0.05
# Coverage and own count fully up to this many characters of text, then fall with the square root of the
# length (length_factor). Measured with bench/ask_weights.py on 209 labelled Enron questions (five files):
# r@10 0.880 -> 0.895, MRR 0.747 -> 0.770 with a pivot of 1,000 (every file's MRR up); 3,000 gained less.
LENGTH_PIVOT = 1000
# The best thread is only "related mail" when it holds less than this share of the question's (rarity
# weighted) words and the semantic index did not find it either.
MIN_COVERAGE = 0.25
ENTITIES_FOUND = 0.8  # every named entity of the question found in the text (0.8 each) or as the sender (1.0)
# How many more matching messages in one thread add to its score (a conversation about the subject).
THREAD_BONUS_PER_MESSAGE = 0.03
THREAD_BONUS_CAP = 0.12
# The search page's best hits for the question that always stay among Ask's first rows (keep_search_hits).
SEARCH_FLOOR = 10
# ... unless the rerank scores them under this share of its best row. 0.2 and 0.3 measured the same as no
# threshold on the three Enron sets (own 69, fresh 30, search 50: r@10 0.899 / 0.800 / 0.900) with ten rows;
# 0.3 keeps the demo's flight question from listing six parcel notices (scored 0.17-0.25 of the best).
SEARCH_FLOOR_SHARE = 0.3
# The semantic index's first threads held among the first rows too (keep_search_hits). Measured with
# bench/ask_weights.py's replay on 179 labelled Enron questions (four files): holding its first 1, 2, 3, 4, 5
# threads took r@10 from 0.866 to 0.872, 0.877, 0.877, 0.883, 0.883 (MRR 0.753 -> 0.754), no file lower
# for 1-4; at 5 and 6 one file dropped. 3 keeps a margin from that edge.
SEMANTIC_HOLD = 3
# The first threads by gist similarity (apps/search/gist.py) held the same way, and the candidates read and
# reranked always include the first GIST_SHORTLIST_HOLD by gist (retrieval.CandidatePool.shortlist).
GIST_HOLD = 3
GIST_SHORTLIST_HOLD = 10


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
    keyword_score: float | None = None  # bm25 relative to the best hit of its query, best over the queries
    keyword_lists: int = 0
    semantic_rank: int | None = None
    semantic_score: float = 0.0
    gist_score: float | None = None  # similarity of the question to its gist (apps/search/gist.py); None: unknown
    gist_rank: int | None = None  # its rank by gist_score among all candidates of the run
    hybrid_rank: int | None = None  # rank in the search page's hybrid ranking of the question
    provider: bool = False
    hit_attachment_ids: set[int] = field(default_factory=set)
    copies: int = 0  # other copies of this mail the run found (retrieval.CandidatePool.collapse_copies)
    # Filled in when the shortlist is read.
    thread_id: int | None = None
    thread_subject: str = ""  # the conversation's subject (its first mail's): a reply may not repeat it
    rfc_message_id: str = ""
    subject: str = ""
    sender: str = ""
    from_address: str = ""
    date: dt.datetime | None = None
    body: str = ""
    attachments: list[AttachmentText] = field(default_factory=list)
    loaded: bool = False
    features: dict[str, float] = field(default_factory=dict)
    # A series member's score uses its series' best fuzzy features (FUZZY_FEATURES) instead of its own.
    series_features: dict[str, float] = field(default_factory=dict)
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
        if self.hybrid_rank is not None:
            score += 1.0 / (10 + self.hybrid_rank)
        if self.provider:
            score += 0.05
        if self.gist_rank is not None:
            score += GIST_SHORTLIST / (10 + self.gist_rank)
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
    """The share of the asked kinds of value (date, time, amount, phone, identifier) the text holds."""
    kinds = [k for k in plan.answer_types if k in VALUE_KINDS]
    if not kinds:
        return 0.0
    return sum(1 for kind in kinds if has_value(kind, text[:20_000])) / len(kinds)


def keyword_sets(plan: Plan) -> list[list[str]]:
    """The question's words, then each rewrite's (a language model's rewrite of the question into the
    mailbox's languages, see rewrite.py). Coverage is the best share over them, so a statement written in
    another language covers its rewrite as an English mail covers the English question."""
    sets = [[normalize(k) for k in plan.keywords]]
    for rewrite in plan.rewrites:
        words = content_keywords(rewrite)
        if words and words not in sets:
            sets.append(words)
    return sets


def _best_share(sets: list[list[str]], weights: dict[str, float], folded: str) -> float:
    return max(_weighted_share(words, weights, folded) for words in sets)


def _weighted_share(words: list[str], weights: dict[str, float], folded: str) -> float:
    total = sum(weights.get(word, 1.0) for word in words)
    if not total:
        return 0.0
    return sum(weights.get(word, 1.0) for word in words if term_matches(folded, word)) / total


def _keyword_part(candidate: Candidate) -> float:
    if candidate.keyword_score is not None:
        return max(0.0, min(1.0, candidate.keyword_score))
    if candidate.keyword_rank is not None:
        return 1.0 / (1.0 + (candidate.keyword_rank - 1) / 5.0)
    return 0.0


def length_factor(length: int) -> float:
    """sqrt(LENGTH_PIVOT / length) for a text longer than the pivot, else 1: a long newsletter holds some of
    almost any question's words, so its word coverage says less than a short mail's (bm25's length
    normalisation, for the coverage signals)."""
    return 1.0 if length <= LENGTH_PIVOT else math.sqrt(LENGTH_PIVOT / length)


def score_candidates(
    plan: Plan,
    candidates: Iterable[Candidate],
    *,
    keyword_lists: int,
    word_weights: dict[str, float] | None = None,
) -> list[Candidate]:
    """Compute every signal and the weighted score of the loaded candidates, best first. `word_weights`
    maps the plan's keywords and entities to their idf in the index (see word_rarity); 1.0 when unknown."""
    loaded = [c for c in candidates if c.loaded]
    if not loaded:
        return []
    weights = {normalize(word): value for word, value in (word_weights or {}).items()}
    best_semantic = max((c.semantic_score for c in loaded), default=0.0) or 1.0
    series: dict[tuple[str, str], list[Candidate]] = {}
    for candidate in loaded:
        series.setdefault(series_key(candidate), []).append(candidate)
    best_gist = max((c.gist_score for c in loaded if c.gist_score is not None), default=0.0)
    series_position: dict[int, int] = {}
    for members in series.values():
        members.sort(key=lambda c: c.date or dt.datetime.min.replace(tzinfo=dt.UTC), reverse=True)
        for position, member in enumerate(members):
            series_position[member.message_pk] = position
    entity_words = [normalize(e) for e in plan.entities]
    # The days the question names ("the meeting on January 23"): mail about that day says so in its text,
    # whenever it was sent (the date hint only prefers mail sent that day).
    days = [p for value in find_values("date", plan.question) if (p := day_pattern(value)) is not None]
    sets = keyword_sets(plan)
    keywords = sets[0]
    hinted = bool(plan.hints)
    for candidate in loaded:
        header = normalize(f"{candidate.sender} {candidate.from_address} {candidate.subject}")
        # A reply about "the schedule change" is about Istanbul when its conversation's subject names Istanbul.
        conversation = normalize(candidate.thread_subject) if candidate.thread_subject != candidate.subject else ""
        subject = normalize(candidate.subject)
        body = normalize(candidate.body)
        own_words = own_text(candidate.body)
        own = subject + " " + normalize(own_words)
        attachment_folded = [(a, normalize(a.text)) for a in candidate.attachments]
        everything = " ".join([header, body, *(text for _a, text in attachment_folded)])
        fields: list[str] = []
        coverage = _best_share(sets, weights, everything)
        if hinted and _hint_hits(plan, everything):
            coverage = min(1.0, coverage + HINT_BOOST)  # a word of the vocabulary's hints: a small boost only
        # semantic
        semantic = 0.7 * max(0.0, candidate.semantic_score) / best_semantic
        if candidate.semantic_rank is not None:
            semantic += 0.3 / (1.0 + (candidate.semantic_rank - 1) / 5.0)
        # entity
        entity = 0.0
        if entity_words:
            found = 0.0
            sender_words = {normalize(s) for s in plan.sender_hints}
            sender_text = normalize(f"{candidate.sender} {candidate.from_address}")
            for word in entity_words:
                weight = weights.get(word, 1.0)
                if word in sender_words:
                    # "what did Lena say": Lena's own mail, not mail that mentions her.
                    if term_matches(sender_text, word):
                        found += weight
                        fields.append("sender")
                    elif term_matches(everything, word):
                        found += 0.3 * weight
                elif term_matches(header, word):
                    found += weight
                    if "sender" not in fields and term_matches(sender_text, word):
                        fields.append("sender")
                elif term_matches(everything, word) or (conversation and term_matches(conversation, word)):
                    found += 0.8 * weight
            entity = found / (sum(weights.get(word, 1.0) for word in entity_words) or 1.0)
        # recency: the newest of its series; with a named period ("the bill for October", preferred, not a
        # filter) the member sent in it, and the others below it whatever their age.
        position = series_position.get(candidate.message_pk, 0)
        recency = 0.5**position if candidate.date else 0.0
        hinted_range = plan.date_range
        if hinted_range.label and not hinted_range.limits and candidate.date:
            inside = (hinted_range.start is None or candidate.date >= hinted_range.start) and (
                hinted_range.end is None or candidate.date <= hinted_range.end
            )
            recency = 1.0 if inside else 0.5 ** (position + 1)
        # evidence and attachments
        evidence = max(answer_evidence(plan, candidate.body), answer_evidence(plan, candidate.subject))
        attachment = 0.0
        best_attachment: tuple[int, AttachmentText] | None = None
        for item, text in attachment_folded:
            hits = _keyword_hits(plan, text) + sum(1 for w in entity_words if term_matches(text, w))
            if item.id in candidate.hit_attachment_ids:
                hits += 1
            found_values = answer_evidence(plan, item.text)
            if found_values:
                evidence = max(evidence, found_values)
                hits += 5  # the attachment holding the answer is the one to show
            if hits and (best_attachment is None or hits > best_attachment[0]):
                best_attachment = (hits, item)
        if best_attachment is not None:
            attachment = 1.0
            candidate.matched_attachment = best_attachment[1]
            candidate.sources.add("attachment_text")
            fields.append("attachment")
        if any(term_matches(subject, w) for w in keywords):
            fields.append("subject")
        if _keyword_hits(plan, body):
            fields.append("body")
        candidate.features = {
            "keyword": round(_keyword_part(candidate), 4),
            "coverage": round(coverage * length_factor(len(candidate.body)), 4),
            "own": round(_best_share(sets, weights, own) * length_factor(len(own_words)), 4),
            "subject": round(_best_share(sets, weights, subject), 4),
            "day": sum(1.0 for p in days if p.search(everything)) / len(days) if days else 0.0,
            "semantic": round(semantic, 4),
            "hybrid": round((1 + HYBRID_K) / (HYBRID_K + candidate.hybrid_rank), 4)
            if candidate.hybrid_rank is not None
            else 0.0,
            "provider": 1.0 if candidate.provider else 0.0,
            "recency": round(recency, 4),
            "entity": round(entity, 4),
            "evidence": evidence,
            "attachment": attachment,
            "gist": round(math.exp(GIST_SHARPNESS * (candidate.gist_score - best_gist)), 4)
            if candidate.gist_score is not None
            else 0.0,
        }
        candidate.matched_fields = fields
    shared = _series_fuzzy_features(series)
    for candidate in loaded:
        candidate.series_features = shared.get(candidate.message_pk, {})
        candidate.score = weighted_score(candidate, WEIGHTS)
    return sorted(loaded, key=lambda c: (-c.score, -(c.date.timestamp() if c.date else 0), -c.message_pk))


# Mail of one series (one sender, one subject template: monthly invoices, order confirmations) reads alike:
# how close each member's meaning is to the question differs by noise, which must not pick the member. Its
# members are scored with the series' best of these (their own values stay in `features`, as measured);
# words, values, dates and the day named still tell them apart, and recency (or the period the question
# names) decides between otherwise equal members.
FUZZY_FEATURES = ("semantic", "hybrid", "gist")


def _series_fuzzy_features(series: dict[tuple[str, str], list[Candidate]]) -> dict[int, dict[str, float]]:
    shared: dict[int, dict[str, float]] = {}
    for (_sender, template), members in series.items():
        if len(members) < 2 or not template:  # no subject words: one sender's unrelated mail, not a series
            continue
        if len({member.thread_id for member in members}) < len(members) or any(
            member.thread_subject not in ("", member.subject) for member in members
        ):
            continue  # a message and its replies are a conversation, not recurring mail

        best = {name: max(member.features.get(name, 0.0) for member in members) for name in FUZZY_FEATURES}
        for member in members:
            shared[member.message_pk] = best
    return shared


def weighted_score(candidate: Candidate, weights: dict[str, float]) -> float:
    scored = {**candidate.features, **candidate.series_features}
    return sum(weights.get(name, 0.0) * value for name, value in scored.items())


def is_weak(candidate: Candidate) -> bool:
    """Too little of the question in the text, the question's named entities not all in it (as the sender, or
    in the text), and the semantic index did not find it either. A mail from the very company the question
    names is not weak because its words are in another language than the question's."""
    return (
        candidate.semantic_rank is None
        and candidate.features.get("coverage", 0.0) < MIN_COVERAGE
        and candidate.features.get("entity", 0.0) < ENTITIES_FOUND
    )


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


def keep_search_hits(
    threads: list[ThreadResult],
    limit: int = SEARCH_FLOOR,
    min_share: float = SEARCH_FLOOR_SHARE,
    semantic: int = SEMANTIC_HOLD,
    gist: int | None = None,
) -> list[ThreadResult]:
    """The threads of the search page's own first `limit` rows for the question (its hybrid ranking, one row
    per thread) are all among Ask's first `limit` rows: the rerank orders them and may add its own finds,
    but never pushes one of search's out (fusion is never worse than its input) unless it scores under
    `min_share` of the best row: in a small mailbox search's first ten rows reach mail that only resembles
    the question (six parcel notices for a flight question). Then the semantic index's first `semantic`
    threads are held the same way: a mail that says what the question asks in other words shares few of
    its words, so the word signals rank it low, however close its meaning; and so are the first `gist`
    threads by gist similarity (GIST_HOLD, read at call time). Rows they displace move down, in order. The
    rerank's own best thread is never displaced: when search's first `limit` rows would take every place,
    the one of them lowest in search's order among those moved in yields its place to it (bench/ask.py over
    329 questions: r@10 0.951 → 0.954, MRR 0.864 → 0.869; it had hidden the mail the rerank scored best for
    two paraphrase questions)."""
    protected: set[int] = {id(threads[0])} if threads else set()
    held, _first = _hold(
        threads, lambda c: c.hybrid_rank, count=limit, limit=limit, min_share=min_share, protected=protected
    )
    if semantic > 0:
        held, first = _hold(held, lambda c: c.semantic_rank, count=semantic, limit=limit, min_share=min_share)
        # The gist's rows never displace the semantic index's first thread. (Protecting all three it holds
        # measured lower: bench/ask.py over 259 questions, r@10 0.931 → 0.915; its first alone: 0.948 → 0.951
        # over 329, no file lower.)
        protected |= first
    gist = GIST_HOLD if gist is None else gist
    if gist > 0:
        held, _first = _hold(
            held, lambda c: c.gist_rank, count=gist, limit=limit, min_share=min_share, protected=protected
        )
    return held


def _hold(
    threads: list[ThreadResult],
    rank_of: Callable[[Candidate], int | None],
    *,
    count: int,
    limit: int,
    min_share: float,
    protected: set[int] | None = None,
) -> tuple[list[ThreadResult], set[int]]:
    """The threads holding the first `count` ranks of a list (by `rank_of`, one row per thread) moved among
    the first `limit` rows, unless they score under `min_share` of the best row; the rows they displace are
    the lowest of the others, never a `protected` one (ids of threads an earlier hold keeps). Returns the
    threads and the id of the list's first thread when it is among the first `limit` rows now (else none)."""
    protected = protected or set()
    list_rank = {id(t): min(ranks) for t in threads if (ranks := [r for m in t.members if (r := rank_of(m))])}
    best = max((t.score for t in threads), default=0.0)
    in_list = sorted((t for t in threads if id(t) in list_rank), key=lambda t: list_rank[id(t)])[:count]
    holding = [t for t in in_list if t.score >= min_share * best]
    top = threads[:limit]
    # As many rows of the top as are missing, the lowest of those neither this list holds nor are protected.
    others = [t for t in top if t not in holding and id(t) not in protected]
    missing = [t for t in holding if t not in top][: len(others)]
    first = {id(t) for t in holding[:1] if t in top or t in missing}
    if not missing:
        return threads, first
    displaced = others[len(others) - len(missing) :]
    kept = [t for t in top if t not in displaced]
    rest = [t for t in threads[limit:] if t not in missing]
    return kept + missing + displaced + rest, first


def features_json(candidate: Candidate) -> dict[str, Any]:
    return dict(candidate.features)


__all__ = [
    "DATE_RE",
    "MIN_COVERAGE",
    "WEIGHTS",
    "AttachmentText",
    "Candidate",
    "ThreadResult",
    "is_weak",
    "keep_search_hits",
    "merge_threads",
    "score_candidates",
]
