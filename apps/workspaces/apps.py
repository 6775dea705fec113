from __future__ import annotations

from django.apps import AppConfig


class WorkspacesConfig(AppConfig):
    name = "apps.workspaces"
    label = "workspaces"
    verbose_name = "Workspaces"
    nav_entries = [("Inbox", "inbox:inbox")]

    def ready(self) -> None:
        from mailagent.schedules import register_maintenance

        # Daily; created after `migrate` with the other maintenance schedules (apps.accounts connects that).
        register_maintenance(
            name=MCP_AUDIT_SCHEDULE_NAME, func="apps.workspaces.tasks.prune_mcp_calls_task", minutes=1440
        )


MCP_AUDIT_SCHEDULE_NAME = "workspaces: prune the MCP audit ledger"
