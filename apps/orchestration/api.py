"""Orchestration's JSON API (spec sections 1-3, mounted in mailagent/urls.py):

- /api/diagnostics/unified: the user's fetch cycles → director threads → agent threads with their log entries
  interleaved by time, and details per node. Admin/debug data: it never doubles as results (those are
  workspace items), and only staff users see it (their own runs' trail), like the runtime diagnostics;
  everyone else gets 403.
- /api/conversations/byDirectorEmail, /api/settings.

Configuration (directors, agents, prompts, prompt templates) is in config_api.py, memories in memory_api.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db import transaction
from django.http import HttpRequest
from ninja import Field, Router, Schema
from ninja.errors import HttpError

from apps.orchestration import actions, config_actions, selectors
from mailagent.api import ErrorOut

router = Router(tags=["diagnostics"])
MAX_DELETE = 10_000
STAFF_ONLY = "Diagnostics are for administrators (staff users); ask one to look, or see your runs under Runs"


def _require_staff(request: HttpRequest) -> None:
    if not request.user.is_staff:
        raise HttpError(403, STAFF_ONLY)


@router.get("", response={200: dict[str, Any], 403: ErrorOut})
def unified(request: HttpRequest, limit: int = 50) -> dict[str, Any]:
    _require_staff(request)
    return {"nodes": selectors.unified_tree(user=request.user, limit=max(1, min(limit, 500)))}


class DiagnosticsDeleteIn(Schema):
    # Optional for the schema, so a non-staff user hears 403 whatever the body; no ids deletes nothing.
    ids: list[str] = Field(
        default_factory=list, description="Entry ids as the tree gives them (log:<n>); other users' are skipped"
    )


class DiagnosticsDeletedOut(Schema):
    deleted: int = Field(description="How many entries were deleted")


def _log_pk(node_id: str) -> int | None:
    kind, _, raw = node_id.partition(":")
    return int(raw) if kind == "log" and raw.isdigit() else None


@router.post("/delete", response={200: DiagnosticsDeletedOut, 403: ErrorOut, 422: ErrorOut})
def delete_entries(request: HttpRequest, payload: DiagnosticsDeleteIn) -> dict[str, Any]:
    """Delete log entries (the Diagnostics page's bulk delete); runs, transcripts and results stay. Declared
    before /{node_id}: its path would otherwise take "delete" for a node id."""
    _require_staff(request)
    if len(payload.ids) > MAX_DELETE:
        raise HttpError(422, f"At most {MAX_DELETE} entries at a time")
    pks = [pk for pk in map(_log_pk, payload.ids) if pk is not None]
    if len(pks) != len(payload.ids):
        raise HttpError(422, "Only log entries (ids like log:12) can be deleted")
    return {"deleted": actions.delete_diagnostics_entries(user=request.user, entry_ids=pks)}


@router.get("/{node_id}", response={200: dict[str, Any], 403: ErrorOut})
def unified_node(request: HttpRequest, node_id: str) -> dict[str, Any]:
    _require_staff(request)
    return selectors.unified_node(user=request.user, node_id=node_id)


@router.delete("/{node_id}", response={200: DiagnosticsDeletedOut, 403: ErrorOut, 404: ErrorOut})
def delete_entry(request: HttpRequest, node_id: str) -> dict[str, Any]:
    """Delete one log entry of the user's own runs (404 for another user's, or one already gone)."""
    _require_staff(request)
    pk = _log_pk(node_id)
    deleted = actions.delete_diagnostics_entries(user=request.user, entry_ids=[pk]) if pk is not None else 0
    if not deleted:
        raise HttpError(404, "No such diagnostics entry")
    return {"deleted": deleted}


conversations_router = Router(tags=["conversations"])


class ConversationOut(Schema):
    id: int
    sessionId: str
    kind: str
    runId: int
    directorId: int
    directorName: str
    emailId: int
    workspaceId: int | None
    status: str
    finalized: bool
    created: str
    lastActiveAt: str
    endedAt: str | None
    messages: list[dict[str, Any]]


@conversations_router.get("/byDirectorEmail", response={200: ConversationOut, 404: ErrorOut})
def by_director_email(request: HttpRequest, directorId: int, emailId: int) -> dict[str, Any]:
    """The director thread of one email under one director, with the workspace that holds its results."""
    thread = selectors.director_thread_for_email(user=request.user, director_id=directorId, email_id=emailId)
    return {
        "id": thread.pk,
        "sessionId": thread.session_id,
        "kind": thread.kind,
        "runId": thread.run_id,
        "directorId": thread.director_id,
        "directorName": thread.director.name,
        "emailId": thread.run.message_id,
        "workspaceId": selectors.workspace_id_for_run(user=request.user, run_id=thread.run_id),
        "status": thread.status,
        "finalized": thread.finalized,
        "created": thread.created_at.isoformat(),
        "lastActiveAt": thread.last_active_at.isoformat(),
        "endedAt": thread.ended_at.isoformat() if thread.ended_at else None,
        "messages": thread.transcript,
    }


settings_router = Router(tags=["settings"])
SESSION_TIMEOUT_MAX_MINUTES = 24 * 60


class SettingsOut(Schema):
    sessionTimeoutMinutes: int
    virtualRoot: str
    effectiveVirtualRoot: str
    canEditSessionTimeout: bool
    canEditVirtualRoot: bool


class SettingsIn(Schema):
    sessionTimeoutMinutes: int | None = None
    virtualRoot: str | None = None


def _settings_out(user: Any) -> dict[str, Any]:
    configured = selectors.configured_filesystem_root(owner_id=user.pk)
    return {
        "sessionTimeoutMinutes": selectors.session_timeout_minutes(),
        "virtualRoot": configured,
        "effectiveVirtualRoot": selectors.filesystem_root_for_owner(owner_id=user.pk),
        "canEditSessionTimeout": bool(user.is_staff),
        "canEditVirtualRoot": bool(user.is_superuser),
    }


@settings_router.get("", response={200: SettingsOut})
def get_settings(request: HttpRequest) -> dict[str, Any]:
    """Spec §3.2.8: the agent session timeout (for everyone) and this user's virtual root."""
    return _settings_out(request.user)


@settings_router.put("", response={200: SettingsOut, 403: ErrorOut, 422: ErrorOut})
def put_settings(request: HttpRequest, payload: SettingsIn) -> dict[str, Any]:
    """Change the session timeout (staff: it applies to every user) and/or the virtual root (superusers: it
    decides which files the tools may read)."""
    if payload.sessionTimeoutMinutes is not None:
        if not request.user.is_staff:
            raise HttpError(403, "Only staff can change the session timeout: it applies to every user")
        if not 1 <= payload.sessionTimeoutMinutes <= SESSION_TIMEOUT_MAX_MINUTES:
            raise HttpError(422, f"sessionTimeoutMinutes must be between 1 and {SESSION_TIMEOUT_MAX_MINUTES}")
    if payload.virtualRoot is not None:
        if not request.user.is_superuser:
            raise HttpError(403, "Only an administrator (superuser) can change the directory the tools may read")
        if payload.virtualRoot.strip() and not Path(payload.virtualRoot.strip()).is_absolute():
            raise HttpError(422, "virtualRoot must be an absolute path, e.g. /srv/mailagent/files (or empty)")
    with transaction.atomic():
        if payload.sessionTimeoutMinutes is not None:
            config_actions.set_session_timeout(minutes=payload.sessionTimeoutMinutes)
        if payload.virtualRoot is not None:
            config_actions.set_filesystem_root(owner=request.user, path=payload.virtualRoot)
    return _settings_out(request.user)
