"""Reads for workspaces (permission-checked access, filtered item lists, the JSON shape of an item)."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet
from django.http import Http404
from django.utils import timezone

from apps.workspaces.actions import hash_token
from apps.workspaces.models import (
    EntrySource,
    InboxEntry,
    MailboxToken,
    McpCall,
    Workspace,
    WorkspaceItem,
    WorkspaceItemLog,
    WorkspaceToken,
)


def access_workspace(*, user: Any, workspace_id: int) -> Workspace:
    workspace = Workspace.objects.filter(pk=workspace_id, owner=user).first()
    if workspace is None:
        raise Http404("No such workspace")
    return workspace


def workspace_for_run(*, run_id: int) -> Workspace | None:
    return Workspace.objects.filter(run_id=run_id).first()


def unanswered_run_entry(*, run_id: int) -> InboxEntry | None:
    """The run's own Inbox entry (from its director or agents) that the user has not replied to yet."""
    return (
        InboxEntry.objects.filter(
            run_id=run_id, source__in=(EntrySource.DIRECTOR, EntrySource.AGENT), replied_at__isnull=True
        )
        .order_by("-pk")
        .first()
    )


def list_items(
    *,
    workspace: Workspace,
    include_deleted: bool = False,
    mime_type: str | None = None,
    tag: str | None = None,
    author: str | None = None,
    offset: int = 0,
    limit: int | None = None,
) -> QuerySet[WorkspaceItem]:
    items = WorkspaceItem.objects.filter(workspace=workspace)
    if not include_deleted:
        items = items.filter(deleted=False)
    if mime_type:
        # "image/*" selects a whole family.
        items = (
            items.filter(mime_type__startswith=mime_type[:-1])
            if mime_type.endswith("/*")
            else items.filter(mime_type=mime_type)
        )
    if author:
        items = items.filter(created_by=author)
    ordered = items.order_by("created", "pk")
    if tag:
        # Tags are a JSON list; filter in Python (portable across SQLite and PostgreSQL, lists are short).
        ids = [pk for pk, tags in ordered.values_list("pk", "tags") if isinstance(tags, list) and tag in tags]
        ordered = WorkspaceItem.objects.filter(pk__in=ids).order_by("created", "pk")
    if limit is not None:
        return ordered[offset : offset + limit]
    return ordered[offset:] if offset else ordered


def get_item(*, workspace: Workspace, item_id: int) -> WorkspaceItem | None:
    return WorkspaceItem.objects.filter(workspace=workspace, pk=item_id).first()


def item_json(item: WorkspaceItem, *, include_data: bool = True) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": str(item.pk),
        "label": item.label,
        "description": item.description,
        "mimeType": item.mime_type,
        "encoding": item.encoding,
        "tags": item.tags,
        "created": item.created.isoformat(),
        "updated": item.updated.isoformat(),
        "revision": item.revision,
        "deleted": item.deleted,
        "context": item.context,
        "path": item.path,
    }
    if include_data:
        data["data"] = item.data
    else:
        data["size"] = len(item.data)
    return data


def item_log(*, workspace: Workspace) -> QuerySet[WorkspaceItemLog]:
    return WorkspaceItemLog.objects.filter(workspace=workspace).order_by("at", "pk")


def user_workspaces(*, user: Any) -> QuerySet[Workspace]:
    """Workspaces the user created for outside agents (run workspaces are reached from their run)."""
    return Workspace.objects.filter(owner=user, run_id__isnull=True).order_by("-created_at", "-pk")


def workspace_tokens(*, workspace: Workspace) -> QuerySet[WorkspaceToken]:
    return WorkspaceToken.objects.filter(workspace=workspace).order_by("-created_at", "-pk")


def access_token(*, user: Any, token_id: int) -> WorkspaceToken:
    token = WorkspaceToken.objects.select_related("workspace").filter(pk=token_id, workspace__owner=user).first()
    if token is None:
        raise Http404("No such token")
    return token


@dataclass(frozen=True, slots=True)
class McpPrincipal:
    """Who an authenticated MCP request acts as: always the workspace of the URL, never an argument."""

    workspace_id: int
    owner_id: int
    token_id: int


def authenticate_token(*, raw: str, workspace_id: int) -> McpPrincipal | None:
    """The principal for a bearer token presented at /mcp/<workspace_id>/, or None (unknown, revoked, or
    issued for another workspace)."""
    if not raw or len(raw) > 200:
        return None
    token = (
        WorkspaceToken.objects.filter(token_hash=hash_token(raw), revoked_at__isnull=True)
        .select_related("workspace")
        .first()
    )
    if token is None or token.workspace_id != workspace_id:
        return None
    return McpPrincipal(workspace_id=token.workspace_id, owner_id=token.workspace.owner_id, token_id=token.pk)


@dataclass(frozen=True, slots=True)
class MailboxPrincipal:
    """Who an authenticated /mcp/mailbox/ request acts as: the token's owner, within the token's scopes."""

    owner_id: int
    token_id: int
    scopes: frozenset[str]
    workspace_id: int | None
    calls_per_minute: int
    account_id: int | None = None  # only this account's mail; None: all the owner's accounts
    folders: tuple[str, ...] = ()  # only mail in these folders of that account (and their subfolders); (): all


def authenticate_mailbox_token(*, raw: str) -> MailboxPrincipal | None:
    """The principal for a bearer token presented at /mcp/mailbox/, or None (unknown, revoked, expired, or a
    workspace token)."""
    if not raw or len(raw) > 200:
        return None
    token = MailboxToken.objects.filter(token_hash=hash_token(raw), revoked_at__isnull=True).first()
    if token is None or not token.is_active():
        return None
    return MailboxPrincipal(
        owner_id=token.owner_id,
        token_id=token.pk,
        scopes=frozenset(token.scopes),
        workspace_id=token.workspace_id,
        calls_per_minute=token.calls_per_minute,
        account_id=token.account_id,
        folders=tuple(str(name) for name in token.folders or ()),
    )


def mailbox_tokens(*, user: Any) -> QuerySet[MailboxToken]:
    return MailboxToken.objects.filter(owner=user).select_related("account").order_by("-created_at", "-pk")


def access_mailbox_token(*, user: Any, token_id: int) -> MailboxToken:
    token = MailboxToken.objects.filter(pk=token_id, owner=user).first()
    if token is None:
        raise Http404("No such token")
    return token


def recent_mcp_calls(*, user: Any, limit: int = 100) -> list[McpCall]:
    return list(McpCall.objects.filter(owner=user).select_related("token").order_by("-at", "-pk")[:limit])


# --- inbox --------------------------------------------------------------------------------------------------


class BadCursor(ValueError):
    pass


EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
ONE_MS = dt.timedelta(milliseconds=1)


def entry_ts(entry: InboxEntry) -> int:
    return (entry.created - EPOCH) // ONE_MS


def entry_cursor(entry: InboxEntry) -> str:
    return f"{entry_ts(entry)}_{entry.pk.hex}"


def parse_cursor(raw: str) -> tuple[dt.datetime, uuid.UUID | None]:
    """`<ms>` (entries strictly older) or `<ms>_<id>` (the cursor a page returns: strictly after that entry)."""
    ms_text, _, id_text = raw.strip().partition("_")
    try:
        ms = int(ms_text)
        at = EPOCH + ms * ONE_MS
        entry_id = uuid.UUID(id_text) if id_text else None
    except (ValueError, OverflowError, OSError):
        raise BadCursor(f"before must be a timestamp in ms or a cursor like 1715789012345_<id>, not {raw!r}") from None
    return at, entry_id


def inbox_history(
    *, user: Any, limit: int, before: str | None = None, workspace_id: int | None = None
) -> list[InboxEntry]:
    """The user's entries, newest first; (created, id) orders entries with equal timestamps, so paging
    with the last entry's cursor never repeats or skips one."""
    entries = InboxEntry.objects.filter(owner=user)
    if workspace_id is not None:
        entries = entries.filter(workspace_id=workspace_id)
    if before:
        at, entry_id = parse_cursor(before)
        if entry_id is None:
            entries = entries.filter(created__lt=at)
        else:
            # A range on `created` (not an OR) so the (owner, created, id) index starts at the cursor.
            entries = entries.filter(created__lte=at).exclude(created=at, id__gte=entry_id)
    return list(entries.order_by("-created", "-id")[:limit])


def access_entry(*, user: Any, entry_id: str | uuid.UUID) -> InboxEntry:
    try:
        key = entry_id if isinstance(entry_id, uuid.UUID) else uuid.UUID(str(entry_id))
    except ValueError:
        raise Http404("No such entry") from None
    entry = InboxEntry.objects.select_related("workspace").filter(pk=key, owner=user).first()
    if entry is None:
        raise Http404("No such entry")
    return entry


def unread_count(*, user: Any) -> int:
    return InboxEntry.objects.filter(owner=user, read_at__isnull=True).count()


def entry_json(entry: InboxEntry) -> dict[str, Any]:
    """The seed's JSONL shape (id, ts, workspaceId, workspaceLabel, docs, comments) plus read state and the
    optional question."""
    return {
        "id": str(entry.pk),
        "ts": entry_ts(entry),
        "cursor": entry_cursor(entry),
        "workspaceId": str(entry.workspace_id),
        "workspaceLabel": entry.workspace_label,
        "docs": entry.docs,
        "comments": entry.comments,
        "ask": entry.ask,
        "source": entry.source,
        "runId": entry.run_id,
        "read": entry.read_at is not None,
        "readAt": entry.read_at.isoformat() if entry.read_at else None,
        "reply": entry.reply or None,
        "repliedAt": entry.replied_at.isoformat() if entry.replied_at else None,
    }


@dataclass(frozen=True, slots=True)
class ResolvedDoc:
    path: str
    item: WorkspaceItem | None  # None: no longer in the workspace


def resolve_docs(entry: InboxEntry) -> list[ResolvedDoc]:
    """The entry's doc pointers resolved now (live items only): later edits show, deleted items don't."""
    paths = [doc.get("path", "") for doc in entry.docs if isinstance(doc, dict)]
    live = {
        item.path: item
        for item in WorkspaceItem.objects.filter(workspace_id=entry.workspace_id, deleted=False, path__in=paths)
    }
    return [ResolvedDoc(path=path, item=live.get(path)) for path in paths]


@dataclass(frozen=True, slots=True)
class DayGroup:
    title: str
    entries: list[InboxEntry]


def day_title(day: dt.date, today: dt.date) -> str:
    """Today, Yesterday, the weekday within the last week, then the date."""
    age = (today - day).days
    if age == 0:
        return "Today"
    if age == 1:
        return "Yesterday"
    if 1 < age < 7:
        return day.strftime("%A")
    return day.strftime("%b %-d, %Y") if day.year != today.year else day.strftime("%b %-d")


def group_by_day(entries: list[InboxEntry]) -> list[DayGroup]:
    today = timezone.localdate()
    groups: list[DayGroup] = []
    for entry in entries:
        title = day_title(timezone.localtime(entry.created).date(), today)
        if not groups or groups[-1].title != title:
            groups.append(DayGroup(title=title, entries=[]))
        groups[-1].entries.append(entry)
    return groups


def entries_for_run(*, run_id: int) -> list[InboxEntry]:
    return list(InboxEntry.objects.filter(run_id=run_id).order_by("created", "id"))
