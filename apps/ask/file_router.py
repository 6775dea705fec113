"""The router's second opinion: when the rules are unsure (apps/ask/intent.py, a Route below SURE) and the
owner has a language model for Ask, the model classifies the request (the seed's fast router: intent,
confidence, search words). Best effort: a failed or unreadable reply keeps the rules' route."""

from __future__ import annotations

import logging
from typing import Any, Literal

from apps.ask.intent import (
    AFFIRM,
    NEGATE,
    SURE,
    Route,
    RouterContext,
    decision_route,
    file_query_words,
    instruction_text,
    saved_content,
)
from apps.ask.intent_model import Verdict, understand
from apps.ask.rewrite import _json_object
from apps.llm import LLMConfig, LLMError, chat

logger = logging.getLogger(__name__)

ROUTER_PROMPT = """You classify one message sent to a personal assistant over the user's e-mail and file library.
Reply with JSON only: {"intent": "...", "confidence": 0.0-1.0, "search_query": "..."}.
Intents:
- mail_question: a question about their e-mail (or anything that is not one of the others)
- find_files: find or show files kept in their library (documents, photos, scans); search_query: the words
  a matching file would contain
- organize: organize or file away the files waiting in the library inbox
- save: keep the given note or link in the library
- confirm: yes / do it, answering the pending folder suggestion
- reject: no / keep it where it is, answering the pending folder suggestion"""

LLM_INTENTS = {
    "mail_question": "question",
    "find_files": "query_files",
    "organize": "organize",
    "save": "save",
    "confirm": "confirm",
    "reject": "reject",
}


def route_with_llm(config: LLMConfig, question: str, ctx: RouterContext, rules: Route) -> tuple[Route, str]:
    """(route, error): the model's route, or the rules' route and why the model was not used."""
    context = (
        f"Pending folder suggestion: {'yes' if ctx.pending_suggestions or ctx.shown_pending else 'no'}\n"
        f"The previous turn searched library files: {'yes' if ctx.last_file_query else 'no'}\n"
        f"The library has files: {'yes' if ctx.has_files else 'no'}\n\n"
        f"Message: {question}"
    )
    messages = [{"role": "system", "content": ROUTER_PROMPT}, {"role": "user", "content": context}]
    try:
        result = chat(config, messages, temperature=0, max_tokens=120)
        data: dict[str, Any] = _json_object(result.content or "")
        intent = LLM_INTENTS[str(data.get("intent") or "")]
        confidence = float(data.get("confidence") or 0.0)
    except (LLMError, ValueError, KeyError, TypeError) as exc:
        logger.info("ask: LLM routing failed: %s", exc)
        return rules, (str(exc) or type(exc).__name__)[:300]
    confidence = max(0.0, min(1.0, confidence))
    reason = "the language model's reading"
    if intent == "question":
        return Route("question", confidence, source="llm", reason=reason), ""
    if intent == "query_files":
        query, kind = file_query_words(str(data.get("search_query") or "") or instruction_text(question))
        return Route("query_files", confidence, source="llm", query=query, kind=kind or rules.kind, reason=reason), ""
    if intent == "save":
        return Route("save", confidence, source="llm", content=saved_content(question), reason=reason), ""
    if intent in ("confirm", "reject"):
        text = instruction_text(question)
        match = (AFFIRM if intent == "confirm" else NEGATE).match(text)
        names = decision_route(text, intent, match, ctx).names if match else []  # type: ignore[arg-type]
        return Route(intent, confidence, source="llm", names=names, reason=reason), ""  # type: ignore[arg-type]
    return Route("organize", confidence, source="llm", reason=reason), ""


def needs_model(route: Route, ctx: RouterContext) -> bool:
    """Ask the model only when the rules are unsure and the answer could differ: with no library files,
    no pending suggestion and no file search before, every unsure request is a mail question anyway."""
    return route.confidence < SURE and (ctx.has_files or bool(ctx.pending_suggestions) or ctx.last_file_query)


INTENT_DETAILS = {
    "question": "a question about your mail",
    "chat": "chat: a short reply, nothing searched",
    "follow_up_drafts": "follow-up drafts",
    "query_files": "find files in your library",
    "confirm": "yes to a folder suggestion",
    "reject": "no to a folder suggestion",
    "choose": "another folder for a folder suggestion",
    "organize": "organize the library inbox",
    "save": "save into your library",
}


def route_for_run(
    *, question: str, owner: Any, run_id: Any, llm: LLMConfig | None, scoped_to_thread: bool = False
) -> tuple[Route, Any, dict[str, Any], str]:
    """(route, conversation files, router scope, step detail) of one run."""
    from apps.ask.intent import RouterContext, route_request
    from apps.ask.library import ConversationFiles, conversation_files, owner_file_count

    if run_id is not None:
        files = conversation_files(run_id=run_id, owner=owner)
    else:
        files = ConversationFiles(router=RouterContext(has_files=owner is not None and owner_file_count(owner) > 0))
    if scoped_to_thread:  # "Ask about this thread" is a question about that thread, nothing else
        from apps.ask.intent import classify_intent

        intent, refusal = classify_intent(question)
        route = Route(intent, 1.0, refusal=refusal, reason="about one thread")
    else:
        route = route_request(question, files.router)
    report: dict[str, Any] = {}
    if route.intent == "question" and route.confidence >= SURE:
        # The English rules' default (not a find request, nor one they are unsure about, which may name a
        # file): what kind of request it is, read by models in any language.
        verdict, report["understood"] = understand(question, llm)
        if verdict.intent != "question":
            route = _verdict_route(verdict, llm_read="model" in report["understood"])
    if llm is not None and not scoped_to_thread and route.intent == "question" and needs_model(route, files.router):
        route, error = route_with_llm(llm, question, files.router, route)
        if error:
            report["llm_error"] = error
    report.update(route.as_json())
    detail = INTENT_DETAILS.get(route.intent, f"an action Ask does not do ({route.refusal})")
    if route.source == "llm":
        detail += " (the language model's reading)"
    elif route.source == "examples":
        detail += f" (nearest example: “{report['understood']['examples']['nearest']}”)"
    elif report.get("llm_error"):
        detail += f" (the language model could not route it: {report['llm_error'][:120]})"
    return route, files, report, detail


def _verdict_route(verdict: Verdict, *, llm_read: bool) -> Route:
    source: Literal["llm", "examples"] = "llm" if llm_read else "examples"
    reason = "the language model's reading" if llm_read else f"nearest example “{verdict.nearest}”"
    confidence = 0.9 if llm_read else min(1.0, 0.5 + verdict.margin)
    if verdict.intent == "chat":
        return Route("chat", confidence, source=source, reply=verdict.reply, reason=reason)
    if verdict.intent == "unsupported":
        return Route("unsupported", confidence, source=source, refusal=verdict.action, reason=reason)
    return Route("follow_up_drafts", confidence, source=source, reason=reason)
