"""What kind of request is this — chat, an instruction Ask does not carry out, follow-up drafts or a question —
decided by models, in any language (issue 35, item 2).

Without a language model the local embedder decides: a request takes the label of its nearest labelled
examples (apps/ask/data/intent_examples.json, English; the multilingual embedder carries them to other
languages). A request is read as something other than a question only when its nearest examples say so by a
clear margin over the nearest questions: misreading a question is worse than answering a "thanks" with a
search. With a language model configured, whatever the examples do not read as a plain question is confirmed
(or overruled) by the model, which also writes the reply to chat in the user's language.

The English verb rules of apps/ask/intent.py stay as the fast path for the product's own UI language; this
module is what other languages and everything those rules leave as the default question go through."""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from apps.ask.rewrite import _json_object
from apps.llm import LLMConfig, LLMError, chat
from apps.search.embedders import Embedder, embed_query_cached, get_embedder

logger = logging.getLogger(__name__)

EXAMPLES_PATH = Path(__file__).resolve().parent / "data" / "intent_examples.json"
INSTRUCTION = "instruction:"
# A kind other than "question" needs its nearest example this close (cosine) …
FLOOR = 0.4
# … and this much closer than the nearest question. Chosen on the 609 bench questions (none may turn into
# chat or an instruction: 0 do) and the six-language cases of tests/ask/test_intents.py (54 of 55), then
# checked on requests written afterwards (bench/ask_intents.py). Nearest single examples read better than
# the mean of two or three, or a logistic regression over the examples (measured: 48-53 of 55).
MARGIN = 0.01
ACTION_NEIGHBOURS = 2
ACTION_MARGIN = 0.01
GENERIC_ACTION = "change your mailbox"

CHAT_REPLY = "You're welcome — ask me anything about your mail or your library files."
GREETING_REPLY = "Hello! Ask me anything about your mail or your library files."


@dataclass(frozen=True, slots=True)
class Verdict:
    intent: str  # question | chat | unsupported | follow_up_drafts
    action: str = ""  # unsupported: the action refused ("delete mail")
    score: float = 0.0  # similarity of the nearest examples of the chosen label
    margin: float = 0.0  # how much closer than the nearest questions
    nearest: str = ""  # the closest example, for the step detail
    reply: str = ""  # chat: what to answer

    def as_json(self) -> dict[str, Any]:
        return {
            "intent": self.intent,
            "action": self.action,
            "score": round(self.score, 3),
            "margin": round(self.margin, 3),
            "nearest": self.nearest,
        }


@cache
def load_examples() -> dict[str, tuple[str, ...]]:
    data = json.loads(EXAMPLES_PATH.read_text(encoding="utf-8"))
    return {label: tuple(texts) for label, texts in data.items() if not label.startswith("_")}


class _ExampleMatrix:
    """The examples' embeddings under one embedder, computed once per process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[str, tuple[np.ndarray, list[str], list[str]]] = {}

    def get(self, embedder: Embedder) -> tuple[np.ndarray, list[str], list[str]]:
        with self._lock:
            found = self._by_key.get(embedder.key)
            if found is None:
                labels: list[str] = []
                texts: list[str] = []
                for label, examples in load_examples().items():
                    labels += [label] * len(examples)
                    texts += examples
                matrix = np.vstack([_unit(embedder.embed_query(text)) for text in texts])
                found = self._by_key[embedder.key] = (matrix, labels, texts)
            return found


_examples = _ExampleMatrix()


def _unit(vector: np.ndarray) -> np.ndarray:
    vector = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(vector)) or 1.0
    return vector / norm


def _family(label: str) -> str:
    """chat:thanks → chat, instruction:delete mail → unsupported, question → question."""
    family = label.split(":", 1)[0]
    return "unsupported" if family == INSTRUCTION.rstrip(":") else family


def classify_by_examples(question: str, embedder: Embedder | None = None) -> Verdict:
    """The request's kind by its nearest example of each kind (chat, instruction, drafts, question);
    "question" unless another kind's nearest example is close and clearly closer than the nearest question.
    An instruction's action is its nearest instruction example's."""
    embedder = embedder or get_embedder()
    matrix, labels, texts = _examples.get(embedder)
    scores = matrix @ _unit(embed_query_cached(embedder, question.strip()))
    best: dict[str, int] = {}
    for index, label in enumerate(labels):
        family = _family(label)
        if family not in best or scores[index] > scores[best[family]]:
            best[family] = index
    question_score = float(scores[best["question"]])
    family, index = max(((f, i) for f, i in best.items() if f != "question"), key=lambda fi: scores[fi[1]])
    score = float(scores[index])
    margin = score - question_score
    if score < FLOOR or margin < MARGIN:
        return Verdict("question", score=question_score, margin=-margin, nearest=texts[best["question"]])
    nearest = texts[index]
    if family == "chat":
        reply = CHAT_REPLY if labels[index] == "chat:thanks" else GREETING_REPLY
        return Verdict("chat", score=score, margin=margin, nearest=nearest, reply=reply)
    action = _action(scores, labels) if family == "unsupported" else ""
    return Verdict(family, action=action, score=score, margin=margin, nearest=nearest)


def _action(scores: np.ndarray, labels: list[str]) -> str:
    """The instruction's action: the one whose two nearest examples are nearest on average (a single
    example shares too much with its sender's name: "block all emails from …"); when two actions are about
    as near, the refusal names no action it cannot tell."""
    ranked = _ranked_actions(scores, labels)
    if len(ranked) > 1 and ranked[0][1] - ranked[1][1] < ACTION_MARGIN:
        return GENERIC_ACTION
    return ranked[0][0]


def _ranked_actions(scores: np.ndarray, labels: list[str]) -> list[tuple[str, float]]:
    per_action: dict[str, float] = {}
    for label in dict.fromkeys(labels):
        if label.startswith(INSTRUCTION):
            top = sorted(float(scores[i]) for i, name in enumerate(labels) if name == label)[-ACTION_NEIGHBOURS:]
            per_action[label.removeprefix(INSTRUCTION)] = sum(top) / len(top)
    return sorted(per_action.items(), key=lambda kv: kv[1], reverse=True)


def likely_actions(question: str, embedder: Embedder | None = None) -> list[str]:
    """The actions an instruction is about as near to as its nearest one (within ACTION_MARGIN): the
    candidates when the refusal could name none ("Verschiebe …" sits between move and archive)."""
    embedder = embedder or get_embedder()
    matrix, labels, _ = _examples.get(embedder)
    ranked = _ranked_actions(matrix @ _unit(embed_query_cached(embedder, question.strip())), labels)
    return [action for action, score in ranked if ranked[0][1] - score < ACTION_MARGIN]


# ------------------------------------------------------------------------------------------ with a model
INTENT_PROMPT = """You read one message a user sent to an assistant over their e-mail and say
what kind of request this is. Reply with JSON only, one of:
{"intent": "question"} - a question about their mail or files, or a request to find, show or summarize something
{"intent": "chat", "reply": "..."} - thanks, a greeting or small talk; "reply" is a short friendly answer (one
  sentence) in the user's language that offers help with their mail
{"intent": "instruction", "action": "..."} - an order to change something: action is one of delete, archive,
  move, send, forward, reply, mark, flag, label, unsubscribe, block, rule
{"intent": "follow_up_drafts"} - write reminder or follow-up drafts to people who have not replied"""

MODEL_ACTIONS = {
    "delete": "delete mail",
    "archive": "archive mail",
    "move": "move mail",
    "send": "send mail",
    "forward": "forward mail",
    "reply": "send replies",
    "mark": "change read/done marks",
    "flag": "change flags",
    "label": "change labels",
    "unsubscribe": "unsubscribe you from lists",
    "block": "block senders",
    "rule": "create rules or filters",
}


def classify_with_model(config: LLMConfig, question: str) -> tuple[Verdict | None, str]:
    """(verdict, error): the model's reading, or None and why it could not be used."""
    messages = [{"role": "system", "content": INTENT_PROMPT}, {"role": "user", "content": question}]
    try:
        result = chat(config, messages, temperature=0, max_tokens=120)
        data = _json_object(result.content or "")
        intent = str(data.get("intent") or "")
    except (LLMError, ValueError, TypeError) as exc:
        logger.info("ask: the model could not read the request's intent: %s", exc)
        return None, (str(exc) or type(exc).__name__)[:300]
    if intent == "question":
        return Verdict("question"), ""
    if intent == "follow_up_drafts":
        return Verdict("follow_up_drafts"), ""
    if intent == "chat":
        reply = " ".join(str(data.get("reply") or "").split())[:400]
        return Verdict("chat", reply=reply or CHAT_REPLY), ""
    if intent == "instruction":
        action = MODEL_ACTIONS.get(str(data.get("action") or "").strip().lower())
        if action:
            return Verdict("unsupported", action=action), ""
        return None, f"the model named no known action ({str(data.get('action'))[:40]!r})"
    return None, f"the model answered an unknown intent ({intent[:40]!r})"


def understand(question: str, llm: LLMConfig | None) -> tuple[Verdict, dict[str, Any]]:
    """(verdict, report) of a request the English rules left as the default question: the examples' reading,
    confirmed or overruled by the model when one is configured and the examples do not say "question"."""
    report: dict[str, Any] = {}
    try:
        verdict = classify_by_examples(question)
    except Exception as exc:  # no local embedder: the request stays a question
        logger.info("ask: no local embedder for intents: %s", exc)
        report["examples_error"] = (str(exc) or type(exc).__name__)[:300]
        verdict = Verdict("question")
    report["examples"] = verdict.as_json()
    if llm is None or verdict.intent == "question":
        return verdict, report
    by_model, error = classify_with_model(llm, question)
    if by_model is None:
        report["model_error"] = error
        return verdict, report
    report["model"] = by_model.as_json()
    return by_model, report
