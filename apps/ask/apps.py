from __future__ import annotations

from django.apps import AppConfig


class AskConfig(AppConfig):
    name = "apps.ask"
    label = "ask"
    verbose_name = "Ask Inbox"
    nav_entries = [("Ask", "ask:panel")]
