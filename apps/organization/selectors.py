"""Reads, permission-checked: another owner's objects are 404."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404

from apps.organization.models import GUIDELINE_NAME, GuidelineProposal, Library, Move, Suggestion, SuggestionStatus


def _pk(value: object) -> int:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        raise Http404("Not found") from None


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
    try:
        return (library.root_path / GUIDELINE_NAME).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def pending_proposals(*, library: Library) -> list[GuidelineProposal]:
    return list(GuidelineProposal.objects.filter(library=library, status="pending").order_by("-created_at")[:5])
