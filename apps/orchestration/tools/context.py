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


@dataclass(slots=True)
class RunContext:
    run: Run
    director: Director
    message: Message
    workspace: Workspace
    settings: OrchestrationSettings
    # The owner's filesystem root (apps.orchestration.selectors.filesystem_root_for_owner); "" = no tools.
    virtual_root: str = ""
    director_thread: Conversation | None = None
    owner_id: int = 0
    email_summary: str = ""
    cache: dict[str, Any] = field(default_factory=dict)

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
