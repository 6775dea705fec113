"""“Run director…” on a mail thread: pick any of your directors (filters do not matter) and run it on the
conversation's newest message. Thin: access the thread and director (404 for other users') → one action."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from apps.accounts import selectors as mail_selectors
from apps.routing import manual_runs, selectors


@require_http_methods(["GET", "POST"])
def thread_run_director(request: HttpRequest, thread_id: int) -> HttpResponse:
    thread = mail_selectors.access_thread(user=request.user, thread_id=thread_id)
    message = manual_runs.target_message(thread=thread)
    if request.method == "POST" and message is not None:
        director = selectors.access_director(user=request.user, director_id=_int(request.POST.get("director")))
        result = manual_runs.run_director_on_message(
            message=message, director=director, run_again=request.POST.get("again") == "1"
        )
        run_url = reverse("runs:detail", args=[result.run.pk])
        if result.outcome == "finished":
            messages.info(
                request,
                f"“{director.name}” already ran on this email ({result.run.get_status_display().lower()}). "
                "Use “Run again” to start it once more.",
            )
            return redirect("routing:thread_run_director", thread_id=thread.pk)
        if result.outcome == "already_active":
            messages.warning(
                request,
                f"“{director.name}” is already {result.run.get_status_display().lower()} on this email; "
                "no second run was started.",
            )
        else:
            verb = "started" if result.outcome == "created" else "started again"
            messages.success(request, f"“{director.name}” {verb} on this email.")
        return redirect(run_url)
    context: dict[str, Any] = {
        "thread": thread,
        "message": message,
        "choices": manual_runs.directors_for_thread(user=request.user, message=message),
        "thread_url": reverse("mail:thread", args=[thread.pk]),
    }
    return render(request, "routing/pages/run_director.html", context)


def _int(value: object) -> int:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return 0
