from __future__ import annotations

from django.apps import AppConfig


class SetupConfig(AppConfig):
    """First-run wizard and the settings pages: the top layer (imports orchestration, routing, accounts,
    workspaces; nothing imports it)."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "apps.setup"
    label = "setup"
    verbose_name = "Setup and settings"
    nav_more_entries = [("Settings", "settings:index")]
