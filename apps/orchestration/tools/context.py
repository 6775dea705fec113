"""What every tool call knows: the run, its email and workspace, and who is calling (director or agent)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from apps.accounts.models import Message
from apps.orchestration.models import Agent, Conversation, Director, OrchestrationSettings, Run
from apps.workspaces.models import Workspace


@dataclass(slots=True)
class Actor:
    kind: str  # director | agent
    thread: Conversation
    agent: Agent | None = None

    @property
    def name(self) -> str:
        return self.agent.name if self.agent else ""

    def context_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"createdBy": self.kind, "conversationId": str(self.thread.pk)}
        if self.agent is not None:
            data["agent"] = {"id": str(self.agent.pk), "name": self.agent.name}
            data["agentId"] = str(self.agent.pk)
        return data


def orchestration_settings() -> OrchestrationSettings:
    current, _ = OrchestrationSettings.objects.get_or_create(pk=1)
    return current


@dataclass(slots=True)
class RunContext:
    run: Run
    director: Director
    message: Message
    workspace: Workspace
    # The owner's filesystem root (apps.orchestration.selectors.filesystem_root_for_owner); "" = no tools.
    virtual_root: str = ""
    director_thread: Conversation | None = None
    owner_id: int = 0
    email_summary: str = ""
    cache: dict[str, Any] = field(default_factory=dict)
    loaded_settings: OrchestrationSettings | None = None

    @property
    def settings(self) -> OrchestrationSettings:
        """Read on first use: a run that opens no agent session and reads no file never needs them."""
        if self.loaded_settings is None:
            self.loaded_settings = orchestration_settings()
        return self.loaded_settings

    @settings.setter
    def settings(self, value: OrchestrationSettings) -> None:
        self.loaded_settings = value

    def email_json(self) -> dict[str, Any]:
        message = self.message
        return {
            "id": str(message.pk),
            "subject": message.subject,
            "from": message.sender,
            "date": message.date.isoformat() if message.date else None,
        }

    def item_context(self, actor: Actor, tool: str | None = None) -> dict[str, Any]:
        data = {
            "email": self.email_json(),
            "director": {"id": str(self.director.pk), "name": self.director.name},
            **actor.context_json(),
        }
        if tool:
            data["tool"] = tool
        return data
