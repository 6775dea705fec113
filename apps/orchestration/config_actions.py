"""Writes for the configuration users edit on the settings pages and the JSON API: prompts, directors, agents
(API configs: apps.llm.actions; run and memory writes: actions.py). Typed, keyword-only; a name clash raises a
ValidationError on that field."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from apps.llm.models import ApiConfig
from apps.orchestration.models import (
    ROLE_CHOICES,
    Agent,
    Director,
    FilesystemRoot,
    OrchestrationSettings,
    Prompt,
    PromptMessage,
)
from apps.orchestration.prompts import resolve_blocks, unknown_variables
from apps.orchestration.tools.schemas import LIVE_TOOLS

DIRECTOR_FIELDS = {"name", "description", "enabled", "prompt", "imprint", "api_config", "memory_access", "step_limit"}
AGENT_FIELDS = {"name", "slug", "summary", "prompt", "imprint", "api_config", "step_limit", "enabled", "allowed_tools"}


def _check_fields(changes: dict[str, Any], allowed: set[str]) -> None:
    unknown = set(changes) - allowed
    if unknown:
        raise ValueError(f"cannot change {', '.join(sorted(unknown))}")


def _check_tools(tools: Iterable[str]) -> list[str]:
    names = list(dict.fromkeys(tools))
    unknown = [name for name in names if name not in LIVE_TOOLS]
    if unknown:
        raise ValidationError({"allowed_tools": f"Unknown tools: {', '.join(unknown)}"})
    return names


def create_prompt(*, owner: Any, name: str, messages: Sequence[tuple[str, str]], is_template: bool = False) -> Prompt:
    with transaction.atomic():
        prompt = Prompt.objects.create(owner=owner, name=name.strip()[:150], is_template=is_template)
        PromptMessage.objects.bulk_create(
            [
                PromptMessage(prompt=prompt, order=order, role=role, content=content)
                for order, (role, content) in enumerate(messages)
            ]
        )
    return prompt


# --- prompt checks (the playground's save and the JSON API) ------------------------------------------------

MAX_PROMPT_MESSAGES = 50
MAX_MESSAGE_CHARS = 50_000
PROMPT_NEEDS_NAME = "the prompt needs a name"


class PromptInvalid(ValueError):
    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def check_prompt_messages(messages: Sequence[tuple[str, str]]) -> list[str]:
    """What is wrong with a message list, in words (empty when it can be saved)."""
    roles = {value for value, _label in ROLE_CHOICES}
    problems: list[str] = []
    if len(messages) > MAX_PROMPT_MESSAGES:
        problems.append(f"a prompt has at most {MAX_PROMPT_MESSAGES} messages")
    for number, (role, content) in enumerate(messages, start=1):
        if role not in roles:
            problems.append(f"message {number}: unknown role {role!r}")
        if not content.strip():
            problems.append(f"message {number} is empty")
        if len(content) > MAX_MESSAGE_CHARS:
            problems.append(f"message {number} is longer than {MAX_MESSAGE_CHARS} characters")
        unknown = unknown_variables(content)
        if unknown:
            names = ", ".join("{{" + name + "}}" for name in unknown)
            problems.append(f"message {number}: unknown variable{'s' if len(unknown) > 1 else ''} {names}")
    if all(role in roles for role, _content in messages):
        # A tool message the model would never be sent (no call before it) is refused like an unknown variable.
        for number, block in enumerate(resolve_blocks(list(messages), {}), start=1):
            if block.message is None:
                problems.append(f"message {number} (tool) is {block.note}")
    return problems


def create_checked_prompt(
    *, owner: Any, name: str, messages: Sequence[tuple[str, str]], is_template: bool = False
) -> Prompt:
    """A new prompt from user input (the JSON API): checked like the playground's save (PromptInvalid when a
    role, a variable or a length is wrong, or the name is blank); nothing is stored then."""
    problems = check_prompt_messages(messages)
    if not name.strip():
        problems.insert(0, PROMPT_NEEDS_NAME)
    if problems:
        raise PromptInvalid(problems)
    return create_prompt(owner=owner, name=name, messages=messages, is_template=is_template)


class PromptInUse(ValueError):
    pass


def delete_prompt(*, prompt: Prompt) -> None:
    """Delete a prompt no director or agent uses (PromptInUse names them otherwise: deleting it would leave
    them running on the built-in prompt without anyone choosing that)."""
    users = [f"director “{name}”" for name in Director.objects.filter(prompt=prompt).values_list("name", flat=True)]
    users += [
        f"agent “{name}” of “{director}”"
        for name, director in Agent.objects.filter(prompt=prompt).values_list("name", "director__name")
    ]
    if users:
        raise PromptInUse(f"The prompt is used by {', '.join(users)}: choose another prompt there first")
    prompt.delete()


def create_configured_director(
    *,
    owner: Any,
    name: str,
    description: str = "",
    enabled: bool = True,
    prompt: Prompt | None = None,
    imprint: str = "",
    api_config: ApiConfig | None = None,
    accounts: Iterable[Any] = (),
    memory_access: bool = True,
    step_limit: int = 12,
) -> Director:
    """A director with all its settings at once (the JSON API); a blank or taken name is a ValidationError on
    `name`."""
    if not name.strip():
        raise ValidationError({"name": "A director needs a name."})
    try:
        with transaction.atomic():
            director = Director.objects.create(
                owner=owner,
                name=name.strip(),
                description=description.strip(),
                enabled=enabled,
                prompt=prompt,
                imprint=imprint.strip(),
                api_config=api_config,
                memory_access=memory_access,
                step_limit=step_limit,
            )
            director.accounts.set(list(accounts))
    except IntegrityError:
        raise ValidationError({"name": f"You already have a director named “{name.strip()}”."}) from None
    return director


def update_director(*, director: Director, accounts: Iterable[Any] | None = None, **changes: Any) -> Director:
    _check_fields(changes, DIRECTOR_FIELDS)
    for name, value in changes.items():
        setattr(director, name, value.strip() if isinstance(value, str) else value)
    try:
        with transaction.atomic():
            if changes:
                director.save(update_fields=list(changes))
            if accounts is not None:
                director.accounts.set(list(accounts))
    except IntegrityError:
        raise ValidationError({"name": f"You already have a director named “{director.name}”."}) from None
    return director


def delete_director(*, director: Director) -> None:
    director.delete()


def create_agent(
    *,
    director: Director,
    name: str,
    slug: str,
    summary: str = "",
    prompt: Prompt | None = None,
    imprint: str = "",
    allowed_tools: Iterable[str] = (),
    api_config: ApiConfig | None = None,
    step_limit: int = 8,
    enabled: bool = True,
) -> Agent:
    tools = _check_tools(allowed_tools)
    last = director.agents.order_by("-order").first()
    try:
        with transaction.atomic():
            return Agent.objects.create(
                director=director,
                order=(last.order + 1) if last else 0,
                name=name.strip(),
                slug=slug.strip(),
                summary=summary.strip(),
                prompt=prompt,
                imprint=imprint,
                allowed_tools=tools,
                api_config=api_config,
                step_limit=step_limit,
                enabled=enabled,
            )
    except IntegrityError:
        raise ValidationError({"slug": f"{director.name} already has an agent “{slug}”."}) from None


def update_agent(*, agent: Agent, **changes: Any) -> Agent:
    _check_fields(changes, AGENT_FIELDS)
    if "allowed_tools" in changes:
        changes["allowed_tools"] = _check_tools(changes["allowed_tools"])
    for name, value in changes.items():
        setattr(agent, name, value.strip() if isinstance(value, str) and name != "imprint" else value)
    try:
        with transaction.atomic():
            agent.save(update_fields=list(changes))
    except IntegrityError:
        raise ValidationError({"slug": f"{agent.director.name} already has an agent “{agent.slug}”."}) from None
    return agent


def delete_agent(*, agent: Agent) -> None:
    agent.delete()


def reorder_agents(*, director: Director, ordered_ids: Sequence[int]) -> list[Agent]:
    """Agents of this director in the given order; ids of other directors' agents are ignored, agents left
    out keep their relative order after the listed ones."""
    agents = {agent.pk: agent for agent in director.agents.all()}
    listed = [agents[pk] for pk in dict.fromkeys(ordered_ids) if pk in agents]
    rest = sorted((a for a in agents.values() if a not in listed), key=lambda a: (a.order, a.pk))
    changed = []
    for position, agent in enumerate([*listed, *rest]):
        if agent.order != position:
            agent.order = position
            changed.append(agent)
    if changed:
        Agent.objects.bulk_update(changed, ["order"])
    return [*listed, *rest]


def set_filesystem_root(*, owner: Any, path: str) -> FilesystemRoot:
    """The directory this owner's filesystem tools may read (callers check the user is a superuser)."""
    root, _ = FilesystemRoot.objects.get_or_create(owner=owner)
    root.path = path.strip()
    root.save(update_fields=["path"])
    return root


def set_session_timeout(*, minutes: int) -> OrchestrationSettings:
    """The agent session inactivity timeout, for every user (callers check the user is staff)."""
    current, _ = OrchestrationSettings.objects.get_or_create(pk=1)
    current.session_timeout_minutes = minutes
    current.save(update_fields=["session_timeout_minutes"])
    return current
