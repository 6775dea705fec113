"""An Ask run as ordered steps. Each step emits step_started / step_completed with a label and a detail,
and records its time; the steps themselves live in planner, retrieval, rerank, answer and drafts.

question:  classify → plan → local_fts → local_vector → hybrid → provider_search → attachment_text → rerank
           → read_evidence → answer
drafts:    classify → plan → find_threads → create_drafts
refusal:   classify → answer (an honest refusal; nothing is touched)
"""

from __future__ import annotations

import logging
import time
from typing import Any

from apps.ask.answer import (
    EvidenceMessage,
    EvidenceText,
    citation_check,
    collect_passages,
    llm_answer,
    no_evidence_answer,
)
from apps.ask.drafts import create_follow_up_drafts, find_unanswered_threads
from apps.ask.extraction import extract_attachment_texts
from apps.ask.extractive import extractive_answer
from apps.ask.file_pipeline import run_file_request
from apps.ask.file_router import route_for_run
from apps.ask.intent import FILE_INTENTS
from apps.ask.library import mixed_file_cards
from apps.ask.mailparts import forwarded_text, split_closing
from apps.ask.planner import Plan, plan_question, refusal_text
from apps.ask.proposals import proposal_answer, propose
from apps.ask.rerank import (
    Candidate,
    ThreadResult,
    is_weak,
    keep_search_hits,
    keyword_sets,
    merge_threads,
    score_candidates,
)
from apps.ask.retrieval import (
    CandidatePool,
    load_candidates,
    pending_attachments,
    shortlist_similarities,
    thread_scope,
    word_rarity,
)
from apps.ask.rewrite import llm_rerank, recent_subjects, rewrite_question
from apps.ask.search_steps import gather_candidates
from apps.ask.steps import AskContext, AskOutcome, StepTracker, make_outcome
from apps.ask.textutil import VALUE_KIND_LABELS, VALUE_KINDS, Passage, find_values, names_days
from apps.ask.topics import PreviousExchange, judge_topic, local_similarity, model_judge
from apps.search.folding import highlight, parse_query

logger = logging.getLogger(__name__)

# Ranked evidence rows shown under an answer: ten, as a page of search results (and the depth of the
# recall@10 bench/ask.py measures; with 8, the fresh Enron set's r@10 was 0.767, with 10 it is 0.800).
EVIDENCE_ROWS = 10
READ_EVIDENCE = 5
SEARCH_MEMBERS = 4  # messages read per matched thread
THREAD_MEMBERS = 12  # messages read of the thread asked about ("Ask about this thread")
SOURCE_ORDER = ("local_fts", "local_vector", "provider_search", "attachment_text")


def run_pipeline(ctx: AskContext) -> AskOutcome:
    started = time.perf_counter()
    tracker = StepTracker(ctx.run_id, ctx.emit)
    scope: dict[str, Any] = {"accounts": [a.name for a in ctx.accounts], "sources": {}}
    if ctx.thread_id is not None:
        scope["thread"] = {"id": ctx.thread_id}
    with tracker.step("classify") as step:
        # Mail and library files are one conversation: the router sends file requests to file_pipeline.py.
        route, files, scope["router"], step.detail = route_for_run(
            question=ctx.question,
            owner=ctx.owner,
            run_id=ctx.ask_run_id,
            llm=ctx.llm,
            scoped_to_thread=ctx.thread_id is not None,
        )
        intent, refusal = route.intent, route.refusal
        ctx.library_files = files.router.has_files and ctx.thread_id is None
    if intent in FILE_INTENTS:
        return run_file_request(ctx, tracker, started, route, files, scope)
    if intent == "chat":
        with tracker.step("answer") as step:
            step.detail = "a short reply: nothing was searched"
        return make_outcome(tracker, started, "chat", route.reply, "chat", {"intent": "chat"}, [], scope)
    if intent == "unsupported":
        with tracker.step("answer") as step:
            answer = refusal_text(refusal)
            step.detail = "refused: nothing was changed"
            proposal = propose(owner=ctx.owner, question=ctx.question, action=refusal, now=ctx.now)
            if proposal is not None:
                scope["proposal"] = proposal
                answer = proposal_answer(refusal, proposal)
                step.detail = f"nothing was changed; {len(proposal['threads'])} conversations offered for your click"
        scope["refused"] = refusal
        return make_outcome(
            tracker, started, intent, answer, "refusal", {"intent": intent, "refusal": refusal}, [], scope
        )
    if ctx.history:
        with tracker.step("topic") as step:
            scope["topic"], step.detail = _follow_or_start(ctx)
    with tracker.step("plan") as step:
        drafts = intent == "follow_up_drafts"
        plan = plan_question(ctx.question, now=ctx.now, history=ctx.history, drafts=drafts)
        if ctx.llm is not None and plan.intent == "question":
            rewrites, error = rewrite_question(ctx.llm, ctx.question, recent_subjects(ctx.accounts))
            scope["rewrite"] = {"queries": rewrites, "error": error}
            if rewrites:
                plan = plan_question(ctx.question, now=ctx.now, history=ctx.history, rewrites=rewrites, drafts=drafts)
        step.detail = _plan_detail(plan)
    scope["date_range"] = plan.date_range.label
    if plan.intent == "follow_up_drafts":
        return _drafts(ctx, tracker, started, plan, scope)
    return _question(ctx, tracker, started, plan, scope)


def _follow_or_start(ctx: AskContext) -> tuple[dict[str, Any], str]:
    """Does the question continue the conversation's previous turn? If not, it is planned and answered on
    its own: the earlier turns' words, dates and answers are dropped from the context (issue 35, item 1)."""
    last = ctx.history[-1]
    previous = PreviousExchange(question=last.question, answer=last.answer, at=last.at)
    decision = judge_topic(
        ctx.question,
        previous,
        now=ctx.now,
        similarity=local_similarity(),
        model=model_judge(ctx.llm) if ctx.llm is not None else None,
    )
    topic = {"continues": decision.continues, "reason": decision.reason, "previous": last.question[:300]}
    if not decision.continues:
        ctx.history = []
        ctx.history_answers = []
        return topic, f"a new topic ({decision.reason})"
    return topic, f"follows up on “{last.question[:120]}” ({decision.reason})"


def _plan_detail(plan: Plan) -> str:
    parts = []
    if plan.entities:
        parts.append("about " + ", ".join(plan.entities))
    if plan.hints:
        parts.append("hints: " + ", ".join(plan.hints))
    if plan.date_range.label:
        parts.append(plan.date_range.label + ("" if plan.date_range.limits else " (preferred, not a filter)"))
    if plan.follow_up:
        parts.append("follows up on the previous question")
    if plan.rewrites:
        parts.append("rewritten by the language model: " + " | ".join(plan.rewrites))
    wanted = [VALUE_KIND_LABELS[k] for k in plan.answer_types if k in VALUE_KIND_LABELS]
    if wanted:
        parts.append("looking for " + " and ".join(wanted))
    elif plan.answer_types == ["yesno"]:
        parts.append("a yes/no question")
    if plan.draft is not None:
        parts.append(f"no reply for {plan.draft.min_days}+ days")
        if plan.draft.topic_terms:
            parts.append("topic: " + " ".join(plan.draft.topic_terms))
    return "; ".join(parts) or "plain search"


def _question(ctx: AskContext, tracker: StepTracker, started: float, plan: Plan, scope: dict[str, Any]) -> AskOutcome:
    account_ids = tuple(a.pk for a in ctx.accounts)
    pool = CandidatePool()
    sources: dict[str, Any] = scope["sources"]
    if ctx.thread_id is not None:
        scope["thread"] = thread_scope(pool, ctx.thread_id, account_ids)
    plan = gather_candidates(ctx, tracker, plan, pool, scope)
    shortlist = pool.shortlist()
    with tracker.step("attachment_text") as step:
        pending = pending_attachments(shortlist) if plan.wants_attachments else []
        extracted, failed = extract_attachment_texts(attachments=pending)
        sources["attachment_text"] = {"extracted": extracted, "failed": failed, "considered": len(pending)}
        load_candidates(shortlist)
        cached = sum(len(c.attachments) for c in shortlist)
        step.detail = f"{extracted} newly extracted, {cached} attachment texts available" + (
            f", {len(failed)} unreadable" if failed else ""
        )
    with tracker.step("rerank") as step:
        similar = shortlist_similarities(plan, shortlist)
        rarity = word_rarity([*plan.entities, *(word for words in keyword_sets(plan) for word in words)])
        ranked = score_candidates(plan, shortlist, keyword_lists=pool.keyword_lists, word_weights=rarity)
        threads = keep_search_hits(merge_threads(ranked))
        step.detail = f"{len(pool.by_message)} candidates → {len(threads)} threads" + (
            f" ({similar} compared with the question by meaning)" if similar else ""
        )
        if ctx.llm is not None and threads:
            reranked = llm_rerank(ctx.llm, ctx.question, threads)
            scope["llm_rerank"] = reranked.as_json()
            step.detail += (
                "; reordered by the language model"
                if reranked.used
                else f"; the language model could not rerank ({reranked.error})"
            )
    scope["candidates"] = len(pool.by_message)
    scope["shortlist"] = len(shortlist)
    with tracker.step("read_evidence") as step:
        # A thread the user asked about is read further than a search hit's thread.
        per_thread = THREAD_MEMBERS if ctx.thread_id is not None else SEARCH_MEMBERS
        texts = _read_evidence(plan, threads[:READ_EVIDENCE], per_thread=per_thread)
        read = sum(max(1, len(text.members)) for text in texts)  # each thread's best mail and a few more
        step.detail = (
            f"read {read} message{'s' if read != 1 else ''} of {len(texts)} thread{'s' if len(texts) != 1 else ''}"
            + (f", best: “{threads[0].best.subject[:60]}”" if threads else "")
        )
    if ctx.library_files:
        with tracker.step("search_files") as step:
            scope["files"] = mixed_file_cards(owner=ctx.owner, words=plan.keywords, entities=plan.entities)
            step.detail = f"{len(scope['files'])} library files contain the question's words"
    reason = _no_evidence_reason(plan, threads, chosen_thread=ctx.thread_id is not None)
    rows = [_evidence_row(plan, rank, thread, texts) for rank, thread in enumerate(threads[:EVIDENCE_ROWS], start=1)]
    with tracker.step("answer") as step:
        if reason:
            for row in rows:
                row["related"] = True
            answer = no_evidence_answer(_searched(scope, plan), reason)
            scope["confidence"] = "low"
            mode = "no_evidence"
            step.detail = f"no reliable evidence: {reason}"
            if scope.get("files"):  # the mail has no answer, but library files hold the question's words
                names = ", ".join(card["name"] for card in scope["files"])
                answer += f"\nYour library has files with these words (below): {names}."
        else:
            answer, mode = _answer(ctx, plan, texts, scope)
            step.detail = "answered with a language model" if mode == "llm" else "answered from the evidence text"
        if scope.get("widened"):
            answer = f"Nothing in your mail from {scope['widened']} matched, so I searched all of it.\n{answer}"
            step.detail += f"; nothing from {scope['widened']}: searched all mail"
    return make_outcome(tracker, started, "question", answer, mode, plan.as_json(), rows, scope)


def _answer(ctx: AskContext, plan: Plan, texts: list[EvidenceText], scope: dict[str, Any]) -> tuple[str, str]:
    if ctx.llm is not None:
        result = llm_answer(ctx.llm, question=ctx.question, evidence=texts, history=ctx.history_answers)
        if result is not None and result.mode == "llm":
            scope["citation_check"] = result.citation_check
            scope["llm"] = result.llm
            # every value of the answer was found in the mail it cites; an answer without values is a reading
            scope["confidence"] = "high" if result.citation_check.get("checked_values") else "medium"
            return result.text, "llm"
        scope["llm"] = result.llm if result is not None else {}
        scope["llm"]["fallback"] = "extractive"
    extracted = extractive_answer(plan, texts)
    check = citation_check(extracted.checked_text(), texts)
    if not check["ok"]:  # cannot happen for copied sentences; say so loudly if it ever does
        logger.error("ask: extractive answer failed its citation check: %s", check)
    scope["citation_check"] = check
    scope["extractive"] = extracted.summary()
    scope["confidence"] = extracted.confidence
    return extracted.text, "extractive"


def _no_evidence_reason(plan: Plan, threads: list[ThreadResult], *, chosen_thread: bool = False) -> str:
    if not threads:
        return "nothing matched"
    top = threads[0].best
    # Month and weekday names are dates, not names: "dues for Nov-Jan" is answered by "November to January".
    named = [entity for entity in plan.entities if not names_days(entity)]
    if named and not any(_mentions_entity(member) for member in threads[0].members):
        # The best thread names none of the question's entities (the bank, the company, the city), in any of
        # its matching messages: a reply that only says "your flight" is fine when its thread names Istanbul.
        names = ", ".join(named)
        read = sum(len(thread.members) for thread in threads)
        if any(_mentions_entity(member) for thread in threads for member in thread.members):
            return f"the best match does not mention {names}"
        return f"none of the {read} best-matching mails mentions {names}"
    # A thread the user chose is the evidence they asked for, however few of the question's words it has.
    if not chosen_thread and is_weak(top):
        return "only weak matches"
    return ""


def _mentions_entity(candidate: Candidate) -> bool:
    return candidate.features.get("entity", 0.0) > 0.0


def _searched(scope: dict[str, Any], plan: Plan) -> list[str]:
    sources = scope["sources"]
    done = [f"local keywords ({len(plan.keyword_queries)} variants)"]
    note = sources.get("local_vector", {}).get("note")
    done.append("meaning (semantic index)" + (f" — {note}" if note else ""))
    for name, entry in (sources.get("provider_search") or {}).items():
        done.append(f"{name} ({entry.get('provider')}): {entry.get('status')}")
    attachments = sources.get("attachment_text") or {}
    done.append(f"attachments ({attachments.get('extracted', 0)} newly read)")
    if plan.date_range.label and plan.date_range.limits:
        done.append(f"limited to {plan.date_range.label}")
    return done


def _message_passages(candidate: Candidate) -> list[Passage]:
    attachments = [(a.filename, a.text) for a in candidate.attachments]
    own, closing = split_closing(candidate.body)
    return collect_passages(
        subject=candidate.subject,
        body=own,
        closing=closing,
        forwarded=forwarded_text(candidate.body),
        attachments=attachments,
    )


PROMPT_PASSAGES = 8


def _prompt_passages(plan: Plan, passages: list[Passage]) -> list[Passage]:
    """The excerpts a language model sees: sentences holding an asked kind of value first, then the rest
    in mail order (the model reads them; the extractive answer ranks them itself)."""
    kinds = [k for k in plan.answer_types if k in VALUE_KINDS]
    body = [p for p in passages if p.source != "subject" and (p.source != "closing" or "phone" in kinds)]
    with_value = [p for p in body if any(find_values(kind, p.text) for kind in kinds)]
    rest = [p for p in body if p not in with_value]
    return (with_value + rest)[:PROMPT_PASSAGES]


def _member_text(member: Candidate) -> str:
    date = f"{member.date:%Y-%m-%d}" if member.date else ""
    return "\n".join([member.subject, date, member.body, *(a.text for a in member.attachments)])


def _read_evidence(plan: Plan, threads: list[ThreadResult], *, per_thread: int = 4) -> list[EvidenceText]:
    """The evidence items: per thread its best message (for the language model and the rows) and every
    read message of it (the extractive answer may quote a newer one: a schedule change)."""
    texts: list[EvidenceText] = []
    for number, thread in enumerate(threads, start=1):
        best = thread.best
        attachments = [(a.filename, a.text) for a in best.attachments]
        chosen = _message_passages(best)
        members = [
            EvidenceMessage(
                subject=member.subject,
                sender=member.sender,
                date_label=f"{member.date:%Y-%m-%d}" if member.date else "",
                timestamp=member.date.timestamp() if member.date else 0.0,
                passages=chosen if member is best else _message_passages(member),
            )
            for member in thread.members[:per_thread]
            if member.loaded
        ]
        full_text = "\n".join(
            [best.body, *(text for _name, text in attachments)]
            + [_member_text(m) for m in thread.members[1:per_thread] if m.loaded]
        )
        texts.append(
            EvidenceText(
                number=number,
                subject=best.subject,
                sender=best.sender,
                date_label=f"{best.date:%Y-%m-%d}" if best.date else "",
                attachment=best.matched_attachment.filename if best.matched_attachment else "",
                full_text=full_text,
                passages=_prompt_passages(plan, chosen),
                members=members,
                score=thread.score,
            )
        )
    return texts


def _highlight_query(plan: Plan) -> str:
    return " ".join([*plan.entities, *plan.keywords])


def _evidence_row(plan: Plan, rank: int, thread: ThreadResult, texts: list[EvidenceText]) -> dict[str, Any]:
    best = thread.best
    text = texts[rank - 1] if rank <= len(texts) else None
    passage = text.passages[0].text if text and text.passages else (best.body[:400] or best.subject)
    snippet = highlight(passage, parse_query(_highlight_query(plan)))
    attachment = best.matched_attachment
    return {
        "rank": rank,
        "message_id": best.rfc_message_id,
        "message_pk": best.message_pk,
        "thread_id": best.thread_id,
        "subject": best.subject,
        "sender": best.sender,
        "date": best.date.isoformat() if best.date else None,
        "snippet": snippet,
        "score": round(thread.score, 4),
        "matched_fields": best.matched_fields,
        "sources": [s for s in SOURCE_ORDER if s in best.sources],
        "attachment": {"id": attachment.id, "filename": attachment.filename} if attachment else None,
        "features": dict(best.features),
        "copies": best.copies,
        "related": False,
    }


def _drafts(ctx: AskContext, tracker: StepTracker, started: float, plan: Plan, scope: dict[str, Any]) -> AskOutcome:
    assert plan.draft is not None
    with tracker.step("find_threads") as step:
        targets = find_unanswered_threads(
            owner=ctx.owner,
            accounts=ctx.accounts,
            topic_terms=plan.draft.topic_terms,
            min_days=plan.draft.min_days,
            now=ctx.now,
        )
        if ctx.thread_id is not None:  # asked from a thread: only that one
            targets = [target for target in targets if target.thread_id == ctx.thread_id]
        step.detail = f"{len(targets)} threads wait for a reply"
    with tracker.step("create_drafts") as step:
        created, skipped = create_follow_up_drafts(owner=ctx.owner, targets=targets, ask_run_id=ctx.ask_run_id)
        step.detail = f"{len(created)} created, {len(skipped)} skipped (a draft already exists)"
    scope["drafts"] = {
        "created": len(created),
        "skipped": len(skipped),
        "created_ids": [d.pk for d in created],
        "skipped_threads": skipped,
        "sent": 0,
    }
    rows: list[dict[str, Any]] = []
    for rank, target in enumerate(targets, start=1):
        message = target.last_sent
        rows.append(
            {
                "rank": rank,
                "message_id": message.message_id,
                "message_pk": message.pk,
                "thread_id": target.thread_id,
                "subject": target.subject,
                "sender": ", ".join(p["name"] or p["address"] for p in target.waiting_for),
                "date": message.date.isoformat() if message.date else None,
                "snippet": "Waiting for: " + ", ".join(p["address"] for p in target.waiting_for),
                "score": 1.0,
                "matched_fields": ["recipients"],
                "sources": ["local_fts"],
                "attachment": None,
                "features": {},
                "related": False,
                "draft": "skipped" if target.has_draft else "created",
            }
        )
    with tracker.step("answer") as step:
        if not targets:
            answer = (
                "No thread is waiting for a reply"
                + (f" about {' '.join(plan.draft.topic_terms)}" if plan.draft.topic_terms else "")
                + f" for {plan.draft.min_days} days or more, so no draft was created."
            )
        else:
            answer = (
                f"Created {len(created)} follow-up draft{'s' if len(created) != 1 else ''} for you to review "
                f"and skipped {len(skipped)} thread{'s' if len(skipped) != 1 else ''} that already "
                f"{'have' if len(skipped) != 1 else 'has'} a draft. Nothing was sent."
            )
        step.detail = f"{len(created)} created, {len(skipped)} skipped, 0 sent"
    return make_outcome(tracker, started, "follow_up_drafts", answer, "drafts", plan.as_json(), rows, scope)
