"""The first-run wizard at /setup/: mailbox → model → director from a template → filter → done.
Which steps are done is read from the user's data, so leaving halfway and coming back resumes."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.accounts import import_jobs
from apps.accounts.forms import ImportUploadForm, max_upload_bytes
from apps.llm import actions as llm_actions
from apps.orchestration import actions as orchestration_actions
from apps.orchestration.models import Director
from apps.routing import selectors as routing_selectors
from apps.routing.forms import FilterForm, TestFiltersForm
from apps.setup import actions, selectors
from apps.setup.director_templates import BY_KEY, TEMPLATES
from apps.setup.forms import PROVIDER_URLS, ApiConfigForm, TemplateDirectorForm


def _context(request: HttpRequest, step: str, **extra: Any) -> dict[str, Any]:
    progress = selectors.setup_progress(user=request.user)
    steps = [
        {"key": key, "title": selectors.STEP_TITLES[key], "done": progress.done[key], "current": key == step}
        for key in selectors.STEPS
    ]
    return {
        "step": step,
        "steps": steps,
        "progress": progress,
        "provider_urls": PROVIDER_URLS,
        # An upload from the mailbox step is imported by the worker: its progress shows on every step, and
        # the wizard moves on (to /setup/) when it finishes.
        "import_jobs": import_jobs.jobs_for_user(owner=request.user, limit=1),
        "import_jobs_then": reverse("setup:index"),
        **extra,
    }


@require_GET
def setup_index(request: HttpRequest) -> HttpResponse:
    progress = selectors.setup_progress(user=request.user)
    return redirect("setup:step", step="done" if progress.completed else progress.next_step)


def _latest_director(request: HttpRequest) -> Director | None:
    return selectors.list_directors_for_user(user=request.user).order_by("-created_at", "-pk").first()


@require_http_methods(["GET", "POST"])
def setup_step(request: HttpRequest, step: str) -> HttpResponse:
    if step not in selectors.STEPS:
        raise Http404("no such setup step")
    if step == "model":
        return _model_step(request)
    if step == "director":
        return _director_step(request)
    if step == "filter":
        return _filter_step(request)
    if request.method == "POST":
        return HttpResponse("Method not allowed", status=405)
    if step == "mailbox":
        accounts = list(selectors.accounts_for_user(user=request.user))
        context = _context(
            request,
            step,
            accounts=accounts,
            import_form=ImportUploadForm(owner=request.user),
            max_upload_bytes=max_upload_bytes(),
        )
        return render(request, "setup/pages/wizard.html", context)
    return render(
        request,
        "setup/pages/wizard.html",
        _context(
            request,
            step,
            results_url=selectors.optional_url("results:page") or selectors.optional_url("runs:list"),
            try_thread=selectors.latest_thread(user=request.user),
        ),
    )


def _model_step(request: HttpRequest) -> HttpResponse:
    configs = list(selectors.list_api_configs_for_user(user=request.user))
    if request.method == "POST":
        form = ApiConfigForm(request.POST)
        if form.is_valid():
            try:
                config = llm_actions.create_api_config(
                    owner=request.user, api_key=form.cleaned_data["api_key"], **form.changes()
                )
            except ValidationError as exc:
                form.add_error(None, exc)  # each message on its field (name clash, base URL refused)
            else:
                messages.success(request, f"Model “{config.name}” saved.")
                return redirect("setup:step", step="director")
        context = _context(request, "model", form=form, configs=configs)
        return render(request, "setup/pages/wizard.html", context, status=400)
    form = ApiConfigForm(initial=ApiConfigForm.initial_for_local(request.GET))
    return render(request, "setup/pages/wizard.html", _context(request, "model", form=form, configs=configs))


def _director_step(request: HttpRequest) -> HttpResponse:
    directors = list(selectors.list_directors_for_user(user=request.user))
    if request.method == "POST":
        form = TemplateDirectorForm(request.POST, owner=request.user)
        if form.is_valid():
            data = form.cleaned_data
            try:
                director = actions.create_director_from_template(
                    owner=request.user,
                    template=BY_KEY[data["template"]],
                    name=data["name"],
                    api_config=data["api_config"],
                )
            except orchestration_actions.DirectorNameTaken as exc:
                form.add_error("name", str(exc))
            else:
                messages.success(request, f"Director “{director.name}” created with {director.agents.count()} agents.")
                return redirect("setup:step", step="filter")
        context = _context(request, "director", form=form, templates=TEMPLATES, directors=directors)
        return render(request, "setup/pages/wizard.html", context, status=400)
    form = TemplateDirectorForm(owner=request.user)
    return render(
        request,
        "setup/pages/wizard.html",
        _context(request, "director", form=form, templates=TEMPLATES, directors=directors),
    )


def _filter_initial(director: Director | None) -> dict[str, Any]:
    if director is None:
        return {}
    template = next((t for t in TEMPLATES if t.description == director.description), None)
    initial: dict[str, Any] = {"director": director.pk}
    if template is not None and template.filter_pattern:
        initial.update(field=template.filter_field, regex=template.filter_pattern)
    return initial


def _filter_step(request: HttpRequest) -> HttpResponse:
    director = _latest_director(request)
    filters = list(routing_selectors.list_filters_for_user(user=request.user))
    if request.method == "POST":
        form = FilterForm(request.POST, owner=request.user, refuse_slow=True)  # a newcomer gets a safe first filter
        if form.is_valid() and (item := form.create_filter()) is not None:
            messages.success(
                request, f"Filter /{item.regex}/ on {item.get_field_display()} → {item.director.name} added."
            )
            return redirect("setup:step", step="filter")
        context = _context(request, "filter", form=form, filters=filters, test_form=TestFiltersForm(owner=request.user))
        return render(request, "setup/pages/wizard.html", context, status=400)
    form = FilterForm(owner=request.user, initial=_filter_initial(director))
    test_form = TestFiltersForm(owner=request.user, initial={"director": director.pk if director else None})
    return render(
        request,
        "setup/pages/wizard.html",
        _context(request, "filter", form=form, filters=filters, test_form=test_form),
    )


@require_POST
def setup_finish(request: HttpRequest) -> HttpResponse:
    actions.complete_setup(owner=request.user)
    return redirect("setup:step", step="done")


@require_POST
def setup_skip(request: HttpRequest) -> HttpResponse:
    actions.dismiss_setup(owner=request.user)
    messages.info(request, "Setup skipped. Reopen it any time from Settings.")
    return redirect("home")


@require_POST
def setup_reopen(request: HttpRequest) -> HttpResponse:
    actions.reopen_setup(owner=request.user)
    return redirect("setup:index")
