"""Asking the user before anything reaches other people or changes mail on the server: an Approval stores the
exact request unperformed and the owner's Inbox gets the link to decide. Tools (calendar invitations, mail
changes), outside agents (the mailbox MCP endpoint) and higher layers (replies, through a registered performer)
ask here; the decision and the performing are orchestration's actions (approve, reject_approval)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from django.db import transaction
from django.urls import reverse

from apps.orchestration.models import Approval, Run
from apps.workspaces.actions import push_inbox_entry
from apps.workspaces.models import EntrySource

# A "sending" attempt older than this died with its process (a claim may take it over; the page says so).
STALE_ATTEMPT_SECONDS = 120


class ApprovalError(ValueError):
    pass


def approval_comments(approval: Approval, request: dict[str, Any]) -> str:
    """The Inbox entry's markdown: what would be sent, to whom, and where to decide."""
    body = json.dumps(request.get("json"), indent=2, ensure_ascii=False)
    people = ", ".join(approval.attendees)
    return (
        f"**Approval needed:** add “{approval.summary}” to the {approval.calendar} calendar of "
        f"{approval.account.name} and send invitations to {people}.\n\n"
        f"Nothing has been sent. [Review, approve or reject]({reverse('runs:approval', args=[approval.pk])}).\n\n"
        f"Request: `{request['method']} {request['path']}`\n\n```json\n{body}\n```\n"
    )


def request_calendar_approval(
    *, run: Run, workspace: Any, account: Any, request: dict[str, Any], attendees: Sequence[str]
) -> Approval:
    """Store the exact calendar request a tool would make, unperformed, and tell the user in the Inbox."""
    calendar = "primary" if request.get("api") == "calendar" else "default"
    with transaction.atomic():
        approval = Approval.objects.create(
            owner_id=workspace.owner_id,
            run=run,
            account=account,
            kind="calendar_event",
            provider=account.provider,
            calendar=calendar,
            summary=str((request.get("json") or {}).get("subject") or (request.get("json") or {}).get("summary"))[:300],
            attendees=list(attendees),
            request=request,
        )
        entry = push_inbox_entry(
            workspace=workspace,
            comments=approval_comments(approval, request),
            source=EntrySource.DIRECTOR,
            run_id=run.pk,
        )
        approval.inbox_entry_id = entry.pk
        approval.save(update_fields=["inbox_entry_id"])
    return approval


MAIL_ACTION_WORDS = {
    "read": "mark as read",
    "unread": "mark as unread",
    "flag": "flag",
    "unflag": "remove the flag from",
    "archive": "archive",
    "trash": "move to Trash",
    "move": "move",
    "tag": "tag",
    "untag": "untag",
}


def mail_approval_summary(*, action: str, subject: str, folder: str = "", tag: str = "") -> str:
    where = f" to {folder}" if action == "move" and folder else ""
    if action in ("tag", "untag") and tag:
        where = f" with “{tag}”" if action == "tag" else f" (take off “{tag}”)"
    return f"{MAIL_ACTION_WORDS.get(action, action).capitalize()} “{subject or '(no subject)'}”{where}"[:300]


def request_mail_approval(
    *, run: Run, workspace: Any, message: Any, action: str, folder: str = "", tag: str = ""
) -> Approval:
    """An agent's proposed change to a mail on the server, unperformed until the user approves it."""
    summary = mail_approval_summary(action=action, subject=message.subject, folder=folder, tag=tag)
    request = {"action": action, "folder": folder, "message_id": message.pk, **({"tag": tag} if tag else {})}
    with transaction.atomic():
        approval = Approval.objects.create(
            owner_id=workspace.owner_id,
            run=run,
            account_id=message.account_id,
            kind="mail_action",
            provider=message.account.provider,
            summary=summary,
            request=request,
        )
        link = reverse("runs:approval", args=[approval.pk])
        entry = push_inbox_entry(
            workspace=workspace,
            comments=(
                f"**Approval needed:** {summary} in {message.account.name}.\n\n"
                f"Nothing has changed on the server. [Review, approve or reject]({link})."
            ),
            source=EntrySource.DIRECTOR,
            run_id=run.pk,
        )
        approval.inbox_entry_id = entry.pk
        approval.save(update_fields=["inbox_entry_id"])
    return approval


def request_approval(
    *, owner: Any, workspace: Any, account: Any, kind: str, summary: str, request: dict[str, Any], comments: str
) -> Approval:
    """An approval that no run asked for (an outside agent, through the mailbox MCP endpoint): the exact
    request is stored unperformed and the owner's Inbox gets `comments` plus the link to decide."""
    if kind != "mail_action" and kind not in _PERFORMERS:
        raise ApprovalError(f"nothing performs approvals of kind {kind!r}")
    with transaction.atomic():
        approval = Approval.objects.create(
            owner=owner, account=account, kind=kind, provider=account.provider, summary=summary[:300], request=request
        )
        link = reverse("runs:approval", args=[approval.pk])
        entry = push_inbox_entry(
            workspace=workspace, comments=f"{comments}\n\n[Review, approve or reject]({link}).", source=EntrySource.MCP
        )
        approval.inbox_entry_id = entry.pk
        approval.save(update_fields=["inbox_entry_id"])
    return approval


# Kinds a higher layer performs (replies sends a reply draft), registered from its AppConfig.ready(): this
# layer stores and gates them, the owner of the action performs it. A performer returns the result to keep
# and raises ApprovalError (or anything else) when it could not be done.
ApprovalPerformer = Callable[[Approval], dict[str, Any]]
_PERFORMERS: dict[str, ApprovalPerformer] = {}


def register_approval_performer(kind: str, perform: ApprovalPerformer) -> None:
    _PERFORMERS[kind] = perform


def approval_performer(kind: str) -> ApprovalPerformer | None:
    """The registered performer of this kind of approval (None: orchestration performs it itself)."""
    return _PERFORMERS.get(kind)
