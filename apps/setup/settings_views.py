"""Settings pages at /settings/: the hub, API configs (models) with "Test connection", and the general
run settings (virtual root, agent session timeout). Directors/agents and filters: director_views.py and
filter_views.py."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.llm import actions as llm_actions
from apps.llm.discovery import candidates, discover_local_endpoints
from apps.llm.endpoints import host_problem
from apps.llm.probe import ProbeResult, measure_speed, test_connection
from apps.setup import actions, selectors
from apps.setup.forms import PROVIDER_URLS, ApiConfigForm, FilesystemRootForm, SessionTimeoutForm
from mailagent.crypto import SecretDecryptionError, reveal


@require_GET
def settings_index(request: HttpRequest) -> HttpResponse:
    context = {
        "progress": selectors.setup_progress(user=request.user),
        "config_count": selectors.list_api_configs_for_user(user=request.user).count(),
        "director_count": selectors.list_directors_for_user(user=request.user).count(),
        "ask_settings_url": selectors.optional_url("ask:settings"),
        # The pages that hold these forms (organization:settings and results:notifications only take POSTs).
        "organization_settings_url": selectors.optional_url("organization:page"),
        "notifications_url": selectors.optional_url("results:page"),
        "prompts_url": selectors.optional_url("prompts:list"),
        "memory_url": selectors.optional_url("runs:memories"),
        "fetcher_url": selectors.optional_url("routing:fetcher"),
    }
    return render(request, "setup/pages/settings_index.html", context)


# --- API configs -------------------------------------------------------------------------------------


def _models_page(request: HttpRequest, form: ApiConfigForm | None = None, status: int = 200) -> HttpResponse:
    context = {
        "configs": list(selectors.list_api_configs_for_user(user=request.user)),
        "form": form or ApiConfigForm(initial=ApiConfigForm.initial_for_local(request.GET)),
        "provider_urls": PROVIDER_URLS,
    }
    return render(request, "setup/pages/models.html", context, status=status)


@require_http_methods(["GET", "POST"])
def models_page(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return _models_page(request)
    form = ApiConfigForm(request.POST)
    if not form.is_valid():
        return _models_page(request, form, status=400)
    try:
        config = llm_actions.create_api_config(
            owner=request.user, api_key=form.cleaned_data["api_key"], **form.changes()
        )
    except ValidationError as exc:
        form.add_error(None, exc)  # each message on its field (name clash, base URL refused)
        return _models_page(request, form, status=400)
    messages.success(request, f"Model “{config.name}” added.")
    return redirect("settings:models")


@require_http_methods(["GET", "POST"])
def model_edit(request: HttpRequest, config_id: int) -> HttpResponse:
    config = selectors.access_api_config(user=request.user, config_id=config_id)
    if request.method == "POST":
        form = ApiConfigForm(request.POST, editing=config)
        if form.is_valid():
            try:
                llm_actions.update_api_config(config=config, api_key=form.cleaned_data["api_key"], **form.changes())
            except ValidationError as exc:
                form.add_error(None, exc)  # each message on its field (name clash, base URL refused)
            else:
                messages.success(request, f"Model “{config.name}” saved.")
                return redirect("settings:models")
        status = 400
    else:
        form = ApiConfigForm(initial=ApiConfigForm.initial_for(config), editing=config)
        status = 200
    context = {"config": config, "form": form, "provider_urls": PROVIDER_URLS}
    return render(request, "setup/pages/model_edit.html", context, status=status)


@require_POST
def model_delete(request: HttpRequest, config_id: int) -> HttpResponse:
    config = selectors.access_api_config(user=request.user, config_id=config_id)
    llm_actions.delete_api_config(config=config)
    messages.success(request, f"Model “{config.name}” deleted; directors that used it skip their runs until given one.")
    return redirect("settings:models")


@require_POST
def model_test(request: HttpRequest) -> HttpResponse:
    """ "Test connection" on the add/edit form (htmx): one real one-token call with what is typed; on the
    edit form a blank key means the stored one."""
    form = ApiConfigForm(request.POST)
    form.is_valid()  # partial input is fine: test what there is
    data = form.cleaned_data
    api_key = str(data.get("api_key") or "")
    config_id = request.POST.get("config_id", "")
    if config_id.isdigit() and not api_key:
        saved = selectors.access_api_config(user=request.user, config_id=int(config_id))
        if not _same_url(str(data.get("base_url") or ""), saved.base_url):
            # The stored key goes only where it was saved for: a changed URL would send it to any host named.
            error = (
                f"The saved key is only sent to the URL it was saved with ({saved.base_url}). To test another URL, "
                "type its key too."
            )
            return render(request, "setup/partials/probe_result.html", {"error": error})
        try:
            api_key = reveal(saved.api_key) or ""
        except SecretDecryptionError as exc:
            return _undecryptable(request, exc)
    if "base_url" in form.errors:
        return render(
            request,
            "setup/partials/probe_result.html",
            {"error": f"The base URL is not valid: {' '.join(str(e) for e in form.errors['base_url'])}"},
        )
    base_url, name = str(data.get("base_url") or ""), str(data.get("name") or "")
    if problem := host_problem(base_url, user=request.user):  # said before any connection is made
        return render(request, "setup/partials/probe_result.html", {"error": problem})
    timeout = float(data.get("timeout_seconds") or 20)
    model = str(data.get("model") or request.POST.get("model", ""))
    result = test_connection(base_url=base_url, api_key=api_key, model=model, timeout=timeout, name=name)
    context = _probe_context(result, base_url=base_url, api_key=api_key, model=model, timeout=timeout, name=name)
    return render(request, "setup/partials/probe_result.html", context)


def _same_url(typed: str, saved: str) -> bool:
    return typed.strip().rstrip("/") == saved.strip().rstrip("/")


def _undecryptable(request: HttpRequest, exc: SecretDecryptionError) -> HttpResponse:
    error = f"The stored API key cannot be decrypted ({exc}). Type the key again and save."
    return render(request, "setup/partials/probe_result.html", {"error": error})


@require_POST
def model_test_saved(request: HttpRequest, config_id: int) -> HttpResponse:
    config = selectors.access_api_config(user=request.user, config_id=config_id)
    if problem := host_problem(config.base_url, user=request.user):  # saved before the administrator's list
        return render(request, "setup/partials/probe_result.html", {"error": problem})
    try:
        api_key = reveal(config.api_key) or ""
    except SecretDecryptionError as exc:
        return _undecryptable(request, exc)
    timeout = float(config.timeout_seconds)
    result = test_connection(
        base_url=config.base_url, api_key=api_key, model=config.model, timeout=timeout, name=config.name
    )
    context = _probe_context(
        result, base_url=config.base_url, api_key=api_key, model=config.model, timeout=timeout, name=config.name
    )
    return render(request, "setup/partials/probe_result.html", context)


def _probe_context(
    result: ProbeResult, *, base_url: str, api_key: str, model: str, timeout: float, name: str
) -> dict[str, Any]:
    """The connection test's outcome and, when it worked, the speed of one short real generation."""
    context: dict[str, Any] = {"result": result}
    if result.ok:
        context["speed"] = measure_speed(base_url=base_url, api_key=api_key, model=model, timeout=timeout, name=name)
    return context


@require_GET
def local_models(request: HttpRequest) -> HttpResponse:
    """Model servers on this machine (htmx, loaded after the page): each model one click away from the form,
    on the page that asked (`?for=wizard` or Settings → Models)."""
    target = reverse("setup:step", args=["model"]) if request.GET.get("for") == "wizard" else reverse("settings:models")
    context = {
        "endpoints": discover_local_endpoints(),
        "target": target,
        "tried": [f"{label} {address}" for _, label, address in candidates()],
    }
    return render(request, "setup/partials/local_endpoints.html", context)


# --- general -----------------------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
def general(request: HttpRequest) -> HttpResponse:
    configured, effective = selectors.filesystem_root(user=request.user)
    root_form = FilesystemRootForm(initial={"path": configured})
    timeout_form = SessionTimeoutForm(initial={"session_timeout_minutes": selectors.session_timeout_minutes()})
    status = 200
    if request.method == "POST":
        if request.POST.get("section") == "root":
            if not request.user.is_superuser:
                raise PermissionDenied("Only an administrator can change the directory the tools may read.")
            root_form = FilesystemRootForm(request.POST)
            if root_form.is_valid():
                actions.set_filesystem_root(owner=request.user, path=root_form.cleaned_data["path"])
                messages.success(request, "Virtual root saved.")
                return redirect("settings:general")
        else:
            if not request.user.is_staff:
                raise PermissionDenied("Only staff can change the session timeout: it applies to every user.")
            timeout_form = SessionTimeoutForm(request.POST)
            if timeout_form.is_valid():
                actions.set_session_timeout(minutes=timeout_form.cleaned_data["session_timeout_minutes"])
                messages.success(request, "Session timeout saved.")
                return redirect("settings:general")
        status = 400
    context = {
        "root_form": root_form,
        "timeout_form": timeout_form,
        "configured_root": configured,
        "effective_root": effective,
        "session_timeout": selectors.session_timeout_minutes(),
    }
    return render(request, "setup/pages/general.html", context, status=status)
