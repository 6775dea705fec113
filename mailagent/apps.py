from __future__ import annotations

from django.apps import AppConfig
from django.core import checks


class MailagentConfig(AppConfig):
    name = "mailagent"
    verbose_name = "mailagent"

    def ready(self) -> None:
        from mailagent import checks as project_checks

        checks.register(project_checks.check_encryption_key, checks.Tags.security, deploy=False)
        checks.register(project_checks.check_sqlite_features, checks.Tags.database)
        checks.register(project_checks.check_web_processes)
