"""Inbox JSON API (mounted at /api/inbox; login required like all of /api):

GET    /history?limit=&before=&workspaceId=   newest first; `before` is the `nextBefore` cursor of the
                                              previous page (created ms + id, stable when timestamps tie)
POST   /entries/{id}/read                     mark read
POST   /entries/{id}/reply                    answer (an option or free text): continues the entry's run
DELETE /entries/{id}                          hard delete
POST   /seed                                  append an entry without an agent (DEBUG only, else 404)
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja import Query, Router, Schema, Status
from ninja.errors import HttpError
from pydantic import Field

from apps.workspaces import actions, selectors
from apps.workspaces.models import EntrySource, Workspace

router = Router(tags=["inbox"])


class HistoryQuery(Schema):
    limit: int = Field(50, ge=1, le=200, description="1 to 200 entries")
    before: str | None = Field(None, description="the previous page's nextBefore cursor, or a timestamp in ms")
    workspaceId: int | None = None


class HistoryOut(Schema):
    entries: list[dict[str, Any]]
    nextBefore: str | None
    unread: int


class ReplyIn(Schema):
    text: str


class SeedIn(Schema):
    workspaceId: int | None = None
    docs: list[dict[str, Any]] | None = None
    comments: str | None = None
    ask: dict[str, Any] | None = None


@router.get("/history", response={200: HistoryOut, 422: dict[str, Any]})
def history(request: HttpRequest, query: Query[HistoryQuery]) -> Status:
    try:
        entries = selectors.inbox_history(
            user=request.user, limit=query.limit, before=query.before, workspace_id=query.workspaceId
        )
    except selectors.BadCursor as exc:
        return Status(422, {"error": str(exc)})
    return Status(
        200,
        {
            "entries": [selectors.entry_json(entry) for entry in entries],
            "nextBefore": selectors.entry_cursor(entries[-1]) if len(entries) == query.limit else None,
            "unread": selectors.unread_count(user=request.user),
        },
    )


@router.post("/entries/{entry_id}/read")
def read(request: HttpRequest, entry_id: str) -> dict[str, Any]:
    entry = actions.mark_entry_read(entry=selectors.access_entry(user=request.user, entry_id=entry_id))
    return {"entry": selectors.entry_json(entry), "unread": selectors.unread_count(user=request.user)}


@router.post("/entries/{entry_id}/reply", response={200: dict[str, Any], 400: dict[str, Any]})
def reply(request: HttpRequest, entry_id: str, payload: ReplyIn) -> Status:
    entry = selectors.access_entry(user=request.user, entry_id=entry_id)
    try:
        entry = actions.reply_to_entry(entry=entry, text=payload.text)
    except actions.InboxError as exc:
        return Status(400, {"error": str(exc)})
    return Status(200, {"entry": selectors.entry_json(entry)})


@router.delete("/entries/{entry_id}")
def delete(request: HttpRequest, entry_id: str) -> dict[str, Any]:
    actions.delete_entry(entry=selectors.access_entry(user=request.user, entry_id=entry_id))
    return {"deleted": True, "unread": selectors.unread_count(user=request.user)}


@router.post("/seed", response={201: dict[str, Any], 400: dict[str, Any]})
def seed(request: HttpRequest, payload: SeedIn) -> Status:
    if not settings.DEBUG:
        raise HttpError(404, "Not found")
    if payload.workspaceId is not None:
        workspace = selectors.access_workspace(user=request.user, workspace_id=payload.workspaceId)
    else:
        found = Workspace.objects.filter(owner_id=request.user.pk, run_id__isnull=True, label="Inbox seed").first()
        workspace = found or actions.create_user_workspace(owner=request.user, label="Inbox seed")
    try:
        entry = actions.push_inbox_entry(
            workspace=workspace, docs=payload.docs, comments=payload.comments, ask=payload.ask, source=EntrySource.SEED
        )
    except actions.InboxError as exc:
        return Status(400, {"error": str(exc)})
    return Status(201, {"entry": selectors.entry_json(entry)})
