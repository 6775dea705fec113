"""Reads for runs, transcripts, diagnostics and memories (owner-scoped; 404 for other users' rows)."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import Count, Q, QuerySet
from django.http import Http404
from django.utils import timezone

from apps.accounts.models import MailAccount
from apps.llm.configs import estimate_cost
from apps.llm.queue import QueuePosition, queue_position
from apps.orchestration.approvals import STALE_ATTEMPT_SECONDS
from apps.orchestration.models import (
    Agent,
    Approval,
    Conversation,
    Director,
    FilesystemRoot,
    Memory,
    OrchestrationSettings,
    OrchLog,
    Prompt,
    ProviderEvent,
    Run,
    RunStatus,
    ThreadKind,
)
from apps.orchestration.prepared import PreparedQuery
from apps.workspaces.models import Workspace, WorkspaceItem


def default_filesystem_root(*, owner_id: int) -> Path:
    return Path(settings.DATA_DIR) / "files" / str(int(owner_id))


# `.first()`'s query (ordered by pk, one row), compiled once: it is read at the start of every director run.
_FILESYSTEM_ROOT = PreparedQuery(
    FilesystemRoot,
    lambda owner_id: FilesystemRoot.objects.filter(owner_id=owner_id).order_by("pk").values_list("path", flat=True)[:1],
    "owner_id",
)


def configured_filesystem_root(*, owner_id: int) -> str:
    """The owner's configured directory ("" when none is set: the default applies)."""
    return (next(iter(_FILESYSTEM_ROOT(owner_id=owner_id)), None) or "").strip()


def session_timeout_minutes() -> int:
    """The agent session inactivity timeout (spec §3.2.8), 15 minutes until staff change it."""
    current = OrchestrationSettings.objects.filter(pk=1).values_list("session_timeout_minutes", flat=True).first()
    return current if current is not None else 15


def filesystem_root_for_owner(*, owner_id: int) -> str:
    """The directory the owner's runs may read: their FilesystemRoot, else DATA_DIR/files/<owner id>."""
    configured = next(iter(_FILESYSTEM_ROOT(owner_id=owner_id)), None)
    return (configured or "").strip() or str(default_filesystem_root(owner_id=owner_id))


def list_runs_for_user(*, user: Any, status: str | None = None, director_id: int | None = None) -> QuerySet[Run]:
    runs = Run.objects.filter(director__owner=user).select_related("director", "director__api_config", "message")
    if status:
        runs = runs.filter(status=status)
    if director_id:
        runs = runs.filter(director_id=director_id)
    return runs.order_by("-created_at", "-pk")


def access_run(*, user: Any, run_id: int) -> Run:
    run = (
        Run.objects.filter(pk=run_id, director__owner=user)
        .select_related("director", "director__api_config", "message", "message__account")
        .first()
    )
    if run is None:
        raise Http404("No such run")
    return run


def access_workspace_item(*, user: Any, item_id: int) -> WorkspaceItem:
    """A workspace item of one of the user's workspaces (the run page's downloads), 404 otherwise."""
    item = WorkspaceItem.objects.filter(pk=item_id, workspace__owner=user).first()
    if item is None:
        raise Http404("No such item")
    return item


def run_cost(run: Run) -> Decimal | None:

    return estimate_cost(run.director.api_config, run.prompt_tokens, run.completion_tokens)


def run_threads(*, run: Run) -> list[Conversation]:
    return list(Conversation.objects.filter(run=run).select_related("agent").order_by("created_at", "pk"))


@dataclass(slots=True)
class TranscriptEntry:
    role: str
    content: str
    tool_calls: list[dict[str, Any]]
    tool_call_id: str = ""
    tool_name: str = ""


def transcript(thread: Conversation) -> list[TranscriptEntry]:
    """The canonical messages, with tool results labelled by the call they answer and arguments pretty-printed."""
    names: dict[str, str] = {}
    entries: list[TranscriptEntry] = []
    for message in thread.transcript:
        calls = []
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            raw = function.get("arguments") or ""
            try:
                pretty = json.dumps(json.loads(raw), indent=2, ensure_ascii=False) if raw else "{}"
            except ValueError:
                pretty = raw
            names[call.get("id", "")] = function.get("name", "")
            calls.append({"id": call.get("id", ""), "name": function.get("name", ""), "arguments": pretty})
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False) if content else ""
        tool_call_id = str(message.get("tool_call_id") or "")
        entries.append(
            TranscriptEntry(
                role=str(message.get("role", "")),
                content=text,
                tool_calls=calls,
                tool_call_id=tool_call_id,
                tool_name=names.get(tool_call_id, ""),
            )
        )
    return entries


def provider_event_summary(*, run: Run) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for kind in ProviderEvent.objects.filter(run=run).values_list("kind", flat=True):
        counts[kind] += 1
    return dict(counts)


# --- unified diagnostics -----------------------------------------------------------------------------


def _entry_json(log: OrchLog) -> dict[str, Any]:
    detail = log.detail if isinstance(log.detail, dict) else {}
    return {
        "id": f"log:{log.pk}",
        "timestamp": log.timestamp.isoformat(),
        "phase": log.phase,
        "director": str(log.director_id),
        "directorName": log.director_name,
        "agent": str(log.agent_id or ""),
        "agentName": log.agent_name,
        "emailSummary": log.email_summary,
        "fetchCycleId": log.fetch_cycle_id,
        "dirThreadId": log.dir_thread_id,
        "agentThreadId": log.agent_thread_id,
        "tool": detail.get("tool"),
        "action": detail.get("action"),
        "error": log.error,
    }


def _director_node(thread: Conversation, logs: list[OrchLog], agents: list[Conversation]) -> dict[str, Any]:
    own = [log for log in logs if log.agent_thread_id is None]
    by_agent: dict[int, list[OrchLog]] = defaultdict(list)
    for log in logs:
        if log.agent_thread_id is not None:
            by_agent[log.agent_thread_id].append(log)
    timeline: list[tuple[str, dict[str, Any]]] = [(log.timestamp.isoformat(), _entry_json(log)) for log in own]
    for agent in agents:
        entries = by_agent.get(agent.pk, [])
        # Anchored at the agent's first event (its input from the director), so the subtree sits where the
        # director delegated; the director's own agent__ tool entry follows it when the agent has answered.
        anchor = entries[0].timestamp.isoformat() if entries else agent.created_at.isoformat()
        timeline.append(
            (
                anchor,
                {
                    "id": f"agent:{agent.pk}",
                    "type": "agentThread",
                    "label": agent.agent_name,
                    "status": agent.status,
                    "sessionId": agent.session_id,
                    "entries": [_entry_json(log) for log in entries],
                },
            )
        )
    timeline.sort(key=lambda pair: pair[0])
    return {
        "id": f"dir:{thread.pk}",
        "type": "directorThread",
        "label": f"{thread.director.name}",
        "runId": thread.run_id,
        "status": thread.status,
        "finalized": thread.finalized,
        "startedAt": thread.created_at.isoformat(),
        "children": [node for _, node in timeline],
    }


def unified_tree(*, user: Any, limit: int = 50) -> list[dict[str, Any]]:
    """Fetch cycles → director threads → (entries and agent threads, interleaved by time); newest first."""
    directors = list(
        Conversation.objects.filter(kind=ThreadKind.DIRECTOR, director__owner=user)
        .select_related("director", "run", "run__message")
        .order_by("-created_at", "-pk")[:limit]
    )
    thread_ids = [t.pk for t in directors]
    logs = list(OrchLog.objects.filter(dir_thread_id__in=thread_ids).order_by("timestamp", "pk"))
    agents = list(Conversation.objects.filter(parent_id__in=thread_ids).order_by("created_at", "pk"))
    logs_by_thread: dict[int, list[OrchLog]] = defaultdict(list)
    for log in logs:
        if log.dir_thread_id is not None:
            logs_by_thread[log.dir_thread_id].append(log)
    agents_by_thread: dict[int, list[Conversation]] = defaultdict(list)
    for agent in agents:
        if agent.parent_id is not None:
            agents_by_thread[agent.parent_id].append(agent)
    cycles: dict[str, dict[str, Any]] = {}
    for thread in directors:
        cycle_id = thread.run.fetch_cycle_id
        key = f"cycle:{cycle_id}" if cycle_id is not None else "cycle:none"
        cycle = cycles.setdefault(
            key,
            {
                "id": key,
                "type": "fetchCycle",
                "label": f"Fetch cycle {cycle_id}"
                if cycle_id is not None
                else "Outside fetch cycles (replays, imports)",
                "fetchCycleId": cycle_id,
                "children": [],
            },
        )
        node = _director_node(thread, logs_by_thread.get(thread.pk, []), agents_by_thread.get(thread.pk, []))
        node["label"] = f"{thread.director.name} — {thread.run.message.subject or '(no subject)'}"
        cycle["children"].append(node)
    return list(cycles.values())


def tree_entries(tree: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every log entry of a unified tree, each with the label of its director thread, oldest first: the Flat
    view of the same entries the Grouped view shows."""
    found: list[dict[str, Any]] = []
    for cycle in tree:
        for director in cycle["children"]:
            for child in director["children"]:
                entries = child["entries"] if child.get("type") == "agentThread" else [child]
                found.extend({**entry, "threadLabel": director["label"]} for entry in entries)
    found.sort(key=lambda entry: (entry["timestamp"], int(entry["id"].partition(":")[2])))
    return found


def _email_json(run: Run) -> dict[str, Any]:
    message = run.message
    return {
        "id": message.pk,
        "subject": message.subject,
        "from": message.sender,
        "to": message.to,
        "date": message.date.isoformat() if message.date else None,
        "snippet": message.snippet,
        "attachments": [a.filename for a in message.attachments.all()],
    }


def unified_node(*, user: Any, node_id: str) -> dict[str, Any]:
    kind, _, raw = node_id.partition(":")
    if kind == "log" and raw.isdigit():
        log = OrchLog.objects.filter(pk=int(raw), director__owner=user).select_related("run", "run__message").first()
        if log is None:
            raise Http404("No such diagnostics entry")
        # The entry before it in the same thread (the agent's, else the director's): how long this step took
        # to come after the last one.
        siblings = (
            OrchLog.objects.filter(agent_thread_id=log.agent_thread_id)
            if log.agent_thread_id is not None
            else OrchLog.objects.filter(dir_thread_id=log.dir_thread_id, agent_thread__isnull=True)
        )
        previous = (
            siblings.filter(Q(timestamp__lt=log.timestamp) | Q(timestamp=log.timestamp, pk__lt=log.pk))
            .order_by("-timestamp", "-pk")
            .values_list("timestamp", flat=True)
            .first()
        )
        return {
            **_entry_json(log),
            "previousTimestamp": previous.isoformat() if previous else None,
            "run": {
                "id": log.run_id,
                "status": log.run.status,
                "promptTokens": log.run.prompt_tokens,
                "completionTokens": log.run.completion_tokens,
            },
            "detail": log.detail,
            "result": log.result,
            "email": _email_json(log.run),
        }
    if kind in ("dir", "agent") and raw.isdigit():
        thread = (
            Conversation.objects.filter(pk=int(raw), director__owner=user)
            .select_related("run", "run__message", "run__director")
            .first()
        )
        if thread is None:
            raise Http404("No such thread")
        events = ProviderEvent.objects.filter(thread=thread).order_by("created_at", "pk")
        own_logs = (
            OrchLog.objects.filter(agent_thread=thread)
            if thread.kind == ThreadKind.AGENT
            else OrchLog.objects.filter(dir_thread=thread)
        )
        return {
            "id": node_id,
            "label": thread.agent_name if thread.kind == ThreadKind.AGENT else thread.run.director.name,
            "runId": thread.run_id,
            "kind": thread.kind,
            "createdAt": thread.created_at.isoformat(),
            "promptTokens": thread.prompt_tokens,
            "completionTokens": thread.completion_tokens,
            "entryIds": [f"log:{pk}" for pk in own_logs.order_by("timestamp", "pk").values_list("pk", flat=True)],
            "status": thread.status,
            "finalized": thread.finalized,
            "sessionId": thread.session_id,
            "messages": thread.transcript,
            "lastActiveAt": thread.last_active_at.isoformat(),
            "expiresAt": thread.expires_at.isoformat() if thread.expires_at else None,
            "endedAt": thread.ended_at.isoformat() if thread.ended_at else None,
            "providerEvents": [
                {
                    "kind": e.kind,
                    "model": e.model,
                    "attempt": e.attempt,
                    "status": e.status,
                    "latencyMs": e.latency_ms,
                    "usage": e.usage,
                    "error": e.error,
                    "timestamp": e.created_at.isoformat(),
                }
                for e in events
            ],
            "email": _email_json(thread.run),
        }
    if kind == "cycle":
        cycle_filter = (
            Q(fetch_cycle_id__isnull=True) if raw == "none" else Q(fetch_cycle_id=int(raw)) if raw.isdigit() else None
        )
        if cycle_filter is None:
            raise Http404("No such node")
        runs = Run.objects.filter(cycle_filter, director__owner=user).select_related("director", "message")[:200]
        return {
            "id": node_id,
            "runs": [
                {"id": r.pk, "director": r.director.name, "subject": r.message.subject, "status": r.status}
                for r in runs
            ],
        }
    raise Http404("No such node")


# --- memories ------------------------------------------------------------------------------------------


def list_memories_for_user(
    *, user: Any, query: str = "", scope: str = "", director_id: int | None = None
) -> QuerySet[Memory] | list[Memory]:
    """The user's memories, newest first; with a query, those holding every word (matched in Python: the
    content is encrypted at rest). `director_id` keeps that director's shared and local ones (its agents' too)."""
    memories = Memory.objects.filter(owner=user).select_related("director", "agent")
    if scope:
        memories = memories.filter(scope=scope)
    if director_id is not None:
        memories = memories.filter(director_id=director_id)
    memories = memories.order_by("-updated_at", "-pk")
    words = query.split()
    if not words:
        return memories
    return [memory for memory in memories if memory.matches(words)]


def access_memory(*, user: Any, memory_id: int) -> Memory:
    memory = Memory.objects.filter(pk=memory_id, owner=user).select_related("director", "agent").first()
    if memory is None:
        raise Http404("No such memory")
    return memory


def directors_for_user(*, user: Any) -> QuerySet[Director]:
    return Director.objects.filter(owner=user).order_by("name")


def access_approval(*, user: Any, approval_id: int) -> Approval:
    approval = (
        Approval.objects.filter(pk=approval_id, owner=user).select_related("account", "run", "run__message").first()
    )
    if approval is None:
        raise Http404("No such approval")
    return approval


def approvals_for_user(*, user: Any, decided_limit: int = 50) -> tuple[list[Approval], list[Approval]]:
    """(every approval waiting for the user, oldest first; the latest decided ones, newest first)."""
    rows = Approval.objects.filter(owner=user).select_related("account", "run")
    pending = list(rows.filter(status="pending").order_by("created_at", "pk"))
    decided = list(rows.exclude(status="pending").order_by("-created_at", "-pk")[:decided_limit])
    return pending, decided


def pending_approval_count(*, user: Any) -> int:
    return Approval.objects.filter(owner=user, status="pending").count()


def approvals_for_run(*, run: Run) -> list[Approval]:
    return list(Approval.objects.filter(run=run).select_related("account").order_by("created_at", "pk"))


def approval_is_stale(approval: Approval) -> bool:
    """A "sending" attempt older than the claim window died with its process: its outcome is unknown."""
    started = approval.attempt_started_at
    return (
        approval.status == "sending"
        and started is not None
        and (timezone.now() - started).total_seconds() >= STALE_ATTEMPT_SECONDS
    )


# --- the prompt playground ---------------------------------------------------------------------------


def prompts_for_user(*, user: Any) -> QuerySet[Prompt]:
    return Prompt.objects.filter(owner=user).annotate(message_count=Count("messages")).order_by("-is_template", "name")


def access_prompt(*, user: Any, prompt_id: int, is_template: bool | None = None) -> Prompt:
    """The user's prompt (404 otherwise); with `is_template`, only a template (True) or only a prompt (False)."""
    prompts = Prompt.objects.filter(pk=prompt_id, owner=user)
    if is_template is not None:
        prompts = prompts.filter(is_template=is_template)
    prompt = prompts.prefetch_related("messages").first()
    if prompt is None:
        raise Http404("No such prompt")
    return prompt


def list_prompts_with_messages(*, user: Any, is_template: bool) -> QuerySet[Prompt]:
    prompts = Prompt.objects.filter(owner=user, is_template=is_template)
    return prompts.prefetch_related("messages").order_by("name", "pk")


@dataclass(frozen=True, slots=True)
class PromptUser:
    kind: str  # director | agent
    id: int
    name: str


def prompt_users(*, prompt_ids: list[int]) -> dict[int, list[PromptUser]]:
    """Which directors and agents use each prompt, in two queries."""
    users: dict[int, list[PromptUser]] = defaultdict(list)
    for pk, name, prompt_id in Director.objects.filter(prompt_id__in=prompt_ids).values_list("pk", "name", "prompt_id"):
        users[prompt_id].append(PromptUser("director", pk, name))
    agents = Agent.objects.filter(prompt_id__in=prompt_ids).order_by("director__name", "order", "pk")
    for pk, name, prompt_id in agents.values_list("pk", "name", "prompt_id"):
        users[prompt_id].append(PromptUser("agent", pk, name))
    return users


def preview_emails(*, user: Any, limit: int = 40) -> list[Any]:
    from apps.accounts.models import Message

    return list(
        Message.objects.filter(account__owner=user)
        .only("pk", "subject", "from_address", "date")
        .order_by("-date", "-pk")[:limit]
    )


def preview_email(*, user: Any, message_id: int | None) -> Any:
    """The email a preview resolves against: the user's own (404 for another user's), or none."""
    from apps.accounts.models import Message

    if message_id is None:
        return None
    message = Message.objects.filter(pk=message_id, account__owner=user).prefetch_related("attachments").first()
    if message is None:
        raise Http404("No such email")
    return message


def director_name_for_prompt(*, prompt: Prompt) -> str:
    return Director.objects.filter(prompt=prompt).values_list("name", flat=True).first() or ""


def prompt_try_events(*, prompt: Prompt, limit: int = 10) -> list[ProviderEvent]:
    return list(ProviderEvent.objects.filter(prompt=prompt).order_by("-created_at", "-pk")[:limit])


def director_thread_for_email(*, user: Any, director_id: int, email_id: int) -> Conversation:
    """The director thread of the user's run of this director on this message (spec §3.2.0:
    conversations/byDirectorEmail), 404 when the user owns no such run or it has not started a thread."""
    thread = (
        Conversation.objects.filter(
            kind=ThreadKind.DIRECTOR,
            run__director_id=director_id,
            run__message_id=email_id,
            run__director__owner=user,
        )
        .select_related("run", "director")
        .first()
    )
    if thread is None:
        raise Http404("No such conversation")
    return thread


def workspace_id_for_run(*, user: Any, run_id: int) -> int | None:
    return Workspace.objects.filter(run_id=run_id, owner=user).values_list("pk", flat=True).first()


def list_directors_with_agents(*, user: Any) -> QuerySet[Director]:
    """The user's directors with their agents (in the director's order) in two queries."""
    return Director.objects.filter(owner=user).prefetch_related("agents", "accounts").order_by("name", "pk")


def access_director(*, user: Any, director_id: int) -> Director:
    director = Director.objects.filter(pk=director_id, owner=user).prefetch_related("agents", "accounts").first()
    if director is None:
        raise Http404("No such director")
    return director


def accounts_of_user(*, user: Any, account_ids: list[int]) -> QuerySet[MailAccount]:
    """Those of these mail accounts the user owns (a director's calendar/to-do accounts)."""
    return MailAccount.objects.filter(owner=user, pk__in=account_ids)


def list_agents_for_user(*, user: Any, director_id: int | None = None) -> QuerySet[Agent]:
    """The user's agents, each director's in its order (directors by name)."""
    agents = Agent.objects.filter(director__owner=user).select_related("director")
    if director_id is not None:
        agents = agents.filter(director_id=director_id)
    return agents.order_by("director__name", "director_id", "order", "pk")


def access_agent(*, user: Any, agent_id: int) -> Agent:
    agent = Agent.objects.filter(pk=agent_id, director__owner=user).select_related("director").first()
    if agent is None:
        raise Http404("No such agent")
    return agent


def run_queue_position(*, run: Run) -> QueuePosition | None:
    """Where the run's model call waits in its model's line (None when it is not waiting)."""
    if run.status != RunStatus.RUNNING:
        return None
    return queue_position(run.queue_requester)
