from __future__ import annotations

from django.contrib import admin
from django.contrib.auth.decorators import login_required
from django.urls import include, path

from mailagent import views
from mailagent.api import api

api.add_router("/accounts", "apps.accounts.api.router")
api.add_router("/mail", "apps.accounts.api.mail_router")
api.add_router("/search", "apps.search.api.router")
api.add_router("/filters", "apps.routing.api.router")
api.add_router("/fetcher", "apps.routing.api.fetcher_router")
api.add_router("/ask", "apps.ask.api.router")
api.add_router("/workspaces", "apps.workspaces.api.router")
api.add_router("/inbox", "apps.workspaces.inbox_api.router")
api.add_router("/diagnostics/unified", "apps.orchestration.api.router")
api.add_router("/conversations", "apps.orchestration.api.conversations_router")
api.add_router("/settings", "apps.orchestration.api.settings_router")
api.add_router("/directors", "apps.orchestration.config_api.directors_router")
api.add_router("/agents", "apps.orchestration.config_api.agents_router")
api.add_router("/prompts", "apps.orchestration.config_api.prompts_router")
api.add_router("/prompt-templates", "apps.orchestration.config_api.prompt_templates_router")
api.add_router("/memory", "apps.orchestration.memory_api.memory_router")
api.add_router("/inbox/conversations", "apps.ask.conversations_api.router")
api.add_router("/inbox/suggestions", "apps.organization.api.suggestions_router")
api.add_router("/inbox/organize", "apps.organization.api.organize_router")
api.add_router("/settings/organization", "apps.organization.api.settings_router")
api.add_router("/organization", "apps.organization.api.organization_router")

# The admin has no sign-in form of its own: /admin/login/ sends visitors to the app's (allauth) login, whose
# failed-login rate limits then cover the admin too (its own form had none: 30 wrong passwords, no lockout).
admin.site.login = login_required(admin.site.login)  # type: ignore[method-assign]

urlpatterns = [
    path("", include("apps.dashboard.urls")),
    path("diagnostics/", views.diagnostics, name="diagnostics"),
    path("accounts/", include("allauth.urls")),
    path("mail/", include("apps.accounts.urls")),
    path("search/", include("apps.search.urls")),
    path("routing/", include("apps.routing.urls")),
    path("runs/", include("apps.orchestration.urls")),
    path("prompts/", include("apps.orchestration.prompt_urls")),
    path("ask/", include("apps.ask.urls")),
    path("inbox/", include("apps.workspaces.urls")),
    path("organize/", include("apps.organization.urls")),
    path("results/", include("apps.results.urls")),
    path("replies/", include("apps.replies.urls")),
    path("setup/", include("apps.setup.urls")),
    path("settings/mcp/", include("apps.mcpserver.urls")),
    path("settings/", include("apps.setup.settings_urls")),
    path("admin/", admin.site.urls),
    path("api/", api.urls),
]
