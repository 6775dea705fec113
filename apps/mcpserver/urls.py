"""Settings → MCP tokens, mounted at /settings/mcp/."""

from __future__ import annotations

from django.urls import URLPattern, path

from apps.mcpserver import views

app_name = "mcp"

urlpatterns: list[URLPattern] = [
    path("", views.tokens, name="tokens"),
    path("<int:token_id>/revoke/", views.revoke, name="revoke"),
]
