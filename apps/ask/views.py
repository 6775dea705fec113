"""The Ask panel (composer + transcript), the run item partial, and the form both the panel composer and
the mailbox launcher post to. Thin: parse → access → one action → render."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.handlers.asgi import ASGIRequest
from django.http import FileResponse, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.accounts import selectors as mail_selectors
from apps.ask import actions, selectors
from apps.ask.llm import ask_model, model_for_choice
from apps.ask.models import AskRun
from apps.ask.presentation import run_context
from apps.ask.proposals import ProposalError
from apps.ask.runner import start_ask_run
from apps.ask.warmup import warm_up_in_background
from mailagent import ratelimit


@require_GET
def panel(request: HttpRequest) -> HttpResponse:
    warm_up_in_background()  # while the user types the question
    conversation = None
    runs: list[AskRun] = []
    if request.GET.get("c"):
        conversation = selectors.access_conversation(user=request.user, conversation_id=request.GET["c"])
        runs = list(selectors.conversation_runs(conversation=conversation))
    context: dict[str, Any] = {
        "conversation": conversation,
        "items": [run_context(run) for run in runs],
        "conversations": selectors.recent_conversations(user=request.user),
        "accounts": selectors.accounts_for_run(owner=request.user),
        "model": ask_model(request.user),
        "error": "",
    }
    if request.GET.get("thread"):  # "Ask about this thread" on a mail thread page
        about = mail_selectors.access_thread(user=request.user, thread_id=request.GET["thread"])
        context.update(about_thread=about, question=f"About “{about.subject or '(no subject)'}”: ")
    return render(request, "ask/pages/panel.html", context)


@require_POST
def ask_run_create(request: HttpRequest) -> HttpResponse:
    conversation = None
    # The launcher continues the last conversation unless the user asked for a new one.
    if request.POST.get("conversation") and not request.POST.get("new"):
        conversation = selectors.access_conversation(user=request.user, conversation_id=request.POST["conversation"])
    # "Ask about this thread": only that thread is searched (404 for another user's thread).
    thread = None
    if request.POST.get("thread"):
        thread = mail_selectors.access_thread(user=request.user, thread_id=request.POST["thread"])
    is_htmx = bool(getattr(request, "htmx", False))
    try:
        ratelimit.hit(action="ask", user_id=request.user.pk)
        run = actions.create_ask_run(
            owner=request.user,
            question=request.POST.get("question", ""),
            conversation=conversation,
            account_name="" if thread else request.POST.get("account", "").strip(),
            thread=thread,
        )
    except (actions.AskInputError, ratelimit.RateLimited) as exc:
        limited = exc if isinstance(exc, ratelimit.RateLimited) else None
        status = 429 if limited else 422
        if is_htmx:
            response = render(request, "ask/partials/form_error.html", {"error": str(exc)}, status=status)
            if limited:
                response["Retry-After"] = str(limited.retry_after)
            return response
        # A plain form post (the launcher without JavaScript): the panel with the error and the question kept.
        runs = list(selectors.conversation_runs(conversation=conversation)) if conversation else []
        context: dict[str, Any] = {
            "conversation": conversation,
            "items": [run_context(run) for run in runs],
            "conversations": selectors.recent_conversations(user=request.user),
            "accounts": selectors.accounts_for_run(owner=request.user),
            "model": ask_model(request.user),
            "error": str(exc),
            "question": request.POST.get("question", "")[:5000],
            "about_thread": thread,
        }
        response = render(request, "ask/pages/panel.html", context, status=status)
        if limited:
            response["Retry-After"] = str(limited.retry_after)
        return response
    start_ask_run(run.pk, asgi=isinstance(request, ASGIRequest))
    run.refresh_from_db()
    if is_htmx:
        # The run item, plus (out of band) the composer's conversation id and the sidebar, so a follow-up
        # typed next continues this conversation however the page was opened.
        created: dict[str, Any] = {
            "item": run_context(run),
            "conversation": run.conversation,
            "conversations": selectors.recent_conversations(user=request.user),
        }
        response = render(request, "ask/partials/run_created.html", created)
        response["HX-Replace-Url"] = f"{reverse('ask:panel')}?c={run.conversation_id}"
        return response
    return redirect(f"{reverse('ask:panel')}?c={run.conversation_id}#ask-run-{run.pk}")


@require_GET
def run_item(request: HttpRequest, run_id: str) -> HttpResponse:
    run = selectors.access_run(user=request.user, run_id=run_id)
    return render(request, "ask/partials/run.html", {"item": run_context(run)})


@require_POST
def run_proposal(request: HttpRequest, run_id: str) -> HttpResponse:
    """The owner's click on the mail change an answer offers (apps/ask/proposals.py)."""
    run = selectors.access_run(user=request.user, run_id=run_id)
    thread_ids = [int(v) for v in request.POST.getlist("thread") if v.isdigit()]
    # A move's destination, one select per account of the listed conversations: folder-<account id>.
    folders = {
        int(key.removeprefix("folder-")): str(request.POST.get(key, ""))
        for key in request.POST
        if key.startswith("folder-") and key.removeprefix("folder-").isdigit()
    }
    error, status = "", 200
    try:
        run = actions.confirm_mail_proposal(
            run=run,
            owner=request.user,
            change=request.POST.get("change", ""),
            thread_ids=thread_ids,
            folders=folders,
        )
    except ProposalError as exc:
        error, status = str(exc), 409
    if getattr(request, "htmx", False):
        context = {"item": {**run_context(run), "proposal_error": error}}
        return render(request, "ask/partials/run.html", context, status=status)
    if error:
        messages.error(request, error)
    return redirect(f"{reverse('ask:panel')}?c={run.conversation_id}#ask-run-{run.pk}")


@require_http_methods(["GET", "POST"])
def ask_settings(request: HttpRequest) -> HttpResponse:
    """Which of the user's models (Settings → Models) Ask answers with."""
    error = ""
    status = 200
    if request.method == "POST":
        raw = request.POST.get("api_config", "").strip()
        if raw and not raw.isdigit():
            error, status = "Choose one of your models from the list.", 422
        else:
            actions.choose_ask_model(owner=request.user, api_config_id=int(raw) if raw else None)
            return redirect(f"{reverse('ask:settings')}?saved=1")
    context = {
        "model": ask_model(request.user),
        "configs": selectors.api_configs(owner=request.user),
        "saved": request.GET.get("saved") == "1",
        "error": error,
    }
    return render(request, "ask/pages/settings.html", context, status=status)


@require_POST
def ask_settings_test(request: HttpRequest) -> HttpResponse:
    """ "Test connection": one real one-token call (apps.llm.probe) to the model chosen in the form's select,
    saved or not; without a choice posted (no models listed), the model Ask uses now."""
    from apps.llm.probe import test_connection

    if "api_config" in request.POST:
        raw = request.POST["api_config"].strip()
        config = selectors.find_api_config(owner=request.user, config_id=int(raw)) if raw.isdigit() else None
        if raw and config is None:
            error = "That model is not one of yours (deleted meanwhile?): reload the page and choose again."
            return render(request, "setup/partials/probe_result.html", {"error": error})
        model = model_for_choice(config)
    else:
        model = ask_model(request.user)
    if model.config is None:
        if model.source == "api_config":
            reason = f"{model.label}. Fix it under Settings → Models."
        elif "api_config" in request.POST:
            reason = "“None” means no model: Ask quotes the best mail. Choose a model above to test it."
        else:
            reason = "Ask has no model: choose one above, or add one under Settings → Models first."
        return render(request, "setup/partials/probe_result.html", {"error": reason})
    result = test_connection(
        base_url=model.config.base_url,
        api_key=model.config.api_key,
        model=model.config.model,
        timeout=model.config.timeout,
        name=model.config.name,
    )
    return render(request, "setup/partials/probe_result.html", {"result": result})


# Shown in the browser (a card's link opens them); every other type is downloaded, so a saved HTML page or
# SVG never runs as part of this site.
INLINE_TYPES = {"application/pdf", "image/png", "image/jpeg", "image/gif", "image/webp", "text/plain"}


@require_GET
def library_file(request: HttpRequest, file_id: int) -> HttpResponse | FileResponse:
    """One of the user's library files, as a card in an answer links to it; another user's file is a 404."""
    from apps.ask.library import access_library_file
    from apps.organization.fsops import LibraryPathError, open_regular
    from apps.organization.roots import library_problem

    file = access_library_file(user=request.user, file_id=file_id)
    try:
        if library_problem(file.library):
            raise LibraryPathError(file.path)
        # Never through a link, and only a regular file with one name (organization.fsops.open_regular).
        handle = open_regular(file.library.root_path, file.path)
    except (LibraryPathError, OSError):
        # Yours, but gone from disk (moved or deleted outside the app): 410, not the 404 of another user's file.
        return HttpResponse(
            f"{file.path} is no longer in your library folder. Scan the library on the Organization page.",
            status=410,
            content_type="text/plain; charset=utf-8",
        )
    inline = file.mime_type in INLINE_TYPES
    response = FileResponse(
        handle,
        as_attachment=not inline,
        filename=file.name,
        content_type=file.mime_type if inline else "application/octet-stream",
    )
    response["X-Content-Type-Options"] = "nosniff"
    return response
