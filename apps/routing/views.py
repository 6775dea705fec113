"""The filters dry run, filter deletion and the Fetcher page.

Thin views: parse → access selector → one action → page or partial."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django.views.generic import RedirectView

from apps.routing import actions, selectors
from apps.routing.forms import TestFiltersForm
from apps.routing.models import CycleTrigger
from mailagent import ratelimit

# One page per concern: filters are listed, added, ordered, edited and tried on Settings → Filters; this address
# (linked for a long time) answers with a permanent redirect there.
filters = RedirectView.as_view(pattern_name="settings:filters", permanent=True, query_string=True)


@require_POST
def filter_delete(request: HttpRequest, filter_id: int) -> HttpResponse:
    item = selectors.access_filter(user=request.user, filter_id=filter_id)
    actions.delete_filter(item=item)
    messages.success(request, f"Filter /{item.regex}/ deleted.")
    return redirect("settings:filters")


@require_GET
def filters_test(request: HttpRequest) -> HttpResponse:
    """The "Test filters" panel: a dry run over the newest emails, rendered as a partial."""
    form = TestFiltersForm(request.GET, owner=request.user)
    if not form.is_valid():
        return render(request, "routing/partials/test_results.html", {"form_errors": form.errors}, status=400)
    director = form.cleaned_data.get("director")
    unsaved = bool(form.cleaned_data.get("regex"))
    if unsaved:
        preview = selectors.preview_pattern(
            user=request.user,
            last=form.cleaned_data["last"],
            field=form.cleaned_data["field"],
            regex=form.cleaned_data["regex"],
            case_insensitive=form.cleaned_data["case_insensitive"],
            director=director,
        )
    else:
        preview = selectors.preview_routes(
            user=request.user, last=form.cleaned_data["last"], director_ids={director.pk} if director else None
        )
    # One row per email (an email several directors' filters match is listed once, with each of them), in
    # the order the dry run met them.
    rows: dict[int, dict[str, Any]] = {}
    for message_id, match in preview.outcome.routes:
        row = rows.setdefault(
            message_id, {"message_id": message_id, "subject": preview.subjects.get(message_id, ""), "matches": []}
        )
        row["matches"].append(match)
    return render(
        request,
        "routing/partials/test_results.html",
        {
            "outcome": preview.outcome,
            "emails": preview.emails,
            "director": None if unsaved else director,
            "rows": list(rows.values()),
            "runs": len(preview.outcome.routes),
            "unsaved": unsaved,
        },
    )


# --- fetcher -------------------------------------------------------------------------------------------


def _fetcher_context(request: HttpRequest) -> dict[str, Any]:
    state = selectors.fetcher_state(owner=request.user)
    return {
        "state": state,
        "cycles": selectors.recent_cycles(user=request.user, limit=15),
        "runs": list(selectors.recent_runs_for_user(user=request.user, limit=30)),
        "run_counts": selectors.run_counts_by_status(user=request.user),
    }


@require_GET
def fetcher(request: HttpRequest) -> HttpResponse:
    return render(request, "routing/pages/fetcher.html", _fetcher_context(request))


def _render_fetcher_status(request: HttpRequest) -> HttpResponse:
    return render(request, "routing/partials/fetcher_status.html", _fetcher_context(request))


@require_GET
def fetcher_status(request: HttpRequest) -> HttpResponse:
    return _render_fetcher_status(request)


@require_POST
def fetcher_control(request: HttpRequest, command: str) -> HttpResponse:
    if command in ("start", "fetch", "run"):
        try:
            ratelimit.hit(action="fetch", user_id=request.user.pk)
        except ratelimit.RateLimited as exc:
            messages.error(request, str(exc))
            if request.htmx:  # type: ignore[attr-defined]
                # htmx does not swap a 429; it follows HX-Redirect, and the page shows the message.
                response = HttpResponse(str(exc), status=429, content_type="text/plain; charset=utf-8")
                response["HX-Redirect"] = reverse("routing:fetcher")
            else:
                response = render(request, "routing/pages/fetcher.html", _fetcher_context(request), status=429)
            response["Retry-After"] = str(exc.retry_after)
            return response
    if command == "start":
        actions.start_fetcher(owner=request.user)
    elif command == "stop":
        actions.stop_fetcher(owner=request.user)
    elif command in ("fetch", "run"):
        with transaction.atomic():
            actions.start_fetch_cycle(
                owner=request.user,
                trigger=CycleTrigger.FETCH if command == "fetch" else CycleTrigger.RUN,
                requested_by=request.user,
            )
    else:
        return HttpResponse("Unknown fetcher command", status=404)
    if request.htmx:  # type: ignore[attr-defined]
        return _render_fetcher_status(request)
    return redirect("routing:fetcher")
