"""Unified diagnostics (mounted at /api/diagnostics/unified): the user's fetch cycles → director threads →
agent threads with their log entries interleaved by time, and details per node. Admin/debug data: it
never doubles as results (those are workspace items)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router

from apps.orchestration import selectors

router = Router(tags=["diagnostics"])


@router.get("", response=dict[str, Any])
def unified(request: HttpRequest, limit: int = 50) -> dict[str, Any]:
    return {"nodes": selectors.unified_tree(user=request.user, limit=max(1, min(limit, 500)))}


@router.get("/{node_id}", response=dict[str, Any])
def unified_node(request: HttpRequest, node_id: str) -> dict[str, Any]:
    return selectors.unified_node(user=request.user, node_id=node_id)
