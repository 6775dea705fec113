"""Directors and their agents on /settings/directors/: edit, add from a template or blank, agents with a
prompt picker, tools as checkboxes with their descriptions, and ordering (drag, keyboard, or buttons)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.orchestration import actions as orchestration_actions
from apps.orchestration import config_actions
from apps.orchestration.models import Agent, Director
from apps.setup import actions, selectors
from apps.setup.director_templates import BY_KEY, TEMPLATES
from apps.setup.forms import AgentForm, DirectorSettingsForm, TemplateDirectorForm


def _add_errors(form: Any, exc: ValidationError) -> None:
    for field, errors in exc.message_dict.items():
        form.add_error(field if field in form.fields else None, errors)


@require_GET
def directors(request: HttpRequest) -> HttpResponse:
    context = {
        "directors": list(selectors.list_directors_for_user(user=request.user)),
        "form": TemplateDirectorForm(owner=request.user, initial={"name": ""}),
        "templates": TEMPLATES,
        "has_models": selectors.list_api_configs_for_user(user=request.user).exists(),
    }
    return render(request, "setup/pages/directors.html", context)


@require_POST
def director_add(request: HttpRequest) -> HttpResponse:
    form = TemplateDirectorForm(request.POST, owner=request.user)
    if form.is_valid():
        data = form.cleaned_data
        try:
            director = actions.create_director_from_template(
                owner=request.user, template=BY_KEY[data["template"]], name=data["name"], api_config=data["api_config"]
            )
        except orchestration_actions.DirectorNameTaken as exc:
            form.add_error("name", str(exc))
        else:
            messages.success(request, f"Director “{director.name}” created.")
            return redirect("settings:director", director_id=director.pk)
    context = {
        "directors": list(selectors.list_directors_for_user(user=request.user)),
        "form": form,
        "templates": TEMPLATES,
        "has_models": True,
    }
    return render(request, "setup/pages/directors.html", context, status=400)


def _director_initial(director: Director) -> dict[str, Any]:
    return {
        "name": director.name,
        "description": director.description,
        "enabled": director.enabled,
        "api_config": director.api_config_id,
        "prompt": director.prompt_id,
        "imprint": director.imprint,
        "accounts": [a.pk for a in director.accounts.all()],
        "memory_access": director.memory_access,
        "step_limit": director.step_limit,
    }


def _director_page(
    request: HttpRequest, director: Director, form: DirectorSettingsForm, agent_form: AgentForm, status: int = 200
) -> HttpResponse:
    context = {
        "director": director,
        "form": form,
        "agent_form": agent_form,
        "agents": list(director.agents.all()),
        "playground_url": selectors.optional_url("runs:playground"),
    }
    return render(request, "setup/pages/director_edit.html", context, status=status)


@require_http_methods(["GET", "POST"])
def director_edit(request: HttpRequest, director_id: int) -> HttpResponse:
    director = selectors.access_director(user=request.user, director_id=director_id)
    agent_form = AgentForm(owner=request.user, prefix="agent")
    if request.method == "GET":
        form = DirectorSettingsForm(owner=request.user, initial=_director_initial(director))
        return _director_page(request, director, form, agent_form)
    form = DirectorSettingsForm(request.POST, owner=request.user)
    if form.is_valid():
        data = dict(form.cleaned_data)
        accounts = data.pop("accounts")
        try:
            config_actions.update_director(director=director, accounts=accounts, **data)
        except ValidationError as exc:
            _add_errors(form, exc)
        else:
            messages.success(request, f"Director “{director.name}” saved.")
            return redirect("settings:director", director_id=director.pk)
    return _director_page(request, director, form, agent_form, status=400)


@require_POST
def director_delete(request: HttpRequest, director_id: int) -> HttpResponse:
    director = selectors.access_director(user=request.user, director_id=director_id)
    config_actions.delete_director(director=director)
    messages.success(request, f"Director “{director.name}” deleted with its agents and filters.")
    return redirect("settings:directors")


@require_POST
def agent_add(request: HttpRequest, director_id: int) -> HttpResponse:
    director = selectors.access_director(user=request.user, director_id=director_id)
    agent_form = AgentForm(request.POST, owner=request.user, prefix="agent")
    if agent_form.is_valid():
        try:
            agent = config_actions.create_agent(director=director, **agent_form.cleaned_data)
        except ValidationError as exc:
            _add_errors(agent_form, exc)
        else:
            messages.success(request, f"Agent “{agent.name}” added.")
            return redirect("settings:director", director_id=director.pk)
    form = DirectorSettingsForm(owner=request.user, initial=_director_initial(director))
    return _director_page(request, director, form, agent_form, status=400)


def _agent_initial(agent: Agent) -> dict[str, Any]:
    return {
        "name": agent.name,
        "slug": agent.slug,
        "summary": agent.summary,
        "prompt": agent.prompt_id,
        "imprint": agent.imprint,
        "allowed_tools": agent.allowed_tools if isinstance(agent.allowed_tools, list) else [],
        "api_config": agent.api_config_id,
        "step_limit": agent.step_limit,
        "enabled": agent.enabled,
    }


@require_http_methods(["GET", "POST"])
def agent_edit(request: HttpRequest, agent_id: int) -> HttpResponse:
    agent = selectors.access_agent(user=request.user, agent_id=agent_id)
    status = 200
    if request.method == "POST":
        form = AgentForm(request.POST, owner=request.user)
        if form.is_valid():
            try:
                config_actions.update_agent(agent=agent, **form.cleaned_data)
            except ValidationError as exc:
                _add_errors(form, exc)
            else:
                messages.success(request, f"Agent “{agent.name}” saved.")
                return redirect("settings:director", director_id=agent.director_id)
        status = 400
    else:
        form = AgentForm(owner=request.user, initial=_agent_initial(agent))
    context = {
        "agent": agent,
        "form": form,
        "tool_descriptions": dict(selectors.tool_choices()),
        "playground_url": selectors.optional_url("runs:playground"),
    }
    return render(request, "setup/pages/agent_edit.html", context, status=status)


@require_POST
def agent_delete(request: HttpRequest, agent_id: int) -> HttpResponse:
    agent = selectors.access_agent(user=request.user, agent_id=agent_id)
    config_actions.delete_agent(agent=agent)
    messages.success(request, f"Agent “{agent.name}” deleted.")
    return redirect("settings:director", director_id=agent.director_id)


def _ids(values: list[str]) -> list[int]:
    return [int(v) for v in values if v.isdigit()]


@require_POST
def agents_order(request: HttpRequest, director_id: int) -> HttpResponse:
    """New agent order: `order` ids in sequence (drag and drop / keyboard), or `move` + `direction`."""
    director = selectors.access_director(user=request.user, director_id=director_id)
    current = [a.pk for a in director.agents.all()]
    ordered = _ids(request.POST.getlist("order")) or move_in(
        current, request.POST.get("move", ""), request.POST.get("direction", "")
    )
    agents = config_actions.reorder_agents(director=director, ordered_ids=ordered)
    if request.htmx:  # type: ignore[attr-defined]
        return render(request, "setup/partials/agent_list.html", {"director": director, "agents": agents})
    return redirect("settings:director", director_id=director.pk)


def move_in(ids: list[int], moved: str, direction: str) -> list[int]:
    """`ids` with `moved` one place up or down (unchanged when it is not there or already at the end)."""
    if not moved.isdigit() or int(moved) not in ids:
        return ids
    index = ids.index(int(moved))
    target = index - 1 if direction == "up" else index + 1
    if 0 <= target < len(ids):
        ids[index], ids[target] = ids[target], ids[index]
    return ids
