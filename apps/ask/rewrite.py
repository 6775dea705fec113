"""With a language model (only then): the question rewritten into keyword queries in the mailbox's own
languages, and the best candidates reranked by the model reading them.

The mailbox's languages are not guessed from a word list: the model sees a sample of the owner's recent
subjects and writes queries in the languages it finds there (a Turkish bank statement for an English
question). Both calls are best effort: a failure or an unreadable reply is recorded and the run goes on
with the local ranking.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from apps.accounts.models import MailAccount, Message
from apps.ask.mailparts import own_text
from apps.ask.rerank import ThreadResult
from apps.llm import LLMConfig, LLMError, chat

logger = logging.getLogger(__name__)

SUBJECT_SAMPLE = 30
SCAN_MESSAGES = 2000
MAX_REWRITES = 4
RERANK_TOP = 10
EXCERPT_CHARS = 500
# A thread the model puts first gets this much added to its score, the next ones less (1/position).
LLM_RERANK_WEIGHT = 1.5

REWRITE_PROMPT = """You turn a question about someone's e-mail into full-text search queries.
Reply with JSON only: {"queries": ["...", "..."]}.
Write at most 4 queries of 2-6 words each: the words the answering e-mail itself would contain (names,
the thing asked about, synonyms), one query per language that the mailbox's subjects below are written in
(always one in the question's own language). No operators, no quotes, no explanations."""

RERANK_PROMPT = """You rank e-mails by how well they answer a question about the user's mailbox.
Reply with JSON only: {"ranking": [n, n, ...]} listing the numbers of the e-mails that help answer the
question, best first. Leave out e-mails that do not help."""


@dataclass(slots=True)
class LLMRerankReport:
    used: bool = False
    order: list[int] = field(default_factory=list)
    error: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"used": self.used, "order": self.order, "error": self.error}


def recent_subjects(accounts: list[MailAccount], limit: int = SUBJECT_SAMPLE) -> list[str]:
    """One recent subject per sender domain (the languages a mailbox is written in show across its
    senders, not in the last few newsletters), newest first."""
    rows = (
        Message.objects.filter(account__in=accounts)
        .exclude(subject="")
        .order_by("-date")
        .values_list("subject", "from_address")[:SCAN_MESSAGES]
    )
    seen: set[str] = set()
    subjects: list[str] = []
    for subject, address in rows:
        domain = (address or "").rpartition("@")[2].lower()
        text = " ".join(subject.split())[:120]
        if domain in seen or not text or text in subjects:
            continue
        seen.add(domain)
        subjects.append(text)
        if len(subjects) >= limit:
            break
    return subjects


def _json_object(text: str) -> dict[str, Any]:
    """The first JSON object in a reply (models wrap it in prose or code fences now and then)."""
    match = re.search(r"\{.*\}", text or "", re.DOTALL)
    if not match:
        raise ValueError("the reply holds no JSON object")
    value = json.loads(match.group(0))
    if not isinstance(value, dict):
        raise ValueError("the reply's JSON is not an object")
    return value


def rewrite_question(config: LLMConfig, question: str, subjects: list[str]) -> tuple[list[str], str]:
    """(queries, error): keyword queries in the mailbox's languages; ([], why) when the model failed."""
    sample = "\n".join(f"- {s}" for s in subjects) or "(no mail yet)"
    messages = [
        {"role": "system", "content": REWRITE_PROMPT},
        {"role": "user", "content": f"Subjects in the mailbox:\n{sample}\n\nQuestion: {question}"},
    ]
    try:
        result = chat(config, messages, temperature=0, max_tokens=300)
        data = _json_object(result.content or "")
    except (LLMError, ValueError) as exc:
        logger.info("ask: query rewriting failed: %s", exc)
        return [], str(exc)[:300]
    queries = data.get("queries")
    if not isinstance(queries, list):
        return [], "the reply has no list of queries"
    cleaned: list[str] = []
    for query in queries:
        text = " ".join(str(query).replace('"', " ").split())[:200]
        if text and text not in cleaned:
            cleaned.append(text)
    return cleaned[:MAX_REWRITES], ""


def _excerpt(thread: ThreadResult) -> str:
    best = thread.best
    date = f"{best.date:%Y-%m-%d}" if best.date else ""
    text = " ".join(own_text(best.body).split())[:EXCERPT_CHARS]
    if not text and best.attachments:
        text = " ".join(best.attachments[0].text.split())[:EXCERPT_CHARS]
    return f"From: {best.sender}\nDate: {date}\nSubject: {best.subject}\n{text}"


def llm_rerank(config: LLMConfig, question: str, threads: list[ThreadResult]) -> LLMRerankReport:
    """Ask the model to order the top RERANK_TOP threads; the threads it names first gain score, the
    local order decides among the rest. Reorders `threads` in place."""
    report = LLMRerankReport()
    top = threads[:RERANK_TOP]
    if len(top) < 2:
        return report
    listing = "\n\n".join(f"[{n}]\n{_excerpt(thread)}" for n, thread in enumerate(top, start=1))
    messages = [
        {"role": "system", "content": RERANK_PROMPT},
        {"role": "user", "content": f"Question: {question}\n\nE-mails:\n\n{listing}"},
    ]
    try:
        result = chat(config, messages, temperature=0, max_tokens=200)
        ranking = _json_object(result.content or "").get("ranking")
        if not isinstance(ranking, list):
            raise ValueError("the reply has no ranking list")
        order = [int(str(n).strip("[] ")) for n in ranking if str(n).strip("[] ").isdigit()]
    except (LLMError, ValueError, TypeError) as exc:
        logger.info("ask: LLM reranking failed: %s", exc)
        report.error = str(exc)[:300]
        return report
    order = list(dict.fromkeys(n for n in order if 1 <= n <= len(top)))
    for position, number in enumerate(order, start=1):
        top[number - 1].score += LLM_RERANK_WEIGHT / position
    threads.sort(key=lambda t: (-t.score, -t.best.message_pk))
    report.used = True
    report.order = order
    return report
