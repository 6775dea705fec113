"""Background jobs of the workspaces app (django-q2 runs them by dotted path)."""

from __future__ import annotations

from apps.workspaces import actions


def prune_mcp_calls_task() -> int:
    """Daily: the MCP audit ledger keeps MAILAGENT_MCP_AUDIT_DAYS of calls."""
    return actions.prune_mcp_calls()
