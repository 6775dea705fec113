"""Topic boundaries (issue 35, item 1): does a new question continue the previous turn or start a new topic?

A configured model decides when there is one; otherwise language-neutral cues: the previous turn's values
or names reappearing, a very short elliptical question, and the local embedder — whether the question read
together with the previous one still means the previous one, or is itself similar to the previous turn
(question and answer). No word lists. A question more than
WINDOW after the previous turn always starts a new topic (the seed's 30-minute conversation window)."""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from apps.llm import LLMConfig, LLMError, chat
from apps.search.embedders import embed_query_cached, get_embedder

logger = logging.getLogger(__name__)

WINDOW = dt.timedelta(minutes=30)
SHORT_QUESTION_WORDS = 3
SIMILAR_ENOUGH = 0.6
# Read together with the previous question, a follow-up ("and the one before that?") means what the previous
# question meant: the pair's embedding stays near the previous question and far from the new one alone. An
# unrelated question pulls the pair toward itself. The margin, measured on the local embedder over related
# and unrelated pairs in six languages (tests/ask/test_topics.py): follow-ups 0.44 to 0.82, new topics ≤ 0.32.
LEANS_ON_PREVIOUS = 0.4

_WORD = re.compile(r"\w+", re.UNICODE)

Similarity = Callable[[str, str], float]


@dataclass(frozen=True)
class PreviousExchange:
    question: str
    answer: str
    at: dt.datetime | None


@dataclass(frozen=True)
class TopicDecision:
    continues: bool
    reason: str
    similarity: float | None = None


ModelJudge = Callable[[str, PreviousExchange], bool | None]


def _marked_tokens(text: str, *, skip_first: bool) -> set[str]:
    """Values and names: tokens with a digit, or capitalised tokens that do not start the sentence."""
    found: set[str] = set()
    for sentence in re.split(r"[.!?¿¡]\s*", text):
        words = _WORD.findall(sentence)
        for index, word in enumerate(words):
            if any(ch.isdigit() for ch in word) or (
                word[:1].isupper() and len(word) > 2 and not (skip_first and index == 0)
            ):
                found.add(word.casefold())
    return found


def shared_marks(question: str, previous: PreviousExchange) -> set[str]:
    mine = _marked_tokens(question, skip_first=True)
    theirs = _marked_tokens(previous.question, skip_first=True) | _marked_tokens(previous.answer, skip_first=True)
    return mine & theirs


def judge_topic(
    question: str,
    previous: PreviousExchange | None,
    *,
    now: dt.datetime,
    similarity: Similarity | None = None,
    model: ModelJudge | None = None,
) -> TopicDecision:
    if previous is None:
        return TopicDecision(False, "no previous turn")
    if previous.at is not None and now - previous.at > WINDOW:
        return TopicDecision(False, "outside the 30-minute conversation window")
    if model is not None:
        verdict = model(question, previous)
        if verdict is not None:
            return TopicDecision(verdict, "model: refers to the previous turn" if verdict else "model: new topic")
    marks = shared_marks(question, previous)
    if marks:
        return TopicDecision(True, "the previous turn's values reappear: " + ", ".join(sorted(marks)))
    if len(_WORD.findall(question)) <= SHORT_QUESTION_WORDS:
        return TopicDecision(True, "short elliptical question")
    if similarity is not None:
        together = f"{previous.question} {question}"
        leans = similarity(together, previous.question) - similarity(together, question)
        if leans >= LEANS_ON_PREVIOUS:
            return TopicDecision(True, f"read with the previous question, it means that one ({leans:.2f})", leans)
        score = similarity(question, f"{previous.question}\n{previous.answer}")
        if score >= SIMILAR_ENOUGH:
            return TopicDecision(True, f"similar to the previous turn ({score:.2f})", score)
        return TopicDecision(False, f"unrelated to the previous turn ({score:.2f})", score)
    return TopicDecision(False, "no sign of a reference to the previous turn")


def embedder_similarity(embedder: Any) -> Similarity:
    def score(a: str, b: str) -> float:
        va = embed_query_cached(embedder, a)
        vb = embed_query_cached(embedder, b)
        denom = float(np.linalg.norm(va) * np.linalg.norm(vb)) or 1.0
        return float(np.dot(va, vb)) / denom

    return score


def local_similarity() -> Similarity | None:
    try:
        return embedder_similarity(get_embedder())
    except Exception:
        logger.info("ask: no local embedder for topic boundaries", exc_info=True)
        return None


TOPIC_PROMPT = (
    "You decide whether a user's new question to a mail assistant refers to the previous exchange "
    "(a follow-up: it uses a pronoun, an ellipsis, continues with 'and ...', corrects it, or asks about the "
    "same thing) or starts a new, unrelated topic. Any language. Reply with JSON only: "
    '{"follow_up": true} or {"follow_up": false}.'
)


def model_judge(config: LLMConfig) -> ModelJudge:
    def judge(question: str, previous: PreviousExchange) -> bool | None:
        messages = [
            {"role": "system", "content": TOPIC_PROMPT},
            {
                "role": "user",
                "content": f"Previous question: {previous.question}\nPrevious answer: {previous.answer[:800]}\n\n"
                f"New question: {question}",
            },
        ]
        try:
            result = chat(config, messages, temperature=0, max_tokens=30)
            match = re.search(r"\{.*\}", result.content or "", re.S)
            data = json.loads(match.group(0)) if match else {}
        except (LLMError, ValueError) as exc:
            logger.info("ask: topic judgement by the model failed: %s", exc)
            return None
        value = data.get("follow_up")
        return value if isinstance(value, bool) else None

    return judge
