"""The search page, the results partial the mailbox search box swaps in (htmx), a library file's thumbnail for
file results, and the embedding-progress partial the diagnostics page polls."""

from __future__ import annotations

import io
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from django.utils.html import escape
from django.views.decorators.http import require_POST

from apps.search import actions
from apps.search.backends.base import MODES, Mode
from apps.search.query import OPERATORS
from apps.search.selectors import (
    FILE_KIND,
    PER_PAGE,
    ResultRow,
    SearchPage,
    access_saved_search,
    document_preview,
    normalize_mode,
    progress_context,
    search_page,
)

# Results open the message inside its thread on the mailbox pages.
THREAD_URL_NAME = "mail:thread"
THUMBNAIL_PIXELS = 160


def _message_url(row: ResultRow) -> str | None:
    if row.thread_id is None:
        return None
    try:
        return f"{reverse(THREAD_URL_NAME, args=[row.thread_id])}#message-{row.pk}"
    except NoReverseMatch:
        return None


def _page_url(query: str, mode: str, account: str | None, page: int) -> str:
    params = {"q": query, "mode": mode, "page": page, **({"account": account} if account else {})}
    return f"{reverse('search:results')}?{urlencode(params)}"


def search_results(request: HttpRequest) -> HttpResponse:
    query = request.GET.get("q", "").strip()
    is_htmx = bool(getattr(request, "htmx", False))
    account = request.GET.get("account") or None
    context: dict[str, Any] = {
        "query": query,
        "results": [],
        "error": "",
        "modes": MODES,
        "account": account,
        "operators": OPERATORS,
    }
    mode: Mode = "hybrid"
    try:
        mode = normalize_mode(request.GET.get("mode"))
        page_number = int(request.GET.get("page") or 1)
        if page_number < 1:
            raise ValueError("page must be 1 or more")
        if query:
            result: SearchPage = search_page(
                query[:1000],
                user=request.user,
                mode=mode,
                page=page_number,
                per_page=PER_PAGE,
                account=account,
                prefix_last=is_htmx,  # typing in the box searches as you type: the last word is a prefix
            )
            context["page"] = result
            context["results"] = [
                {"row": row, "url": _message_url(row) if row.kind == "mail" else None} for row in result.rows
            ]
            if result.suggestion:
                context["suggestion_url"] = _page_url(result.suggestion, mode, account, 1)
            if result.page > 1:
                context["previous_url"] = _page_url(query, mode, account, result.page - 1)
            if result.has_next:
                context["next_url"] = _page_url(query, mode, account, result.page + 1)
    except ValueError as exc:
        context["error"] = str(exc) if "invalid literal" not in str(exc) else "page must be a number"
    context["mode"] = mode
    saved_id = request.GET.get("saved")
    if saved_id and query:  # run from the sidebar: the page names it and can delete it
        try:
            saved = access_saved_search(user=request.user, saved_search_id=saved_id)
        except Http404:
            saved = None
        context["saved_search"] = saved if saved is not None and saved.query == query else None
    template = "search/partials/results.html" if is_htmx else "search/pages/results.html"
    return render(request, template, context)


def file_thumbnail(request: HttpRequest, file_id: int) -> HttpResponse:
    """A small PNG of one of the user's library images; for other files (or an unreadable image) an icon with
    the file's extension. Another user's file is a 404."""
    from PIL import Image, UnidentifiedImageError

    preview = document_preview(request.user, FILE_KIND, file_id)
    if preview is None:
        raise Http404("No such file")
    if preview.image is not None:
        try:
            with Image.open(preview.image) as image:
                image.thumbnail((THUMBNAIL_PIXELS, THUMBNAIL_PIXELS))
                output = io.BytesIO()
                image.convert("RGBA" if image.mode in {"RGBA", "LA", "P"} else "RGB").save(output, format="PNG")
            response = HttpResponse(output.getvalue(), content_type="image/png")
            response["Cache-Control"] = "private, max-age=300"
            return response
        except (OSError, UnidentifiedImageError):
            pass
    extension = escape(PurePosixPath(preview.path).suffix.lstrip(".").upper()[:5] or "FILE")
    icon = ICON_SVG.replace("EXT", extension)
    response = HttpResponse(icon, content_type="image/svg+xml")
    response["Cache-Control"] = "private, max-age=300"
    return response


ICON_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="48" height="48" viewBox="0 0 48 48">'
    '<path d="M10 3h20l10 10v32H10z" fill="#eef1f5" stroke="#8a94a6" stroke-width="2"/>'
    '<path d="M30 3v10h10" fill="none" stroke="#8a94a6" stroke-width="2"/>'
    '<text x="25" y="35" font-family="sans-serif" font-size="9" text-anchor="middle" fill="#44506a">EXT</text></svg>'
)


@staff_member_required
def progress(request: HttpRequest) -> HttpResponse:
    return render(request, "search/partials/embedding_progress.html", progress_context())


@require_POST
def saved_search_create(request: HttpRequest) -> HttpResponse:
    query = request.POST.get("query", "")
    try:
        saved = actions.create_saved_search(owner=request.user, name=request.POST.get("name", ""), query=query)
    except actions.InvalidSavedSearch as exc:
        messages.error(request, str(exc))
        return HttpResponseRedirect(f"{reverse('search:results')}?{urlencode({'q': query})}")
    messages.success(request, f"Saved “{saved.name}”: it is in the mailbox sidebar with its count.")
    return HttpResponseRedirect(f"{reverse('search:results')}?{urlencode({'q': saved.query, 'saved': saved.pk})}")


@require_POST
def saved_search_delete(request: HttpRequest, saved_search_id: int) -> HttpResponse:
    saved = access_saved_search(user=request.user, saved_search_id=saved_search_id)
    actions.delete_saved_search(saved=saved)
    messages.success(request, f"Deleted the saved search “{saved.name}”.")
    return HttpResponseRedirect(f"{reverse('search:results')}?{urlencode({'q': saved.query})}")
