from __future__ import annotations

from django.apps import AppConfig


class OrchestrationConfig(AppConfig):
    name = "apps.orchestration"
    label = "orchestration"
    verbose_name = "Orchestration"
    nav_entries = [("Runs", "runs:list"), ("Memory", "runs:memories")]
