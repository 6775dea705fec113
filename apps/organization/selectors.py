"""Reads, permission-checked: another owner's objects are 404."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404

from apps.organization.fsops import LibraryPathError, open_regular
from apps.organization.models import (
    GUIDELINE_NAME,
    FileStatus,
    GuidelineProposal,
    Library,
    LibraryFile,
    Move,
    Suggestion,
    SuggestionStatus,
)
from apps.organization.roots import library_problem

MAX_GUIDELINE_BYTES = 400_000  # 100,000 characters of UTF-8 (actions.MAX_GUIDELINE_CHARS) at most


def _pk(value: object) -> int:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        raise Http404("Not found") from None


def access_library_file(*, user: Any, file_id: object) -> LibraryFile:
    """One of the user's library files that is still there (404 for another owner's, a missing one, or none)."""
    file = (
        LibraryFile.objects.select_related("library")
        .filter(pk=_pk(file_id), library__owner=user)
        .exclude(status=FileStatus.MISSING)
        .first()
    )
    if file is None:
        raise Http404("No such file")
    return file


def access_suggestion(*, user: Any, suggestion_id: object) -> Suggestion:
    found = (
        Suggestion.objects.select_related("file__library")
        .filter(pk=_pk(suggestion_id), file__library__owner=user)
        .first()
    )
    if found is None:
        raise Http404("No such suggestion")
    return found


def access_move(*, user: Any, move_id: object) -> Move:
    found = Move.objects.select_related("library", "file").filter(pk=_pk(move_id), library__owner=user).first()
    if found is None:
        raise Http404("No such move")
    return found


def access_proposal(*, user: Any, proposal_id: object) -> GuidelineProposal:
    found = GuidelineProposal.objects.filter(pk=_pk(proposal_id), library__owner=user).first()
    if found is None:
        raise Http404("No such proposal")
    return found


def list_suggestions(*, library: Library, status: str | None = None, limit: int = 200) -> QuerySet[Suggestion]:
    rows = Suggestion.objects.filter(file__library=library).select_related("file")
    if status:
        rows = rows.filter(status__in=[s for s in status.split(",") if s in SuggestionStatus.values])
    return rows.order_by("-created_at", "-pk")[:limit]


def pending_suggestions(*, library: Library) -> list[Suggestion]:
    return list(
        Suggestion.objects.filter(file__library=library, status=SuggestionStatus.PENDING)
        .select_related("file")
        .order_by("-confidence", "pk")
    )


def recent_moves(*, library: Library, limit: int = 30) -> list[Move]:
    return list(Move.objects.filter(library=library).select_related("file").order_by("-created_at", "-pk")[:limit])


def read_guideline(*, library: Library) -> str:
    """guideline.md, read without following links (a link or hard link there could show any server file)."""
    if library_problem(library):
        return ""
    try:
        with open_regular(library.root_path, GUIDELINE_NAME) as handle:
            return handle.read(MAX_GUIDELINE_BYTES).decode("utf-8", errors="replace")
    except (OSError, LibraryPathError):
        return ""


def pending_proposals(*, library: Library) -> list[GuidelineProposal]:
    return list(GuidelineProposal.objects.filter(library=library, status="pending").order_by("-created_at")[:5])


def transcript_turns(*, suggestion: Suggestion) -> list[dict[str, Any]]:
    """The organize agent's messages (OpenAI chat format) as turns for the transcript page: role, text, the
    tool it answered for, and the tool calls it made."""
    names: dict[str, str] = {}
    turns = []
    for message in suggestion.transcript or []:
        if not isinstance(message, dict):
            continue
        calls = []
        for call in message.get("tool_calls") or []:
            function = (call or {}).get("function") or {}
            names[str(call.get("id", ""))] = str(function.get("name", ""))
            calls.append({"name": function.get("name", "?"), "arguments": function.get("arguments", "")})
        content = message.get("content")
        if isinstance(content, list):  # content parts
            content = "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
        turns.append(
            {
                "role": str(message.get("role", "")),
                "content": str(content or ""),
                "tool_name": names.get(str(message.get("tool_call_id", "")), str(message.get("name", ""))),
                "tool_calls": calls,
            }
        )
    return turns


def provider_event_rows(*, suggestion: Suggestion) -> list[dict[str, Any]]:
    rows = []
    for event in suggestion.provider_events or []:
        if not isinstance(event, dict):
            continue
        usage = event.get("usage") or {}
        tokens = sum(int(v) for k, v in usage.items() if k in ("prompt_tokens", "completion_tokens") and v)
        rows.append({**event, "tokens": tokens})
    return rows
