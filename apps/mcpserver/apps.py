from __future__ import annotations

from django.apps import AppConfig


class McpServerConfig(AppConfig):
    """The mailbox MCP endpoint (/mcp/mailbox/) and its Settings page: above every feature it serves."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "apps.mcpserver"
    label = "mcpserver"
    verbose_name = "Mailbox MCP"
