from __future__ import annotations

from django.apps import AppConfig


class LlmConfig(AppConfig):
    name = "apps.llm"
    label = "llm"
    verbose_name = "Language models"

    def ready(self) -> None:
        from apps.llm import queue  # models are importable only now

        queue.install()
