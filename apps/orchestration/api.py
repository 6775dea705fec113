"""Unified diagnostics (mounted at /api/diagnostics/unified): the user's fetch cycles → director threads →
agent threads with their log entries interleaved by time, and details per node. Admin/debug data: it
never doubles as results (those are workspace items), and only staff users see it (their own runs' trail),
like the runtime diagnostics; everyone else gets 403."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router
from ninja.errors import HttpError

from apps.orchestration import selectors
from mailagent.api import ErrorOut

router = Router(tags=["diagnostics"])
STAFF_ONLY = "Diagnostics are for administrators (staff users); ask one to look, or see your runs under Runs"


def _require_staff(request: HttpRequest) -> None:
    if not request.user.is_staff:
        raise HttpError(403, STAFF_ONLY)


@router.get("", response={200: dict[str, Any], 403: ErrorOut})
def unified(request: HttpRequest, limit: int = 50) -> dict[str, Any]:
    _require_staff(request)
    return {"nodes": selectors.unified_tree(user=request.user, limit=max(1, min(limit, 500)))}


@router.get("/{node_id}", response={200: dict[str, Any], 403: ErrorOut})
def unified_node(request: HttpRequest, node_id: str) -> dict[str, Any]:
    _require_staff(request)
    return selectors.unified_node(user=request.user, node_id=node_id)
