"""The answer with a language model: a short answer grounded in numbered evidence, and the citation check
that verifies every date, time, amount and identifier against the evidence its sentence cites. The
extractive answer (no model) lives in extractive.py."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

from apps.ask.textutil import Passage, find_amounts, find_dates, find_identifiers, find_times, passages, value_key
from apps.llm import LLMConfig, LLMError, chat

logger = logging.getLogger(__name__)

MAX_PASSAGES_PER_EVIDENCE = 4
LLM_EVIDENCE_ITEMS = 5
CITATION_RE = re.compile(r"\[(\d{1,2})\]")
# A quotation of the mail (the extractive answer quotes sentences in “…”) may hold its own "[10]" (a footnote,
# a list number): that is the mail's text, not a citation of evidence [10].
QUOTED_RE = re.compile(r"“[^”]*”")
SENTENCE_RE = re.compile(r"(?<=[.!?])\s+|\n+")

SYSTEM_PROMPT = (
    "You answer questions about the user's own mailbox. Use only the numbered evidence below; never invent "
    "facts. Answer in one to three short sentences in the language of the question. After every claim cite "
    "the evidence it comes from as [n]. Copy dates and amounts exactly as they are written in the evidence. "
    "If the evidence does not answer the question, say so plainly."
)


@dataclass(slots=True)
class EvidenceText:
    """One evidence item as the answer step sees it (number = its [n] in the answer)."""

    number: int
    subject: str
    sender: str
    date_label: str
    attachment: str
    full_text: str
    passages: list[Passage] = field(default_factory=list)
    # The thread's messages that were read (best first), for the extractive answer: (label, date, own
    # text passages) per message.
    members: list[EvidenceMessage] = field(default_factory=list)
    score: float = 0.0


@dataclass(slots=True)
class EvidenceMessage:
    subject: str
    sender: str
    date_label: str
    timestamp: float
    passages: list[Passage]


@dataclass(slots=True)
class AnswerResult:
    text: str
    mode: str  # llm | extractive | no_evidence
    citation_check: dict[str, Any]
    llm: dict[str, Any] = field(default_factory=dict)


def collect_passages(
    *, subject: str, body: str, attachments: list[tuple[str, str]], closing: str = "", forwarded: str = ""
) -> list[Passage]:
    found = [Passage(subject, "subject")] if subject else []
    found += passages(body, source="body")
    found += passages(closing, source="closing")
    found += passages(forwarded, source="forwarded")
    for filename, text in attachments:
        found += passages(text, source="attachment", attachment=filename)
    return found


# --- citation check -----------------------------------------------------------------------------------


def _checked_values(text: str) -> list[str]:
    return [value for _, value in _kinded_values(text)]


def _kinded_values(text: str) -> list[tuple[str, str]]:
    """(kind, value) of the dates, amounts, times and reference numbers in `text` (kinds as in the planner's
    answer_types)."""
    return [
        *(("date", v) for v in find_dates(text)),
        *(("amount", v) for v in find_amounts(text)),
        *(("time", v) for v in find_times(text)),
        *(("identifier", v) for v in find_identifiers(text)),
    ]


def _citations(text: str) -> list[int]:
    return [int(n) for n in CITATION_RE.findall(QUOTED_RE.sub(" ", text))]


def citation_check(answer: str, evidence: list[EvidenceText]) -> dict[str, Any]:
    """Every date and amount in the answer must appear in the evidence its sentence cites (or, for a
    sentence without a citation, in any cited evidence of the answer)."""
    by_number = {item.number: item for item in evidence}
    all_cited = _citations(answer)
    invalid = sorted({n for n in all_cited if n not in by_number})
    value_keys: dict[int, set[str]] = {}
    for item in evidence:
        # the headers of the thread's messages too: the answer names the message it quotes by subject and date
        # Each read separately: a subject ending in a day without a year ("Week of October 22nd") must not
        # join the next line's date ("2001-10-17") into one value.
        parts = [item.subject, item.date_label, *(f for m in item.members for f in (m.subject, m.date_label))]
        value_keys[item.number] = {
            key for part in [*parts, item.full_text] for v in _checked_values(part) if (key := value_key(v))
        }
    unsupported: list[str] = []
    found_kinds: set[str] = set()
    checked = 0
    for sentence in SENTENCE_RE.split(answer):
        cited = [n for n in _citations(sentence) if n in by_number]
        scope = cited or [n for n in all_cited if n in by_number] or list(by_number)
        clean = CITATION_RE.sub(" ", sentence)
        for kind, value in _kinded_values(clean):
            key = value_key(value)
            if not key:
                continue
            checked += 1
            if not any(key in value_keys.get(number, set()) for number in scope):
                unsupported.append(value)
            else:
                found_kinds.add(kind)
    return {
        "ok": not unsupported and not invalid,
        "checked_values": checked,
        "found_values": checked - len(unsupported),
        "found_kinds": sorted(found_kinds),
        "unsupported": unsupported,
        "invalid_citations": invalid,
        "cited": sorted(set(all_cited)),
    }


def no_evidence_answer(searched: list[str], reason: str) -> str:
    return (
        f"I could not find reliable evidence for this in your mail ({reason}). "
        f"I searched: {'; '.join(searched)}. The closest matches are listed below as related mail."
    )


# --- language model ------------------------------------------------------------------------------------


def evidence_prompt(question: str, evidence: list[EvidenceText]) -> str:
    blocks = [f"Question: {question}", "", "Evidence:"]
    for item in evidence[:LLM_EVIDENCE_ITEMS]:
        blocks.append(f"[{item.number}] Subject: {item.subject or '(no subject)'}")
        blocks.append(f"From: {item.sender}")
        if item.date_label:
            blocks.append(f"Date: {item.date_label}")
        if item.attachment:
            blocks.append(f"Attachment: {item.attachment}")
        blocks.append("Excerpts:")
        for passage in item.passages:
            blocks.append(f"- {passage.text}")
        blocks.append("")
    return "\n".join(blocks)


def llm_answer(
    config: LLMConfig,
    *,
    question: str,
    evidence: list[EvidenceText],
    history: list[tuple[str, str]],
) -> AnswerResult | None:
    """A grounded answer, regenerated once when the citation check fails; None when the model cannot
    produce a checked answer (the caller then answers extractively)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
    for previous_question, previous_answer in history[-3:]:
        messages.append({"role": "user", "content": previous_question})
        messages.append({"role": "assistant", "content": previous_answer})
    messages.append({"role": "user", "content": evidence_prompt(question, evidence)})
    info: dict[str, Any] = {"model": config.model, "attempts": 0}
    for attempt in range(2):
        info["attempts"] = attempt + 1
        try:
            result = chat(config, messages, temperature=0)
        except LLMError as exc:
            logger.warning("ask: the language model failed: %s", exc)
            info["error"] = str(exc)[:500]
            return AnswerResult(text="", mode="llm_failed", citation_check={}, llm=info)
        text = (result.content or "").strip()
        check = citation_check(text, evidence[:LLM_EVIDENCE_ITEMS])
        if text and check["ok"] and check["cited"]:
            check["regenerated"] = attempt > 0
            return AnswerResult(text=text, mode="llm", citation_check=check, llm=info)
        info.setdefault("rejected", []).append({"answer": text[:1000], "check": check})
        problems = ", ".join(check["unsupported"]) or "no citations"
        messages.append({"role": "assistant", "content": text})
        messages.append(
            {
                "role": "user",
                "content": (
                    f"Your answer contains values that are not in the cited evidence ({problems}) or cites "
                    "nothing. Answer again using only values written in the evidence, citing [n] after each claim."
                ),
            }
        )
    return AnswerResult(text="", mode="llm_failed", citation_check=info["rejected"][-1]["check"], llm=info)
