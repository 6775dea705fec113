"""The prompt playground (OpenAI Playground "Chat" style): a page per prompt with its message blocks, a
live preview of the resolved messages against one of the user's emails, and "Try it" against a model.

Thin views: parse → access selector (404 for other users' rows) → one action → page or partial.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from apps.llm import selectors as llm_selectors
from apps.orchestration import actions, selectors
from apps.orchestration.config_actions import create_prompt
from apps.orchestration.models import ROLE_CHOICES, Prompt
from apps.orchestration.prompts import (
    KNOWN_VARIABLES,
    TOOL_CALL_FORM,
    preview_variables,
    resolve_blocks,
    unknown_variables,
)


def _posted_blocks(request: HttpRequest) -> list[tuple[str, str]]:
    roles, contents = request.POST.getlist("role"), request.POST.getlist("content")
    return [(role, content.replace("\r\n", "\n")) for role, content in zip(roles, contents, strict=False)]


def _block_rows(blocks: list[tuple[str, str]]) -> list[dict[str, Any]]:
    return [{"role": role, "content": content, "unknown": unknown_variables(content)} for role, content in blocks]


def _int(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() else None


def _page(
    request: HttpRequest, prompt: Prompt, blocks: list[tuple[str, str]], *, problems: list[str], status: int = 200
) -> HttpResponse:
    context = {
        "prompt": prompt,
        "blocks": _block_rows(blocks),
        "roles": [value for value, _label in ROLE_CHOICES],
        "variables": KNOWN_VARIABLES,
        "emails": selectors.preview_emails(user=request.user),
        "api_configs": llm_selectors.api_configs_for_user(user=request.user),
        "problems": problems,
        "tool_call_form": TOOL_CALL_FORM,
        "events": selectors.prompt_try_events(prompt=prompt),
    }
    return render(request, "orchestration/pages/prompt_playground.html", context, status=status)


@require_GET
def prompt_list(request: HttpRequest) -> HttpResponse:
    return render(
        request, "orchestration/pages/prompts.html", {"prompts": selectors.prompts_for_user(user=request.user)}
    )


@require_POST
def prompt_create(request: HttpRequest) -> HttpResponse:
    name = request.POST.get("name", "").strip()
    if not name:
        messages.error(request, "Give the new prompt a name.")
        return redirect("prompts:list")
    prompt = create_prompt(owner=request.user, name=name, messages=[("system", "You are a helpful assistant.")])
    return redirect("prompts:playground", prompt_id=prompt.pk)


@require_GET
def playground(request: HttpRequest, prompt_id: int) -> HttpResponse:
    prompt = selectors.access_prompt(user=request.user, prompt_id=prompt_id)
    blocks = [(m.role, m.content) for m in prompt.messages.all()]
    return _page(request, prompt, blocks, problems=[])


@require_POST
def playground_save(request: HttpRequest, prompt_id: int) -> HttpResponse:
    prompt = selectors.access_prompt(user=request.user, prompt_id=prompt_id)
    blocks = _posted_blocks(request)
    try:
        actions.save_prompt(
            prompt=prompt,
            name=request.POST.get("name", ""),
            is_template=request.POST.get("is_template") == "on",
            messages=blocks,
        )
    except actions.PromptInvalid as exc:
        # Nothing was stored: the page comes back with the user's unsaved blocks and what to fix.
        return _page(request, prompt, blocks, problems=exc.problems, status=400)
    messages.success(request, "Prompt saved.")
    return redirect("prompts:playground", prompt_id=prompt.pk)


def _resolved(request: HttpRequest, prompt: Prompt) -> dict[str, Any]:
    email = selectors.preview_email(user=request.user, message_id=_int(request.POST.get("email")))
    variables = preview_variables(email, director_name=selectors.director_name_for_prompt(prompt=prompt))
    blocks = _posted_blocks(request)
    # As the engine sends them (prompts.render_prompt): a call block and its tool results as tool_calls.
    resolved = resolve_blocks(blocks, variables)
    rows = [
        {
            "role": block.role,
            "content": block.content,
            "unknown": unknown_variables(raw),
            "sent": block.message is not None,
            "note": block.note,
        }
        for block, (_role, raw) in zip(resolved, blocks, strict=True)
    ]
    return {"email": email, "rows": rows, "messages": [b.message for b in resolved if b.message is not None]}


@require_POST
def playground_preview(request: HttpRequest, prompt_id: int) -> HttpResponse:
    prompt = selectors.access_prompt(user=request.user, prompt_id=prompt_id)
    return render(request, "orchestration/partials/playground_preview.html", _resolved(request, prompt))


@require_POST
def playground_try(request: HttpRequest, prompt_id: int) -> HttpResponse:
    prompt = selectors.access_prompt(user=request.user, prompt_id=prompt_id)
    config_id = _int(request.POST.get("api_config"))
    context: dict[str, Any] = {"result": None, "problem": ""}
    resolved = _resolved(request, prompt)
    if config_id is None:
        context["problem"] = "Choose a model configuration to try the prompt with."
    elif not resolved["messages"]:
        context["problem"] = "There is nothing to send: add a system, user or assistant message."
    else:
        config = llm_selectors.access_api_config(user=request.user, config_id=config_id)
        context["config"] = config
        context["result"] = actions.try_prompt(prompt=prompt, api_config=config, messages=resolved["messages"])
    return render(request, "orchestration/partials/playground_reply.html", context)


@require_POST
def prompt_duplicate(request: HttpRequest, prompt_id: int) -> HttpResponse:
    prompt = selectors.access_prompt(user=request.user, prompt_id=prompt_id)
    copy = actions.duplicate_prompt(prompt=prompt, as_template=request.POST.get("as_template") == "on")
    messages.success(request, f"Saved as “{copy.name}”.")
    return redirect("prompts:playground", prompt_id=copy.pk)
