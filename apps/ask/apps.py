from __future__ import annotations

from django.apps import AppConfig

STALLED_SCHEDULE_NAME = "ask: stalled runs"


class AskConfig(AppConfig):
    name = "apps.ask"
    label = "ask"
    verbose_name = "Ask Inbox"
    nav_entries = [("Ask", "ask:panel")]

    def ready(self) -> None:
        from mailagent.schedules import register_maintenance

        register_maintenance(name=STALLED_SCHEDULE_NAME, func="apps.ask.tasks.fail_stalled_ask_runs_task", minutes=1)
