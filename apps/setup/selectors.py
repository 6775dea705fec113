"""Reads for the wizard and the settings pages; every access_* is owner-scoped (404 otherwise)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Prefetch, QuerySet
from django.shortcuts import get_object_or_404
from django.urls import NoReverseMatch, reverse

from apps.accounts.models import MailAccount, Thread
from apps.llm.models import ApiConfig
from apps.orchestration.models import Agent, Director, FilesystemRoot, OrchestrationSettings, Prompt
from apps.orchestration.selectors import default_filesystem_root
from apps.orchestration.tools.schemas import DESCRIPTIONS, LIVE_TOOLS
from apps.routing.models import Filter
from apps.setup.models import SetupState

STEPS = ("mailbox", "model", "director", "filter", "done")
STEP_TITLES = {
    "mailbox": "Connect a mailbox",
    "model": "Add a model",
    "director": "Create a director",
    "filter": "Route mail to it",
    "done": "Done",
}


@dataclass(frozen=True, slots=True)
class SetupProgress:
    has_mailbox: bool
    has_model: bool
    has_director: bool
    has_filter: bool
    dismissed: bool
    completed: bool

    @property
    def done(self) -> dict[str, bool]:
        return {
            "mailbox": self.has_mailbox,
            "model": self.has_model,
            "director": self.has_director,
            "filter": self.has_filter,
            "done": self.completed,
        }

    @property
    def next_step(self) -> str:
        return next((step for step in STEPS[:-1] if not self.done[step]), "done")

    @property
    def show(self) -> bool:
        """The wizard is offered (checklist on home, redirect from /setup/) until finished or skipped."""
        return not (self.completed or self.dismissed)


def setup_progress(*, user: Any) -> SetupProgress:
    state = SetupState.objects.filter(owner=user).first()
    return SetupProgress(
        has_mailbox=MailAccount.objects.filter(owner=user).exists(),
        has_model=ApiConfig.objects.filter(owner=user).exists(),
        has_director=Director.objects.filter(owner=user, api_config__isnull=False).exists(),
        has_filter=Filter.objects.filter(director__owner=user).exists(),
        dismissed=bool(state and state.dismissed_at),
        completed=bool(state and state.completed_at),
    )


def list_api_configs_for_user(*, user: Any) -> QuerySet[ApiConfig]:
    return ApiConfig.objects.filter(owner=user).annotate(director_count=Count("directors", distinct=True))


def access_api_config(*, user: Any, config_id: int) -> ApiConfig:
    return get_object_or_404(ApiConfig, pk=config_id, owner=user)


def list_directors_for_user(*, user: Any) -> QuerySet[Director]:
    return (
        Director.objects.filter(owner=user)
        .select_related("api_config", "prompt")
        .prefetch_related(Prefetch("agents", queryset=Agent.objects.order_by("order", "pk")))
        .annotate(filter_count=Count("filters", distinct=True))
    )


def access_director(*, user: Any, director_id: int) -> Director:
    return get_object_or_404(
        Director.objects.select_related("api_config", "prompt").prefetch_related(
            Prefetch("agents", queryset=Agent.objects.select_related("prompt", "api_config").order_by("order", "pk")),
            "accounts",
        ),
        pk=director_id,
        owner=user,
    )


def access_agent(*, user: Any, agent_id: int) -> Agent:
    return get_object_or_404(
        Agent.objects.select_related("director", "prompt", "api_config"), pk=agent_id, director__owner=user
    )


def prompts_for_user(*, user: Any) -> QuerySet[Prompt]:
    return Prompt.objects.filter(owner=user)


def accounts_for_user(*, user: Any) -> QuerySet[MailAccount]:
    return MailAccount.objects.filter(owner=user).order_by("name")


def tool_choices() -> list[tuple[str, str]]:
    """The tools an agent may be allowed, with the description the model sees (workspace tools are always on)."""
    return [(name, DESCRIPTIONS[name][0]) for name in LIVE_TOOLS]


def filesystem_root(*, user: Any) -> tuple[str, str]:
    """(configured path, effective directory)."""
    row = FilesystemRoot.objects.filter(owner=user).first()
    configured = row.path if row else ""
    return configured, configured or str(default_filesystem_root(owner_id=user.pk))


def session_timeout_minutes() -> int:
    current = OrchestrationSettings.objects.filter(pk=1).first()
    return current.session_timeout_minutes if current else 15


def latest_thread(*, user: Any) -> Thread | None:
    """The user's most recent conversation (any account): where the wizard's last step sends them to try a
    director on mail they already have."""
    return (
        Thread.objects.filter(account__owner=user, last_message_at__isnull=False)
        .order_by("-last_message_at", "-pk")
        .first()
    )


def optional_url(name: str, *args: Any) -> str:
    """A page other apps provide (results, prompt playground, Ask settings) when it exists, else ''."""
    try:
        return reverse(name, args=args)
    except NoReverseMatch:
        return ""
