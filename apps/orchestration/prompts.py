"""Prompts as ChatML message lists with {{variables}}; the built-in guidance every director/agent gets."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django.utils import timezone

from apps.accounts.models import Message
from apps.orchestration.models import Prompt

VARIABLE = re.compile(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_.]*)\s*\}\}")
BODY_CHARS = 20_000

DIRECTOR_GUIDANCE = (
    "You are the director for one email. You are in control: delegate to your agents with their "
    "agent__<slug> tools (continue a conversation by passing its sessionId), use the other tools as needed, "
    "and leave the deliverables in the shared workspace with workspace_add_item (drafts, analyses, "
    "summaries as text/markdown). Nothing is sent or deleted by you: a person reviews the workspace. "
    "When the result is something the user should see, or you need their decision, call inbox_push once: docs "
    "pointing at the items you made (give them a path), comments in markdown, and for a decision ask "
    "{question, options}; their answer comes back to you as a user message. "
    "Answer without a tool call when you are done."
)
AGENT_GUIDANCE = (
    "You are the agent “{name}”, working for a director on one email. Do what the director asks, use your "
    "tools where they help, put anything worth keeping in the shared workspace, then answer the director."
)


def _people(items: Any) -> str:
    if not isinstance(items, list):
        return ""
    parts = []
    for item in items:
        if isinstance(item, Mapping):
            name, address = item.get("name") or "", item.get("address") or ""
            parts.append(f"{name} <{address}>" if name and address else str(address or name))
    return ", ".join(parts)


def email_variables(message: Message) -> dict[str, str]:
    body = (message.body_text or "")[:BODY_CHARS]
    date = message.date.isoformat() if message.date else ""
    fields = {
        "email.subject": message.subject,
        "email.from": message.sender,
        "email.to": _people(message.to),
        "email.cc": _people(message.cc),
        "email.date": date,
        "email.body": body,
        "email.id": str(message.pk),
    }
    header = [f"From: {fields['email.from']}", f"To: {fields['email.to']}"]
    if fields["email.cc"]:
        header.append(f"Cc: {fields['email.cc']}")
    header += [f"Date: {date}", f"Subject: {message.subject}"]
    # Names only (a full row would load each attachment's extracted text too), and no query at all for a
    # message stored without attachments (the store sets has_attachments from the rows it creates).
    attachments = (
        [name for name in message.attachments.values_list("filename", flat=True) if name]
        if message.has_attachments
        else []
    )
    if attachments:
        header.append(f"Attachments: {', '.join(attachments)}")
    fields["email"] = "\n".join(header) + "\n\n" + body
    return fields


def render_text(text: str, variables: Mapping[str, str]) -> str:
    return VARIABLE.sub(lambda m: variables.get(m.group(1), m.group(0)), text)


PromptRows = list[tuple[str, str]]


def prompt_rows(prompt: Prompt | None) -> PromptRows:
    """(role, content) of a prompt's messages in order: read once per run, then rendered and inspected."""
    if prompt is None:
        return []
    return list(prompt.messages.order_by("order", "pk").values_list("role", "content"))


def variables_used(rows: PromptRows) -> set[str]:
    return {match.group(1) for _role, content in rows for match in VARIABLE.finditer(content)}


def render_prompt(rows: PromptRows, variables: Mapping[str, str]) -> list[dict[str, Any]]:
    return [
        {"role": role, "content": render_text(content, variables)}
        for role, content in rows
        if role in ("system", "user", "assistant")  # a lone tool message without its call would be invalid
    ]


def base_variables(message: Message, **extra: str) -> dict[str, str]:
    return {**email_variables(message), "today": timezone.localdate().isoformat(), **extra}


def mentions_email(used: set[str]) -> bool:
    """Whether the prompt's variables (variables_used) put the email in it: an {{email}} or {{email.…}}
    variable, not the word: "For each client email … {{director.name}}" does not (the first-run template's
    director and psychologist never saw it)."""
    return any(name == "email" or name.startswith("email.") for name in used)


# Every variable the engine resolves (prompt messages of directors and agents), with what it holds: the
# playground's "Insert variable" menu and its unknown-variable check use this list.
KNOWN_VARIABLES: dict[str, str] = {
    "email": "the whole email: headers and body",
    "email.subject": "subject",
    "email.from": "sender",
    "email.to": "recipients",
    "email.cc": "copy recipients",
    "email.date": "date (ISO 8601)",
    "email.body": "plain-text body",
    "email.id": "the message id",
    "today": "today's date",
    "director.name": "the director's name",
    "agent.name": "the agent's name (agent prompts)",
    "memories": "the memories the director/agent may read",
    "workspace.id": "the run's workspace id (director prompts)",
    "workspace.label": "the run's workspace label (director prompts)",
}


def unknown_variables(text: str) -> list[str]:
    """`{{names}}` in text that the engine does not resolve (they would reach the model verbatim)."""
    found: list[str] = []
    for match in VARIABLE.finditer(text):
        name = match.group(1)
        if name not in KNOWN_VARIABLES and name not in found:
            found.append(name)
    return found


def preview_variables(message: Message | None, *, director_name: str = "") -> dict[str, str]:
    """Values for a playground preview: the picked email's fields, and stand-ins for what only a run knows."""
    values = {
        "today": timezone.localdate().isoformat(),
        "director.name": director_name or "(the director's name)",
        "agent.name": "(the agent's name)",
        "memories": "(the memories visible to the director or agent at run time)",
        "workspace.id": "(the run's workspace id)",
        "workspace.label": "(the run's workspace label)",
    }
    if message is not None:
        values.update(email_variables(message))
    return values
