from __future__ import annotations

from django.apps import AppConfig


class DashboardConfig(AppConfig):
    """The home page: what needs attention, recent runs, last sync per account, setup until complete.

    The top layer: it reads from every app below it and nothing imports it (the project's URLconf includes
    its urls by dotted path, so mailagent/ still imports no app)."""

    name = "apps.dashboard"
    label = "dashboard"
    verbose_name = "Dashboard"
