from __future__ import annotations

from django.apps import AppConfig


class WorkspacesConfig(AppConfig):
    name = "apps.workspaces"
    label = "workspaces"
    verbose_name = "Workspaces"
    nav_entries = [("Inbox", "inbox:inbox")]
