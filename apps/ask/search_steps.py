"""The search steps of an Ask run (local words, meaning, the search page's hybrid ranking, Gmail / Outlook,
gists), each reported as a step; and, when a period the question names ("last year") filters every mail
out, the same steps again over all of the mail (the answer says so)."""

from __future__ import annotations

from typing import Any

from apps.ask.dates import DateRange
from apps.ask.planner import Plan
from apps.ask.retrieval import (
    CandidatePool,
    gist_search,
    hybrid_search,
    keyword_search,
    pool_gists,
    provider_search,
    search_filters,
    semantic_search,
)
from apps.ask.steps import AskContext, StepTracker
from apps.search.backends.base import SearchFilters
from apps.search.gist import get_gist_embedder


def gather_candidates(
    ctx: AskContext, tracker: StepTracker, plan: Plan, pool: CandidatePool, scope: dict[str, Any]
) -> Plan:
    """Fill the pool; returns the plan the run goes on with (without its period when that was widened:
    scope["widened"] holds the period's label then)."""
    account_ids = tuple(a.pk for a in ctx.accounts)
    _search(ctx, tracker, plan, pool, scope, search_filters(plan, account_ids, thread_id=ctx.thread_id))
    if pool.by_message or not plan.date_range.limits or ctx.thread_id is not None:
        return plan
    scope["widened"] = plan.date_range.label
    plan.date_range = DateRange()  # no mail is from the period: none to prefer either
    pool.keyword_lists = pool.semantic_total = 0  # the empty first pass counts for nothing
    _search(ctx, tracker, plan, pool, scope, search_filters(plan, account_ids, thread_id=ctx.thread_id))
    return plan


def _search(
    ctx: AskContext,
    tracker: StepTracker,
    plan: Plan,
    pool: CandidatePool,
    scope: dict[str, Any],
    filters: SearchFilters,
) -> None:
    sources: dict[str, Any] = scope["sources"]
    with tracker.step("local_fts") as step:
        sources["local_fts"] = keyword_search(plan, pool, filters)
        step.detail = f"{len(plan.keyword_queries)} keyword variants, {len(pool.by_message)} messages"
    with tracker.step("local_vector") as step:
        before = len(pool.by_message)
        sources["local_vector"] = semantic_search(plan, pool, filters)
        if sources["local_vector"].get("note"):
            step.status = "skipped"
        step.detail = sources["local_vector"].get("note") or (
            f"{sources['local_vector']['hits']} messages ({len(pool.by_message) - before} new)"
        )
    with tracker.step("hybrid") as step:
        sources["hybrid"] = hybrid_search(plan, pool, filters)
        by = "words only (no embeddings yet)" if sources["local_vector"].get("note") else "words and meaning"
        step.detail = f"{sources['hybrid']['hits']} messages ranked by {by} ({sources['hybrid']['new']} new)"
    with tracker.step("provider_search") as step:
        report = provider_search(plan, pool, ctx.accounts) if ctx.thread_id is None else {}
        sources["provider_search"] = report
        if not report:
            step.status = "skipped"
            step.detail = "one thread only" if ctx.thread_id is not None else "no Gmail or Outlook account connected"
        else:
            step.detail = "; ".join(
                f"{name}: {entry.get('status')}"
                + (f" ({entry.get('results', 0)} results)" if entry.get("status") == "ok" else "")
                + (f" — {entry.get('error')}" if entry.get("status") == "error" else "")
                for name, entry in report.items()
            )
        scope["provider_errors"] = [
            {"account": name, "error": entry.get("error"), "category": entry.get("category")}
            for name, entry in report.items()
            if entry.get("status") == "error"
        ]
    with tracker.step("gist") as step:
        found = gist_search(plan, pool, filters)
        gists = pool_gists(plan, pool)
        if gists:
            step.detail = f"{gists} candidates compared by gist ({found} new)"
        else:
            step.status = "skipped"
            step.detail = (
                "gist model switched off (SEARCH_GIST_EMBEDDER=none)"
                if get_gist_embedder() is None
                else "the background backfill has not embedded these mails' gists yet"
            )
