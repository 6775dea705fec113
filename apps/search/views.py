"""The search page, the results partial the mailbox search box swaps in (htmx), and the
embedding-progress partial the diagnostics page polls."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse

from apps.search.backends.base import MODES, Mode
from apps.search.selectors import (
    MessageResult,
    account_ids_for_user,
    build_filters,
    embedding_progress,
    normalize_mode,
    search_messages,
)

# Results open the message inside its thread on the mailbox pages.
THREAD_URL_NAME = "mail:thread"


def _message_url(result: MessageResult) -> str | None:
    if result.thread_id is None:
        return None
    try:
        return f"{reverse(THREAD_URL_NAME, args=[result.thread_id])}#message-{result.pk}"
    except NoReverseMatch:
        return None


def search_results(request: HttpRequest) -> HttpResponse:
    query = request.GET.get("q", "").strip()
    is_htmx = bool(getattr(request, "htmx", False))
    account = request.GET.get("account") or None
    context: dict[str, Any] = {"query": query, "results": [], "error": "", "modes": MODES, "account": account}
    mode: Mode = "hybrid"
    try:
        mode = normalize_mode(request.GET.get("mode"))
        filters = build_filters(
            account_ids=account_ids_for_user(request.user, account),
            folder=request.GET.get("folder"),
            date_from=request.GET.get("date_from"),
            date_to=request.GET.get("date_to"),
            from_address=request.GET.get("from"),
            to_address=request.GET.get("to"),
            has_attachment=True if request.GET.get("has_attachment") in {"1", "true", "on"} else None,
        )
    except ValueError as exc:
        context["error"] = str(exc)
        filters = None
    context["mode"] = mode
    if query and filters is not None:
        # Typing in the box searches as you type: the last word counts as a prefix.
        results = search_messages(query, mode=mode, limit=20, filters=filters, prefix_last=is_htmx)
        context["results"] = [{**asdict(result), "url": _message_url(result)} for result in results]
    template = "search/partials/results.html" if is_htmx else "search/pages/results.html"
    return render(request, template, context)


@staff_member_required
def progress(request: HttpRequest) -> HttpResponse:
    return render(request, "search/partials/embedding_progress.html", {"progress": embedding_progress()})
