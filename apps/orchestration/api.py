"""Orchestration's JSON API (spec sections 1-3, mounted in mailagent/urls.py):

- /api/diagnostics/unified: the user's fetch cycles → director threads → agent threads with their log entries
  interleaved by time, and details per node. Admin/debug data: it never doubles as results (those are
  workspace items), and only staff users see it (their own runs' trail), like the runtime diagnostics;
  everyone else gets 403.
- /api/conversations/byDirectorEmail, /api/settings.
- Configuration: /api/directors, /api/agents, /api/prompts, /api/prompt-templates, /api/memory (list, get,
  create, update, delete), owner-scoped like the Settings, Prompts and Memory pages (no staff rule there).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any, Literal

from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import Http404, HttpRequest
from django.utils.text import slugify
from ninja import Field, Query, Router, Schema, Status
from ninja.errors import HttpError

from apps.llm import selectors as llm_selectors
from apps.orchestration import actions, config_actions, selectors
from apps.orchestration.actions import MAX_MESSAGE_CHARS, MAX_PROMPT_MESSAGES, PROMPT_NEEDS_NAME, PromptInvalid
from apps.orchestration.models import Agent, Director, Memory, MemoryScope, Prompt
from apps.orchestration.tools.schemas import LIVE_TOOLS
from mailagent.api import ErrorOut, InvalidField

router = Router(tags=["diagnostics"])
MAX_DELETE = 10_000
STAFF_ONLY = "Diagnostics are for administrators (staff users); ask one to look, or see your runs under Runs"


def _require_staff(request: HttpRequest) -> None:
    if not request.user.is_staff:
        raise HttpError(403, STAFF_ONLY)


@router.get("", response={200: dict[str, Any], 403: ErrorOut})
def unified(request: HttpRequest, limit: int = 50) -> dict[str, Any]:
    _require_staff(request)
    return {"nodes": selectors.unified_tree(user=request.user, limit=max(1, min(limit, 500)))}


class DiagnosticsDeleteIn(Schema):
    # Optional for the schema, so a non-staff user hears 403 whatever the body; no ids deletes nothing.
    ids: list[str] = Field(
        default_factory=list, description="Entry ids as the tree gives them (log:<n>); other users' are skipped"
    )


class DiagnosticsDeletedOut(Schema):
    deleted: int = Field(description="How many entries were deleted")


def _log_pk(node_id: str) -> int | None:
    kind, _, raw = node_id.partition(":")
    return int(raw) if kind == "log" and raw.isdigit() else None


@router.post("/delete", response={200: DiagnosticsDeletedOut, 403: ErrorOut, 422: ErrorOut})
def delete_entries(request: HttpRequest, payload: DiagnosticsDeleteIn) -> dict[str, Any]:
    """Delete log entries (the Diagnostics page's bulk delete); runs, transcripts and results stay. Declared
    before /{node_id}: its path would otherwise take "delete" for a node id."""
    _require_staff(request)
    if len(payload.ids) > MAX_DELETE:
        raise HttpError(422, f"At most {MAX_DELETE} entries at a time")
    pks = [pk for pk in map(_log_pk, payload.ids) if pk is not None]
    if len(pks) != len(payload.ids):
        raise HttpError(422, "Only log entries (ids like log:12) can be deleted")
    return {"deleted": actions.delete_diagnostics_entries(user=request.user, entry_ids=pks)}


@router.get("/{node_id}", response={200: dict[str, Any], 403: ErrorOut})
def unified_node(request: HttpRequest, node_id: str) -> dict[str, Any]:
    _require_staff(request)
    return selectors.unified_node(user=request.user, node_id=node_id)


@router.delete("/{node_id}", response={200: DiagnosticsDeletedOut, 403: ErrorOut, 404: ErrorOut})
def delete_entry(request: HttpRequest, node_id: str) -> dict[str, Any]:
    """Delete one log entry of the user's own runs (404 for another user's, or one already gone)."""
    _require_staff(request)
    pk = _log_pk(node_id)
    deleted = actions.delete_diagnostics_entries(user=request.user, entry_ids=[pk]) if pk is not None else 0
    if not deleted:
        raise HttpError(404, "No such diagnostics entry")
    return {"deleted": deleted}


conversations_router = Router(tags=["conversations"])


class ConversationOut(Schema):
    id: int
    sessionId: str
    kind: str
    runId: int
    directorId: int
    directorName: str
    emailId: int
    workspaceId: int | None
    status: str
    finalized: bool
    created: str
    lastActiveAt: str
    endedAt: str | None
    messages: list[dict[str, Any]]


@conversations_router.get("/byDirectorEmail", response={200: ConversationOut, 404: ErrorOut})
def by_director_email(request: HttpRequest, directorId: int, emailId: int) -> dict[str, Any]:
    """The director thread of one email under one director, with the workspace that holds its results."""
    thread = selectors.director_thread_for_email(user=request.user, director_id=directorId, email_id=emailId)
    return {
        "id": thread.pk,
        "sessionId": thread.session_id,
        "kind": thread.kind,
        "runId": thread.run_id,
        "directorId": thread.director_id,
        "directorName": thread.director.name,
        "emailId": thread.run.message_id,
        "workspaceId": selectors.workspace_id_for_run(user=request.user, run_id=thread.run_id),
        "status": thread.status,
        "finalized": thread.finalized,
        "created": thread.created_at.isoformat(),
        "lastActiveAt": thread.last_active_at.isoformat(),
        "endedAt": thread.ended_at.isoformat() if thread.ended_at else None,
        "messages": thread.transcript,
    }


settings_router = Router(tags=["settings"])
SESSION_TIMEOUT_MAX_MINUTES = 24 * 60


class SettingsOut(Schema):
    sessionTimeoutMinutes: int
    virtualRoot: str
    effectiveVirtualRoot: str
    canEditSessionTimeout: bool
    canEditVirtualRoot: bool


class SettingsIn(Schema):
    sessionTimeoutMinutes: int | None = None
    virtualRoot: str | None = None


def _settings_out(user: Any) -> dict[str, Any]:
    configured = selectors.configured_filesystem_root(owner_id=user.pk)
    return {
        "sessionTimeoutMinutes": selectors.session_timeout_minutes(),
        "virtualRoot": configured,
        "effectiveVirtualRoot": selectors.filesystem_root_for_owner(owner_id=user.pk),
        "canEditSessionTimeout": bool(user.is_staff),
        "canEditVirtualRoot": bool(user.is_superuser),
    }


@settings_router.get("", response={200: SettingsOut})
def get_settings(request: HttpRequest) -> dict[str, Any]:
    """Spec §3.2.8: the agent session timeout (for everyone) and this user's virtual root."""
    return _settings_out(request.user)


@settings_router.put("", response={200: SettingsOut, 403: ErrorOut, 422: ErrorOut})
def put_settings(request: HttpRequest, payload: SettingsIn) -> dict[str, Any]:
    """Change the session timeout (staff: it applies to every user) and/or the virtual root (superusers: it
    decides which files the tools may read)."""
    if payload.sessionTimeoutMinutes is not None:
        if not request.user.is_staff:
            raise HttpError(403, "Only staff can change the session timeout: it applies to every user")
        if not 1 <= payload.sessionTimeoutMinutes <= SESSION_TIMEOUT_MAX_MINUTES:
            raise HttpError(422, f"sessionTimeoutMinutes must be between 1 and {SESSION_TIMEOUT_MAX_MINUTES}")
    if payload.virtualRoot is not None:
        if not request.user.is_superuser:
            raise HttpError(403, "Only an administrator (superuser) can change the directory the tools may read")
        if payload.virtualRoot.strip() and not Path(payload.virtualRoot.strip()).is_absolute():
            raise HttpError(422, "virtualRoot must be an absolute path, e.g. /srv/mailagent/files (or empty)")
    with transaction.atomic():
        if payload.sessionTimeoutMinutes is not None:
            config_actions.set_session_timeout(minutes=payload.sessionTimeoutMinutes)
        if payload.virtualRoot is not None:
            config_actions.set_filesystem_root(owner=request.user, path=payload.virtualRoot)
    return _settings_out(request.user)


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


def _invalid(exc: ValidationError) -> InvalidField:
    field, messages = next(iter(exc.message_dict.items()))
    return InvalidField(API_FIELDS.get(field, field), messages[0])


def _not_null(data: dict[str, Any], *names: str) -> None:
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


def _owned_director(user: Any, director_id: int, field: str = "directorId") -> Director:
    try:
        return selectors.access_director(user=user, director_id=director_id)
    except Http404:
        raise InvalidField(field, f"You have no director {director_id}") from None


def _owned_agent(user: Any, agent_id: int) -> Agent:
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
        raise _invalid(exc) from None
    return Status(201, _director_out(selectors.access_director(user=user, director_id=director.pk)))


@directors_router.get("/{director_id}", response={200: DirectorOut})
def get_director(request: HttpRequest, director_id: int) -> dict[str, Any]:
    return _director_out(selectors.access_director(user=request.user, director_id=director_id))


@directors_router.put("/{director_id}", response={200: DirectorOut})
def update_director(request: HttpRequest, director_id: int, payload: DirectorPatch) -> dict[str, Any]:
    """Change the fields given; the others keep their value (promptId/apiConfigId null clear them)."""
    user = request.user
    director = selectors.access_director(user=user, director_id=director_id)
    data = payload.dict(exclude_unset=True)
    _not_null(data, "name", "description", "enabled", "imprint", "accountIds", "memoryAccess", "stepLimit")
    changes: dict[str, Any] = {}
    for api_name, model_name in (
        ("name", "name"),
        ("description", "description"),
        ("enabled", "enabled"),
        ("imprint", "imprint"),
        ("memoryAccess", "memory_access"),
        ("stepLimit", "step_limit"),
    ):
        if api_name in data:
            changes[model_name] = data[api_name]
    if "name" in changes and not changes["name"].strip():
        raise InvalidField("name", "A director needs a name")
    if "promptId" in data:
        changes["prompt"] = _owned_prompt(user, data["promptId"])
    if "apiConfigId" in data:
        changes["api_config"] = _owned_api_config(user, data["apiConfigId"])
    accounts = _owned_accounts(user, data["accountIds"]) if "accountIds" in data else None
    try:
        config_actions.update_director(director=director, accounts=accounts, **changes)
    except ValidationError as exc:
        raise _invalid(exc) from None
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
    director = _owned_director(user, payload.directorId)
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
        raise _invalid(exc) from None
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
    _not_null(data, "name", "slug", "summary", "imprint", "tools", "stepLimit", "enabled")
    changes: dict[str, Any] = {}
    for api_name, model_name in (
        ("name", "name"),
        ("slug", "slug"),
        ("summary", "summary"),
        ("imprint", "imprint"),
        ("tools", "allowed_tools"),
        ("stepLimit", "step_limit"),
        ("enabled", "enabled"),
    ):
        if api_name in data:
            changes[model_name] = data[api_name]
    if "name" in changes and not changes["name"].strip():
        raise InvalidField("name", "An agent needs a name")
    if "promptId" in data:
        changes["prompt"] = _owned_prompt(user, data["promptId"])
    if "apiConfigId" in data:
        changes["api_config"] = _owned_api_config(user, data["apiConfigId"])
    try:
        config_actions.update_agent(agent=agent, **changes)
    except ValidationError as exc:
        raise _invalid(exc) from None
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


def _prompt_invalid(exc: PromptInvalid) -> InvalidField:
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
            raise _prompt_invalid(exc) from None
        return Status(201, _one(request, prompt.pk))

    @router.get("/{prompt_id}", response={200: PromptOut}, operation_id=f"get_{kind}", summary=f"One {noun}")
    def get_prompt(request: HttpRequest, prompt_id: int) -> dict[str, Any]:
        return _one(request, prompt_id)

    @router.put("/{prompt_id}", response={200: PromptOut}, operation_id=f"update_{kind}", summary=f"Change a {noun}")
    def update_prompt(request: HttpRequest, prompt_id: int, payload: PromptPatch) -> dict[str, Any]:
        prompt = selectors.access_prompt(user=request.user, prompt_id=prompt_id, is_template=is_template)
        data = payload.dict(exclude_unset=True)
        _not_null(data, "name", "messages")
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
            raise _prompt_invalid(exc) from None
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

memory_router = Router(tags=["memory"])
ScopeName = Literal["global", "shared", "local"]
ScopeFilter = Literal["", "global", "shared", "local"]
MEMORY_LIST_MAX = 500
SCOPE_HELP = (
    "global: every director; shared: one director and all its agents (directorId); local: one agent "
    "(agentId) or the director itself (directorId)"
)


MEMORY_QUERY = Query("", max_length=1000, description="Words that must all occur in the content (any case)")
MEMORY_SCOPE = Query("", description="Only this scope (empty: all)")
MEMORY_DIRECTOR = Query(None, description="Only this director's shared and local memories")
MEMORY_LIMIT = Query(100, ge=1, le=MEMORY_LIST_MAX, description="At most this many memories")
MEMORY_OFFSET = Query(0, ge=0, le=10**9, description="Skip this many (the next page)")


class MemoryOut(Schema):
    id: int
    content: str
    scope: str = Field(description=SCOPE_HELP)
    timestamp: dt.datetime = Field(description="Last change")
    createdAt: dt.datetime
    directorId: int | None
    directorName: str
    agentId: int | None
    agentName: str
    tags: list[Any]


class MemoryListOut(Schema):
    total: int = Field(description="How many memories match (the page holds at most `limit` of them)")
    memories: list[MemoryOut]


class MemoryIn(Schema):
    content: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)
    scope: ScopeName = Field(description=SCOPE_HELP)
    directorId: int | None = None
    agentId: int | None = None
    tags: list[str] = Field(default_factory=list, max_length=50)


class MemoryPatch(Schema):
    content: str | None = Field(None, min_length=1, max_length=MAX_MESSAGE_CHARS)
    scope: ScopeName | None = Field(None, description=SCOPE_HELP)
    directorId: int | None = None
    agentId: int | None = None
    tags: list[str] | None = Field(None, max_length=50)


def _memory_out(memory: Memory) -> dict[str, Any]:
    return {
        "id": memory.pk,
        "content": str(memory.content),
        "scope": memory.scope,
        "timestamp": memory.updated_at,
        "createdAt": memory.created_at,
        "directorId": memory.director_id,
        "directorName": memory.director.name if memory.director else "",
        "agentId": memory.agent_id,
        "agentName": memory.agent.name if memory.agent else "",
        "tags": memory.tags if isinstance(memory.tags, list) else [],
    }


@memory_router.get("", response={200: MemoryListOut})
def list_memories(
    request: HttpRequest,
    q: str = MEMORY_QUERY,
    scope: ScopeFilter = MEMORY_SCOPE,
    directorId: int | None = MEMORY_DIRECTOR,
    limit: int = MEMORY_LIMIT,
    offset: int = MEMORY_OFFSET,
) -> dict[str, Any]:
    """Your memories, newest change first (spec §3.2.6: a searchable table with scope switching)."""
    found = selectors.list_memories_for_user(user=request.user, query=q, scope=scope, director_id=directorId)
    total = len(found) if isinstance(found, list) else found.count()
    return {"total": total, "memories": [_memory_out(memory) for memory in found[offset : offset + limit]]}


@memory_router.post("", response={201: MemoryOut})
def create_memory(request: HttpRequest, payload: MemoryIn) -> Status:
    """A memory: global (no director), shared (directorId) or local (agentId, or directorId for the
    director's own)."""
    user = request.user
    director = _owned_director(user, payload.directorId) if payload.directorId is not None else None
    agent = _owned_agent(user, payload.agentId) if payload.agentId is not None else None
    try:
        memory = actions.create_memory(
            owner=user, content=payload.content, scope=payload.scope, director=director, agent=agent, tags=payload.tags
        )
    except ValidationError as exc:
        raise _invalid(exc) from None
    return Status(201, _memory_out(selectors.access_memory(user=user, memory_id=memory.pk)))


@memory_router.get("/{memory_id}", response={200: MemoryOut})
def get_memory(request: HttpRequest, memory_id: int) -> dict[str, Any]:
    return _memory_out(selectors.access_memory(user=request.user, memory_id=memory_id))


@memory_router.put("/{memory_id}", response={200: MemoryOut})
def update_memory(request: HttpRequest, memory_id: int, payload: MemoryPatch) -> dict[str, Any]:
    """Change the fields given. Switching the scope drops what the new scope has no use for (a global memory
    leaves its director, a shared one its agent) unless directorId/agentId are given too."""
    user = request.user
    memory = selectors.access_memory(user=user, memory_id=memory_id)
    data = payload.dict(exclude_unset=True)
    _not_null(data, "content", "scope", "tags")
    scope = data.get("scope", memory.scope)
    if "agentId" in data:
        agent = _owned_agent(user, data["agentId"]) if data["agentId"] is not None else None
    else:
        agent = None if scope != MemoryScope.LOCAL else memory.agent
    if "directorId" in data:
        director = _owned_director(user, data["directorId"]) if data["directorId"] is not None else None
    elif "agentId" in data and agent is not None:
        director = None  # the agent's own director
    else:
        director = None if scope == MemoryScope.GLOBAL else memory.director
    try:
        actions.edit_memory(
            memory=memory,
            content=data.get("content", str(memory.content)),
            scope=scope,
            director=director,
            agent=agent,
            tags=data.get("tags", memory.tags if isinstance(memory.tags, list) else []),
        )
    except ValidationError as exc:
        raise _invalid(exc) from None
    return _memory_out(selectors.access_memory(user=user, memory_id=memory_id))


@memory_router.delete("/{memory_id}", response={204: None})
def delete_memory(request: HttpRequest, memory_id: int) -> Status:
    actions.delete_memory(memory=selectors.access_memory(user=request.user, memory_id=memory_id))
    return Status(204, None)
