"""Step 1 of an Ask run: is this a question, a request for follow-up drafts, or an action Ask does not do?

Instructions are recognised by their English verbs (the product's UI language); anything else is a
question, so a question in another language is never refused. Pure functions, unit-tested."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from apps.ask.textutil import normalize
from apps.search.folding import STOPWORDS

IntentName = Literal["question", "follow_up_drafts", "unsupported"]

# Actions Ask will not do, by the verb that asks for them (checked at the start of an instruction).
UNSUPPORTED_ACTIONS: dict[str, str] = {
    "delete": "delete mail",
    "remove": "delete mail",
    "trash": "delete mail",
    "erase": "delete mail",
    "purge": "delete mail",
    "archive": "archive mail",
    "move": "move mail",
    "file": "move mail",
    "send": "send mail",
    "forward": "forward mail",
    "reply": "send replies",
    "respond": "send replies",
    "mark": "change read/done marks",
    "flag": "change flags",
    "star": "change flags",
    "label": "change labels",
    "tag": "change labels",
    "unsubscribe": "unsubscribe you from lists",
    "block": "block senders",
    "create": "create rules or filters",
    "add": "create rules or filters",
    "set": "create rules or filters",
    "empty": "delete mail",
    "clean": "delete mail",
}
RULE_WORDS = ("rule", "filter", "automation", "auto-reply", "autoreply", "out of office")
POLITE_PREFIX = re.compile(
    r"^(?:please|pls|kindly|hey|hi|ok|okay|now|go ahead and|can you|could you|would you|will you|i want you to|"
    r"i'd like you to|i need you to)\b[\s,]*",
    re.IGNORECASE,
)
DRAFT_WORDS = ("draft", "write", "prepare", "compose")
FOLLOW_UP_WORDS = ("follow-up", "follow up", "followup", "nudge", "reminder", "chase")
NO_REPLY_PATTERNS = re.compile(
    r"(hasn'?t|have ?n[o']t|did ?n[o']t|not yet|never|no one|nobody|has not|have not)\s+(yet\s+)?"
    r"(replied|responded|answered|gotten back|got back|written back)",
    re.IGNORECASE,
)
DAYS_RE = re.compile(r"\b(\d{1,3})\s*(day|days|d|week|weeks)\b", re.IGNORECASE)


@dataclass(slots=True)
class DraftRequest:
    topic_terms: list[str]
    min_days: int


def classify_intent(question: str) -> tuple[IntentName, str]:
    """(intent, refusal text). Questions are the default; instructions are checked by their first verb."""
    text = " ".join(question.strip().split())
    lowered = text.lower()
    instruction = POLITE_PREFIX.sub("", lowered)
    instruction = POLITE_PREFIX.sub("", instruction)
    first = re.match(r"[\w'-]+", instruction)
    verb = first.group(0) if first else ""
    wants_draft = any(re.search(rf"\b{word}\b", lowered) for word in DRAFT_WORDS)
    if wants_draft and (any(word in lowered for word in FOLLOW_UP_WORDS) or NO_REPLY_PATTERNS.search(lowered)):
        if verb in ("send", "forward") or re.search(r"\band send\b|\bsend (it|them)\b", lowered):
            return "unsupported", "send mail"
        return "follow_up_drafts", ""
    if verb in UNSUPPORTED_ACTIONS:
        action = UNSUPPORTED_ACTIONS[verb]
        if verb in ("create", "add", "set") and not any(word in lowered for word in RULE_WORDS):
            return "question", ""
        if verb == "file" and not re.match(r"file\s+(all|every|the|these|this|those|my|them|it)\b", instruction):
            return "question", ""
        return "unsupported", action
    if any(word in lowered for word in RULE_WORDS) and re.search(r"\b(make|create|add|set up|setup)\b", lowered):
        return "unsupported", "create rules or filters"
    return "question", ""


def refusal_text(action: str) -> str:
    return (
        f"I can't {action} — Ask Inbox only reads your mail, answers questions about it and can prepare "
        "follow-up drafts for you to review. Nothing in your mailbox was changed."
    )


_TOPIC_WORD = re.compile(r"[\w][\w.&'@-]*[\w]|[\w]", re.UNICODE)


def _topic_words(question: str) -> list[str]:
    words: list[str] = []
    for word in _TOPIC_WORD.findall(question):
        folded = normalize(word)
        if len(folded) < 2 or folded in STOPWORDS or folded.isdigit() or "'" in folded:
            continue
        if folded not in words:
            words.append(folded)
    return words


def draft_request(question: str) -> DraftRequest:
    days_match = DAYS_RE.search(question)
    days = 3
    if days_match:
        days = int(days_match.group(1)) * (7 if days_match.group(2).lower().startswith("week") else 1)
    topic = [
        word
        for word in _topic_words(question)
        if word
        not in {
            "draft",
            "write",
            "prepare",
            "compose",
            "follow",
            "up",
            "followup",
            "everyone",
            "everybody",
            "anyone",
            "who",
            "hasn",
            "hasnt",
            "haven",
            "havent",
            "replied",
            "responded",
            "answered",
            "yet",
            "days",
            "day",
            "weeks",
            "week",
            "reply",
            "replies",
            "people",
            "nudge",
            "reminder",
        }
        and not word.isdigit()
        and not any(word in normalize(phrase).split() or word == normalize(phrase) for phrase in FOLLOW_UP_WORDS)
    ]
    return DraftRequest(topic_terms=topic, min_days=max(0, days))
