"""Writes of the setup app: wizard state, a director from a template, the global run settings."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from apps.llm.models import ApiConfig
from apps.orchestration import actions as orchestration_actions
from apps.orchestration import config_actions
from apps.orchestration.models import Director, FilesystemRoot, OrchestrationSettings
from apps.setup.director_templates import DirectorTemplate
from apps.setup.models import SetupState


def _state(owner: Any) -> SetupState:
    state, _ = SetupState.objects.get_or_create(owner=owner)
    return state


def dismiss_setup(*, owner: Any) -> SetupState:
    state = _state(owner)
    state.dismissed_at = timezone.now()
    state.save(update_fields=["dismissed_at"])
    return state


def complete_setup(*, owner: Any) -> SetupState:
    state = _state(owner)
    state.completed_at = state.completed_at or timezone.now()
    state.save(update_fields=["completed_at"])
    return state


def reopen_setup(*, owner: Any) -> SetupState:
    state = _state(owner)
    state.dismissed_at = None
    state.completed_at = None
    state.save(update_fields=["dismissed_at", "completed_at"])
    return state


def create_director_from_template(
    *, owner: Any, template: DirectorTemplate, name: str, api_config: ApiConfig | None
) -> Director:
    """The director, its prompt, and each agent with its own prompt and tools, in one transaction.
    A taken name raises orchestration_actions.DirectorNameTaken and nothing is stored."""
    with transaction.atomic():
        director = orchestration_actions.create_director(owner=owner, name=name, description=template.description)
        prompt = config_actions.create_prompt(
            owner=owner, name=f"{director.name}: director", messages=[("system", template.prompt)]
        )
        config_actions.update_director(director=director, prompt=prompt, api_config=api_config)
        for agent in template.agents:
            agent_prompt = config_actions.create_prompt(
                owner=owner, name=f"{director.name}: {agent.name}", messages=[("system", agent.prompt)]
            )
            config_actions.create_agent(
                director=director,
                name=agent.name,
                slug=agent.slug,
                summary=agent.summary,
                prompt=agent_prompt,
                allowed_tools=agent.tools,
            )
    return director


def set_filesystem_root(*, owner: Any, path: str) -> FilesystemRoot:
    return config_actions.set_filesystem_root(owner=owner, path=path)


def set_session_timeout(*, minutes: int) -> OrchestrationSettings:
    return config_actions.set_session_timeout(minutes=minutes)
