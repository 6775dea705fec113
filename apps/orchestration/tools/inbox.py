"""inbox_push for our own directors and agents: the same action as the MCP tool, in-process, with the
workspace taken from the run. Only our agents may attach a question (`ask`); the user's answer comes back
into the run (apps/orchestration/inbox_replies.py)."""

from __future__ import annotations

from typing import Any

from apps.llm import ToolFailure
from apps.orchestration.tools.context import Actor, RunContext
from apps.orchestration.tools.schemas import InboxPushArgs
from apps.workspaces import actions
from apps.workspaces.models import EntrySource


def push(ctx: RunContext, actor: Actor, args: InboxPushArgs) -> dict[str, Any]:
    try:
        entry = actions.push_inbox_entry(
            workspace=ctx.workspace,
            docs=[doc.model_dump() for doc in args.docs] if args.docs is not None else None,
            comments=args.comments,
            ask=args.ask.model_dump() if args.ask is not None else None,
            source=EntrySource.AGENT if actor.kind == "agent" else EntrySource.DIRECTOR,
            run_id=ctx.run.pk,
        )
    except actions.InboxError as exc:
        raise ToolFailure(str(exc)) from None
    result: dict[str, Any] = {"entryId": str(entry.pk), "pushed": True}
    if entry.ask:
        result["note"] = "The user sees your question in their Inbox. Finish this turn; their answer starts a new one."
    return result
