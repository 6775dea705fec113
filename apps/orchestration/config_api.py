"""Orchestration's configuration API (spec sections 1-3, mounted in mailagent/urls.py): /api/directors,
/api/agents, /api/prompts, /api/prompt-templates (list, get, create, update, delete), owner-scoped like the
Settings and Prompts pages (no staff rule there). The helpers that check references are shared with
memory_api.py.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest
from django.utils.text import slugify
from ninja import Field, Router, Schema, Status

from apps.llm import selectors as llm_selectors
from apps.orchestration import actions, config_actions, selectors
from apps.orchestration.config_actions import MAX_MESSAGE_CHARS, MAX_PROMPT_MESSAGES, PROMPT_NEEDS_NAME, PromptInvalid
from apps.orchestration.models import Agent, Director, Prompt
from apps.orchestration.tools.schemas import LIVE_TOOLS
from mailagent.api import ErrorOut, InvalidField

# --- configuration: directors, agents, prompts, prompt templates, memories ---------------------------------
#
# Writes go through config_actions (memories: actions); references in a body (promptId, apiConfigId,
# accountIds, directorId, agentId) must name the user's own objects, else 422 naming the field. Another
# user's object in the path is 404, like everywhere. An update is partial: fields left out keep their value.

directors_router = Router(tags=["directors"])
agents_router = Router(tags=["agents"])

# The API's names for the model fields an action's ValidationError may name.
API_FIELDS = {
    "name": "name",
    "slug": "slug",
    "allowed_tools": "tools",
    "api_config": "apiConfigId",
    "prompt": "promptId",
    "director": "directorId",
    "agent": "agentId",
    "content": "content",
    "scope": "scope",
    "__all__": "",
}


def invalid_field(exc: ValidationError) -> InvalidField:
    field, messages = next(iter(exc.message_dict.items()))
    return InvalidField(API_FIELDS.get(field, field), messages[0])


def refuse_nulls(data: dict[str, Any], *names: str) -> None:
    for name in names:
        if name in data and data[name] is None:
            raise InvalidField(name, f"{name} cannot be null: leave it out to keep the current value")


def _owned_prompt(user: Any, prompt_id: int | None) -> Prompt | None:
    if prompt_id is None:
        return None
    try:
        return selectors.access_prompt(user=user, prompt_id=prompt_id)
    except Http404:
        raise InvalidField("promptId", f"You have no prompt {prompt_id}") from None


def _owned_api_config(user: Any, config_id: int | None) -> Any:
    if config_id is None:
        return None
    try:
        return llm_selectors.access_api_config(user=user, config_id=config_id)
    except Http404:
        raise InvalidField("apiConfigId", f"You have no API config {config_id}") from None


def _owned_accounts(user: Any, account_ids: list[int]) -> list[Any]:
    wanted = list(dict.fromkeys(account_ids))
    accounts = list(selectors.accounts_of_user(user=user, account_ids=wanted))
    missing = sorted(set(wanted) - {account.pk for account in accounts})
    if missing:
        raise InvalidField("accountIds", f"You have no account {', '.join(map(str, missing))}")
    return accounts


def owned_director(user: Any, director_id: int, field: str = "directorId") -> Director:
    try:
        return selectors.access_director(user=user, director_id=director_id)
    except Http404:
        raise InvalidField(field, f"You have no director {director_id}") from None


def owned_agent(user: Any, agent_id: int) -> Agent:
    try:
        return selectors.access_agent(user=user, agent_id=agent_id)
    except Http404:
        raise InvalidField("agentId", f"You have no agent {agent_id}") from None


ToolName = Literal[LIVE_TOOLS]  # type: ignore[valid-type]
TOOLS_HELP = "Tools the agent may call besides the workspace tools (always on): " + ", ".join(LIVE_TOOLS)
SLUG_PATTERN = r"^[-a-zA-Z0-9_]+$"


class AgentOut(Schema):
    id: int
    directorId: int
    name: str
    slug: str = Field(description="The director calls the agent as the tool agent__<slug>")
    summary: str
    order: int = Field(description="Position among the director's agents (0 first)")
    enabled: bool
    promptId: int | None
    imprint: str
    apiConfigId: int | None = Field(description="The agent's own model; null: the director's")
    stepLimit: int
    tools: list[str]


class DirectorOut(Schema):
    id: int
    name: str
    description: str
    enabled: bool
    apiConfigId: int | None = Field(description="The model the director runs on; null: its runs are skipped")
    promptId: int | None
    imprint: str
    accountIds: list[int] = Field(description="Accounts the calendar/to-do tools may use; empty: all of yours")
    memoryAccess: bool = Field(description="The director and its agents may read and write shared and global memories")
    stepLimit: int
    createdAt: dt.datetime
    agents: list[AgentOut]


class DirectorIn(Schema):
    name: str = Field(min_length=1, max_length=100)
    description: str = Field("", max_length=2000)
    enabled: bool = True
    promptId: int | None = None
    imprint: str = Field("", max_length=MAX_MESSAGE_CHARS)
    apiConfigId: int | None = Field(None, description="Required to run: without it the director's runs are skipped")
    accountIds: list[int] = Field(default_factory=list, max_length=1000)
    memoryAccess: bool = True
    stepLimit: int = Field(12, ge=1, le=100)


class DirectorPatch(Schema):
    name: str | None = Field(None, min_length=1, max_length=100)
    description: str | None = Field(None, max_length=2000)
    enabled: bool | None = None
    promptId: int | None = Field(None, description="null: the built-in prompt only")
    imprint: str | None = Field(None, max_length=MAX_MESSAGE_CHARS)
    apiConfigId: int | None = Field(None, description="null: no model (the director's runs are skipped)")
    accountIds: list[int] | None = Field(None, max_length=1000)
    memoryAccess: bool | None = None
    stepLimit: int | None = Field(None, ge=1, le=100)


class AgentOrderIn(Schema):
    agentIds: list[int] = Field(default_factory=list, description="Agent ids in the new order; omitted ones follow")


def _agent_out(agent: Agent) -> dict[str, Any]:
    return {
        "id": agent.pk,
        "directorId": agent.director_id,
        "name": agent.name,
        "slug": agent.slug,
        "summary": agent.summary,
        "order": agent.order,
        "enabled": agent.enabled,
        "promptId": agent.prompt_id,
        "imprint": agent.imprint,
        "apiConfigId": agent.api_config_id,
        "stepLimit": agent.step_limit,
        "tools": list(agent.allowed_tools or []),
    }


def _director_out(director: Any) -> dict[str, Any]:
    agents = sorted(director.agents.all(), key=lambda agent: (agent.order, agent.pk))
    return {
        "id": director.pk,
        "name": director.name,
        "description": director.description,
        "enabled": director.enabled,
        "apiConfigId": director.api_config_id,
        "promptId": director.prompt_id,
        "imprint": director.imprint,
        "accountIds": sorted(account.pk for account in director.accounts.all()),
        "memoryAccess": director.memory_access,
        "stepLimit": director.step_limit,
        "createdAt": director.created_at,
        "agents": [_agent_out(agent) for agent in agents],
    }


@directors_router.get("", response={200: list[DirectorOut]})
def list_directors(request: HttpRequest) -> list[dict[str, Any]]:
    return [_director_out(director) for director in selectors.list_directors_with_agents(user=request.user)]


@directors_router.post("", response={201: DirectorOut})
def create_director(request: HttpRequest, payload: DirectorIn) -> Status:
    """A new director (spec §3.2.3); add agents with POST /api/agents and filters with POST /api/filters."""
    user = request.user
    try:
        director = config_actions.create_configured_director(
            owner=user,
            name=payload.name,
            description=payload.description,
            enabled=payload.enabled,
            prompt=_owned_prompt(user, payload.promptId),
            imprint=payload.imprint,
            api_config=_owned_api_config(user, payload.apiConfigId),
            accounts=_owned_accounts(user, payload.accountIds),
            memory_access=payload.memoryAccess,
            step_limit=payload.stepLimit,
        )
    except ValidationError as exc:
        raise invalid_field(exc) from None
    return Status(201, _director_out(selectors.access_director(user=user, director_id=director.pk)))


@directors_router.get("/{director_id}", response={200: DirectorOut})
def get_director(request: HttpRequest, director_id: int) -> dict[str, Any]:
    return _director_out(selectors.access_director(user=request.user, director_id=director_id))


def _changes(user: Any, data: dict[str, Any], names: dict[str, str], *, nameless: str) -> dict[str, Any]:
    """A patch's fields as the model's keyword arguments: API names mapped to model names, a blank name
    refused, and promptId/apiConfigId resolved to the user's own prompt and API config (null clears them)."""
    changes = {model_name: data[api_name] for api_name, model_name in names.items() if api_name in data}
    if "name" in changes and not changes["name"].strip():
        raise InvalidField("name", nameless)
    if "promptId" in data:
        changes["prompt"] = _owned_prompt(user, data["promptId"])
    if "apiConfigId" in data:
        changes["api_config"] = _owned_api_config(user, data["apiConfigId"])
    return changes


@directors_router.put("/{director_id}", response={200: DirectorOut})
def update_director(request: HttpRequest, director_id: int, payload: DirectorPatch) -> dict[str, Any]:
    """Change the fields given; the others keep their value (promptId/apiConfigId null clear them)."""
    user = request.user
    director = selectors.access_director(user=user, director_id=director_id)
    data = payload.dict(exclude_unset=True)
    refuse_nulls(data, "name", "description", "enabled", "imprint", "accountIds", "memoryAccess", "stepLimit")
    changes = _changes(
        user,
        data,
        {
            "name": "name",
            "description": "description",
            "enabled": "enabled",
            "imprint": "imprint",
            "memoryAccess": "memory_access",
            "stepLimit": "step_limit",
        },
        nameless="A director needs a name",
    )
    accounts = _owned_accounts(user, data["accountIds"]) if "accountIds" in data else None
    try:
        config_actions.update_director(director=director, accounts=accounts, **changes)
    except ValidationError as exc:
        raise invalid_field(exc) from None
    return _director_out(selectors.access_director(user=user, director_id=director_id))


@directors_router.delete("/{director_id}", response={204: None})
def delete_director(request: HttpRequest, director_id: int) -> Status:
    """Delete the director with its agents, filters and runs (like the Settings page's Delete)."""
    config_actions.delete_director(director=selectors.access_director(user=request.user, director_id=director_id))
    return Status(204, None)


@directors_router.put("/{director_id}/agents/order", response={200: DirectorOut})
def order_agents(request: HttpRequest, director_id: int, payload: AgentOrderIn) -> dict[str, Any]:
    """Reorder the director's agents (spec §3.2.6 drag-and-drop): listed ids first, the rest after them."""
    director = selectors.access_director(user=request.user, director_id=director_id)
    config_actions.reorder_agents(director=director, ordered_ids=payload.agentIds)
    return _director_out(selectors.access_director(user=request.user, director_id=director_id))


class AgentIn(Schema):
    directorId: int
    name: str = Field(min_length=1, max_length=100)
    slug: str = Field(
        "",
        max_length=57,
        pattern=r"^[-a-zA-Z0-9_]*$",
        description="Letters, digits, - and _; empty: made from the name. Unique among the director's agents",
    )
    summary: str = Field("", max_length=300, description="What the director is told this agent does")
    promptId: int | None = None
    imprint: str = Field("", max_length=MAX_MESSAGE_CHARS)
    tools: list[ToolName] = Field(default_factory=list, description=TOOLS_HELP)
    apiConfigId: int | None = Field(None, description="The agent's own model; null: the director's")
    stepLimit: int = Field(8, ge=1, le=100)
    enabled: bool = True


class AgentPatch(Schema):
    name: str | None = Field(None, min_length=1, max_length=100)
    slug: str | None = Field(None, min_length=1, max_length=57, pattern=SLUG_PATTERN)
    summary: str | None = Field(None, max_length=300)
    promptId: int | None = Field(None, description="null: the built-in prompt only")
    imprint: str | None = Field(None, max_length=MAX_MESSAGE_CHARS)
    tools: list[ToolName] | None = Field(None, description=TOOLS_HELP)
    apiConfigId: int | None = Field(None, description="null: the director's model")
    stepLimit: int | None = Field(None, ge=1, le=100)
    enabled: bool | None = None


@agents_router.get("", response={200: list[AgentOut]})
def list_agents(request: HttpRequest, directorId: int | None = None) -> list[dict[str, Any]]:
    """Your agents, each director's in its order; `directorId` keeps one director's."""
    return [_agent_out(agent) for agent in selectors.list_agents_for_user(user=request.user, director_id=directorId)]


@agents_router.post("", response={201: AgentOut})
def create_agent(request: HttpRequest, payload: AgentIn) -> Status:
    """A new agent, placed after the director's other agents (reorder: PUT /api/directors/{id}/agents/order)."""
    user = request.user
    director = owned_director(user, payload.directorId)
    slug = payload.slug or slugify(payload.name)[:57]
    if not slug:
        raise InvalidField("slug", "Give the agent a slug (letters, digits, - and _): its name makes none")
    if not payload.name.strip():
        raise InvalidField("name", "An agent needs a name")
    try:
        agent = config_actions.create_agent(
            director=director,
            name=payload.name,
            slug=slug,
            summary=payload.summary,
            prompt=_owned_prompt(user, payload.promptId),
            imprint=payload.imprint,
            allowed_tools=payload.tools,
            api_config=_owned_api_config(user, payload.apiConfigId),
            step_limit=payload.stepLimit,
            enabled=payload.enabled,
        )
    except ValidationError as exc:
        raise invalid_field(exc) from None
    return Status(201, _agent_out(agent))


@agents_router.get("/{agent_id}", response={200: AgentOut})
def get_agent(request: HttpRequest, agent_id: int) -> dict[str, Any]:
    return _agent_out(selectors.access_agent(user=request.user, agent_id=agent_id))


@agents_router.put("/{agent_id}", response={200: AgentOut})
def update_agent(request: HttpRequest, agent_id: int, payload: AgentPatch) -> dict[str, Any]:
    """Change the fields given; the others keep their value (promptId/apiConfigId null clear them)."""
    user = request.user
    agent = selectors.access_agent(user=user, agent_id=agent_id)
    data = payload.dict(exclude_unset=True)
    refuse_nulls(data, "name", "slug", "summary", "imprint", "tools", "stepLimit", "enabled")
    changes = _changes(
        user,
        data,
        {
            "name": "name",
            "slug": "slug",
            "summary": "summary",
            "imprint": "imprint",
            "tools": "allowed_tools",
            "stepLimit": "step_limit",
            "enabled": "enabled",
        },
        nameless="An agent needs a name",
    )
    try:
        config_actions.update_agent(agent=agent, **changes)
    except ValidationError as exc:
        raise invalid_field(exc) from None
    return _agent_out(selectors.access_agent(user=user, agent_id=agent_id))


@agents_router.delete("/{agent_id}", response={204: None})
def delete_agent(request: HttpRequest, agent_id: int) -> Status:
    """Delete the agent; the director's other agents keep their order."""
    config_actions.delete_agent(agent=selectors.access_agent(user=request.user, agent_id=agent_id))
    return Status(204, None)


# --- prompts and prompt templates (the Prompts playground's rows) -----------------------------------------

RoleName = Literal["system", "user", "assistant", "tool"]


class PromptMessageIn(Schema):
    role: RoleName
    content: str = Field(
        description="May use the variables {{email}}, {{email.subject}}, {{email.from}}, {{email.to}}, "
        "{{email.date}}, {{email.body}}, {{director.name}}, {{agent.name}}, {{memories}}, {{today}}"
    )


class PromptMessageOut(Schema):
    role: str
    content: str


class PromptUserOut(Schema):
    kind: Literal["director", "agent"]
    id: int
    name: str


class PromptOut(Schema):
    id: int
    name: str
    isTemplate: bool
    messages: list[PromptMessageOut] = Field(description="ChatML messages in order (spec §3.2.5)")
    usedBy: list[PromptUserOut] = Field(description="The directors and agents that run with this prompt")
    createdAt: dt.datetime


class PromptIn(Schema):
    name: str = Field(min_length=1, max_length=150)
    messages: list[PromptMessageIn] = Field(min_length=1, max_length=MAX_PROMPT_MESSAGES)


class PromptPatch(Schema):
    name: str | None = Field(None, min_length=1, max_length=150)
    messages: list[PromptMessageIn] | None = Field(
        None, min_length=1, max_length=MAX_PROMPT_MESSAGES, description="Replaces all the messages"
    )


def _prompts_out(prompts: list[Prompt]) -> list[dict[str, Any]]:
    users = selectors.prompt_users(prompt_ids=[prompt.pk for prompt in prompts])
    return [
        {
            "id": prompt.pk,
            "name": prompt.name,
            "isTemplate": prompt.is_template,
            "messages": [
                {"role": message.role, "content": message.content}
                for message in sorted(prompt.messages.all(), key=lambda m: (m.order, m.pk))
            ],
            "usedBy": [{"kind": u.kind, "id": u.id, "name": u.name} for u in users.get(prompt.pk, [])],
            "createdAt": prompt.created_at,
        }
        for prompt in prompts
    ]


def _promptinvalid_field(exc: PromptInvalid) -> InvalidField:
    name_problem = exc.problems[0] == PROMPT_NEEDS_NAME
    return InvalidField("name" if name_problem else "messages", "; ".join(exc.problems))


def _prompt_router(*, is_template: bool) -> Router:
    """/api/prompts and /api/prompt-templates: the same rows, told apart by is_template (a template's id under
    /api/prompts is 404, and the other way round)."""
    kind = "prompt_template" if is_template else "prompt"
    noun = "prompt template" if is_template else "prompt"
    router = Router(tags=["prompt-templates" if is_template else "prompts"])

    def _one(request: HttpRequest, prompt_id: int) -> dict[str, Any]:
        prompt = selectors.access_prompt(user=request.user, prompt_id=prompt_id, is_template=is_template)
        return _prompts_out([prompt])[0]

    @router.get("", response={200: list[PromptOut]}, operation_id=f"list_{kind}s", summary=f"Your {noun}s")
    def list_prompts(request: HttpRequest) -> list[dict[str, Any]]:
        return _prompts_out(list(selectors.list_prompts_with_messages(user=request.user, is_template=is_template)))

    @router.post("", response={201: PromptOut}, operation_id=f"create_{kind}", summary=f"A new {noun}")
    def create_prompt(request: HttpRequest, payload: PromptIn) -> Status:
        try:
            prompt = config_actions.create_checked_prompt(
                owner=request.user,
                name=payload.name,
                messages=[(m.role, m.content) for m in payload.messages],
                is_template=is_template,
            )
        except PromptInvalid as exc:
            raise _promptinvalid_field(exc) from None
        return Status(201, _one(request, prompt.pk))

    @router.get("/{prompt_id}", response={200: PromptOut}, operation_id=f"get_{kind}", summary=f"One {noun}")
    def get_prompt(request: HttpRequest, prompt_id: int) -> dict[str, Any]:
        return _one(request, prompt_id)

    @router.put("/{prompt_id}", response={200: PromptOut}, operation_id=f"update_{kind}", summary=f"Change a {noun}")
    def update_prompt(request: HttpRequest, prompt_id: int, payload: PromptPatch) -> dict[str, Any]:
        prompt = selectors.access_prompt(user=request.user, prompt_id=prompt_id, is_template=is_template)
        data = payload.dict(exclude_unset=True)
        refuse_nulls(data, "name", "messages")
        messages = (
            [(m["role"], m["content"]) for m in data["messages"]]
            if "messages" in data
            else [(m.role, m.content) for m in sorted(prompt.messages.all(), key=lambda m: (m.order, m.pk))]
        )
        try:
            actions.save_prompt(
                prompt=prompt, name=data.get("name", prompt.name), is_template=is_template, messages=messages
            )
        except PromptInvalid as exc:
            raise _promptinvalid_field(exc) from None
        return _one(request, prompt_id)

    @router.delete(
        "/{prompt_id}",
        response={204: None, 409: ErrorOut},
        operation_id=f"delete_{kind}",
        summary=f"Delete a {noun} no director or agent uses",
    )
    def delete_prompt(request: HttpRequest, prompt_id: int) -> Status:
        prompt = selectors.access_prompt(user=request.user, prompt_id=prompt_id, is_template=is_template)
        try:
            config_actions.delete_prompt(prompt=prompt)
        except config_actions.PromptInUse as exc:
            return Status(409, {"error": str(exc)})
        return Status(204, None)

    return router


prompts_router = _prompt_router(is_template=False)
prompt_templates_router = _prompt_router(is_template=True)


# --- memories (spec §3.2.4: {id, content, scope, timestamp}; the Memory page's table) ------------------------
