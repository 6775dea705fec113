from __future__ import annotations

from django.apps import AppConfig


class LlmConfig(AppConfig):
    name = "apps.llm"
    label = "llm"
    verbose_name = "Language models"
