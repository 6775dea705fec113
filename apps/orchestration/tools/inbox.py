"""inbox_push for our own directors and agents: the same action as the MCP tool, in-process, with the
workspace taken from the run. Only our agents may attach a question (`ask`); the user's answer comes back
into the run (apps/orchestration/inbox_replies.py)."""

from __future__ import annotations

from typing import Any

from apps.llm import ToolFailure
from apps.orchestration.tools.context import Actor, RunContext
from apps.orchestration.tools.schemas import InboxPushArgs
from apps.workspaces import actions, selectors
from apps.workspaces.models import EntrySource


def push(ctx: RunContext, actor: Actor, args: InboxPushArgs) -> dict[str, Any]:
    # Once per run until the user replies: small models otherwise push after every step (9 runs in 10 pushed
    # twice or more in the study of issue 39), and each push is a notification in front of the user.
    earlier = selectors.unanswered_run_entry(run_id=ctx.run.pk)
    if earlier is not None:
        raise ToolFailure(
            "this run already put an entry in the user's Inbox and they have not replied yet: do not push again; "
            "finish now (their reply, if any, starts a new turn)",
            reason="already_pushed",
            entryId=str(earlier.pk),
        )
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
