"""The answer: with a language model, a short answer grounded in numbered evidence; without one, the best
evidence sentences with the dates and amounts they contain. Either way a citation check verifies that
every date and amount in the answer appears in the evidence it cites."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

from apps.ask.planner import CONCEPTS_BY_NAME, Plan, term_matches
from apps.ask.textutil import Passage, find_amounts, find_dates, normalize, passages, value_key
from mailagent.llm import LLMConfig, LLMError, chat

logger = logging.getLogger(__name__)

MAX_PASSAGES_PER_EVIDENCE = 4
LLM_EVIDENCE_ITEMS = 5
CITATION_RE = re.compile(r"\[(\d{1,2})\]")
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


@dataclass(slots=True)
class AnswerResult:
    text: str
    mode: str  # llm | extractive | no_evidence
    citation_check: dict[str, Any]
    llm: dict[str, Any] = field(default_factory=dict)


def score_passage(plan: Plan, passage: Passage) -> float:
    folded = normalize(passage.text)
    score = 0.0
    for name in plan.concepts:
        if any(term_matches(folded, term) for term in CONCEPTS_BY_NAME[name].terms):
            score += 1.0
    score += 0.5 * sum(1 for word in plan.keywords if term_matches(folded, word))
    score += 0.7 * sum(1 for entity in plan.entities if term_matches(folded, normalize(entity)))
    if plan.answer_type == "date" and find_dates(passage.text):
        score += 2.0
        if "due_date" in plan.concepts and any(
            term_matches(folded, term) for term in CONCEPTS_BY_NAME["due_date"].terms
        ):
            score += 1.5
    elif plan.answer_type == "amount" and find_amounts(passage.text):
        score += 2.0
    if passage.source == "subject":
        score -= 0.5  # the subject is shown anyway
    if len(passage.text) < 15 and not (find_dates(passage.text) or find_amounts(passage.text)):
        score -= 1.0  # a greeting or a signature line, not an answer
    return score


def best_passages(plan: Plan, candidates: list[Passage], limit: int = MAX_PASSAGES_PER_EVIDENCE) -> list[Passage]:
    scored = [(score_passage(plan, p), index, p) for index, p in enumerate(candidates)]
    scored = [item for item in scored if item[0] > 0]
    scored.sort(key=lambda item: (-item[0], item[1]))
    chosen: list[Passage] = []
    seen: set[str] = set()
    for _score, _index, passage in scored:
        key = normalize(passage.text)
        if key in seen:
            continue
        seen.add(key)
        chosen.append(passage)
        if len(chosen) >= limit:
            break
    return chosen


def collect_passages(*, subject: str, body: str, attachments: list[tuple[str, str]]) -> list[Passage]:
    found = [Passage(subject, "subject")] if subject else []
    found += passages(body, source="body")
    for filename, text in attachments:
        found += passages(text, source="attachment", attachment=filename)
    return found


# --- citation check -----------------------------------------------------------------------------------


def citation_check(answer: str, evidence: list[EvidenceText]) -> dict[str, Any]:
    """Every date and amount in the answer must appear in the evidence its sentence cites (or, for a
    sentence without a citation, in any cited evidence of the answer)."""
    by_number = {item.number: item for item in evidence}
    all_cited = [int(n) for n in CITATION_RE.findall(answer)]
    invalid = sorted({n for n in all_cited if n not in by_number})
    value_keys: dict[int, set[str]] = {}
    for item in evidence:
        text = f"{item.subject}\n{item.date_label}\n{item.full_text}"
        value_keys[item.number] = {value_key(v) for v in [*find_dates(text), *find_amounts(text)] if value_key(v)}
    unsupported: list[str] = []
    checked = 0
    for sentence in SENTENCE_RE.split(answer):
        cited = [int(n) for n in CITATION_RE.findall(sentence) if int(n) in by_number]
        scope = cited or [n for n in all_cited if n in by_number] or list(by_number)
        clean = CITATION_RE.sub(" ", sentence)
        for value in [*find_dates(clean), *find_amounts(clean)]:
            key = value_key(value)
            if not key:
                continue
            checked += 1
            if not any(key in value_keys.get(number, set()) for number in scope):
                unsupported.append(value)
    return {
        "ok": not unsupported and not invalid,
        "checked_values": checked,
        "unsupported": unsupported,
        "invalid_citations": invalid,
        "cited": sorted(set(all_cited)),
    }


# --- extractive -----------------------------------------------------------------------------------------


def extractive_answer(plan: Plan, evidence: list[EvidenceText]) -> str:
    top = evidence[0]
    lines: list[str] = []
    where = f"“{top.subject or '(no subject)'}” from {top.sender or 'unknown sender'}"
    if top.date_label:
        where += f", {top.date_label}"
    if top.attachment:
        where += f" (attachment {top.attachment})"
    body_passages = [p for p in top.passages if p.source != "subject"]
    chosen = body_passages[:2] if plan.answer_type != "any" else body_passages[:3]
    if not chosen:
        return f"The best match is {where} [1], but none of its sentences answers the question directly."
    lines.append(f"From {where}:")
    for passage in chosen:
        lines.append(f"• {passage.text} [1]")
    second = [p for p in evidence[1].passages if p.source != "subject"] if len(evidence) > 1 else []
    if second and plan.answer_type == "any":
        lines.append(f"• {second[0].text} [2]")
    dates: list[str] = []
    amounts: list[str] = []
    for passage in chosen:
        dates += [d for d in find_dates(passage.text) if d not in dates]
        amounts += [a for a in find_amounts(passage.text) if a not in amounts]
    facts = []
    if dates:
        facts.append("Dates: " + ", ".join(dates[:4]))
    if amounts:
        facts.append("Amounts: " + ", ".join(amounts[:4]))
    if facts:
        lines.append(" · ".join(facts) + " [1]")
    return "\n".join(lines)


def no_evidence_answer(plan: Plan, searched: list[str], reason: str) -> str:
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
