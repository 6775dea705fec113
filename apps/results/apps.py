from __future__ import annotations

from django.apps import AppConfig


class ResultsConfig(AppConfig):
    """The Results page (emails → director runs → workspace items) and the per-user notifications of finished
    work. A user-facing layer above orchestration and workspaces: it imports them, nothing below imports it."""

    name = "apps.results"
    label = "results"
    verbose_name = "Results"
    nav_entries = [("Results", "results:page")]

    def ready(self) -> None:
        from apps.results import events

        events.connect_signals()
