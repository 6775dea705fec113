"""Prompts as ChatML message lists with {{variables}}; the built-in guidance every director/agent gets."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from apps.accounts.models import Message
from apps.orchestration.models import Prompt

VARIABLE = re.compile(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_.]*)\s*\}\}")
TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")  # what the provider accepts as a function name
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


# A tool block is the result of a call the assistant block right before it made: that block is written as the
# call, {"tool": "name", "arguments": {...}} (or a list of them, answered by as many tool blocks in order), and is
# sent as an assistant message with tool_calls. A tool block that answers no call is not sent (the provider
# would refuse a tool message without its call); the playground and the save check say why.
TOOL_CALL_FORM = '{"tool": "name", "arguments": {…}}'


@dataclass(frozen=True, slots=True)
class ResolvedBlock:
    role: str
    content: str  # rendered
    message: dict[str, Any] | None  # what the model is sent, None when the block is not sent
    note: str = ""  # why it is not sent, or how it is sent


def _tool_calls(content: str) -> list[tuple[str, Any]] | None:
    """The calls an assistant block writes as JSON ({"tool", "arguments"} or a list of them), else None."""
    try:
        parsed = json.loads(content)
    except ValueError:
        return None
    calls = parsed if isinstance(parsed, list) else [parsed]
    found = []
    for call in calls:
        if not isinstance(call, dict) or set(call) - {"tool", "arguments"}:
            return None
        name, arguments = call.get("tool"), call.get("arguments", {})
        if not isinstance(name, str) or not TOOL_NAME.fullmatch(name) or not isinstance(arguments, dict):
            return None
        found.append((name, arguments))
    return found or None


def _render_values(value: Any, variables: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return render_text(value, variables)
    if isinstance(value, list):
        return [_render_values(item, variables) for item in value]
    if isinstance(value, dict):
        return {key: _render_values(item, variables) for key, item in value.items()}
    return value


def resolve_blocks(rows: PromptRows, variables: Mapping[str, str]) -> list[ResolvedBlock]:
    """Each block rendered, with the message it is sent as (an assistant call block and the tool blocks that
    answer it become one assistant message with tool_calls and one tool message per call)."""
    resolved: list[ResolvedBlock] = []
    index = 0
    while index < len(rows):
        role, content = rows[index]
        answers = 0
        while index + 1 + answers < len(rows) and rows[index + 1 + answers][0] == "tool":
            answers += 1
        calls = _tool_calls(content) if role == "assistant" and answers else None
        if calls is not None and len(calls) == answers:
            ids = [f"call_example_{index + 1}_{number}" for number in range(1, answers + 1)]
            tool_calls = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(_render_values(arguments, variables))},
                }
                for call_id, (name, arguments) in zip(ids, calls, strict=True)
            ]
            names = ", ".join(name for name, _arguments in calls)
            message = {"role": "assistant", "content": None, "tool_calls": tool_calls}
            resolved.append(ResolvedBlock(role, render_text(content, variables), message, f"sent as a call: {names}"))
            for call_id, (name, _arguments) in zip(ids, calls, strict=True):
                index += 1
                text = render_text(rows[index][1], variables)
                answer = {"role": "tool", "tool_call_id": call_id, "content": text}
                resolved.append(ResolvedBlock("tool", text, answer, f"sent as the result of {name}"))
            index += 1
            continue
        text = render_text(content, variables)
        if role in ("system", "user", "assistant"):
            resolved.append(ResolvedBlock(role, text, {"role": role, "content": text}))
        else:
            resolved.append(ResolvedBlock(role, text, None, orphan_tool_problem(rows, index)))
        index += 1
    return resolved


def orphan_tool_problem(rows: PromptRows, index: int) -> str:
    """Why the tool block at `index` answers no call (the words the playground and the save check use)."""
    start = index
    while start > 0 and rows[start - 1][0] == "tool":
        start -= 1
    if start == 0 or rows[start - 1][0] != "assistant":
        return (
            "not sent: a tool message answers a call, so put an assistant message written as "
            f"{TOOL_CALL_FORM} before it"
        )
    calls = _tool_calls(rows[start - 1][1])
    if calls is None:
        return f"not sent: write the assistant message before it as the call it answers, {TOOL_CALL_FORM}"
    answers = 0
    while start + answers < len(rows) and rows[start + answers][0] == "tool":
        answers += 1
    return (
        f"not sent: the assistant message before it makes {len(calls)} call{'s' if len(calls) != 1 else ''} "
        f"and {answers} tool message{'s answer' if answers != 1 else ' answers'} them: give each call one answer"
    )


def render_prompt(rows: PromptRows, variables: Mapping[str, str]) -> list[dict[str, Any]]:
    return [block.message for block in resolve_blocks(rows, variables) if block.message is not None]


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
