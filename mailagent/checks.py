from __future__ import annotations

from typing import Any

from django.core import checks

from mailagent.crypto import encryption_status, plaintext_refusal


def check_encryption_key(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    if refusal := plaintext_refusal():
        return [checks.Error(refusal, id="mailagent.E002")]
    status = encryption_status()
    if status["mode"] == "plaintext":
        return [checks.Warning(status["warning"], id="mailagent.W001")]
    return []


def check_sqlite_features(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    import sqlite3

    if sqlite3.sqlite_version_info < (3, 35, 0):
        return [
            checks.Error(
                f"SQLite {sqlite3.sqlite_version} is too old; mailagent needs 3.35 or newer.",
                id="mailagent.E001",
            )
        ]
    return []


def check_web_processes(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    from django.conf import settings

    if settings.WEB_PROCESSES > 1 and not settings.REDIS_URL:
        return [
            checks.Warning(
                f"MAILAGENT_WEB_PROCESSES is {settings.WEB_PROCESSES} but REDIS_URL is not set: live page updates"
                " (websockets) and rate-limit counters are kept per process, so a page may miss events sent"
                " from another process.",
                hint="Set REDIS_URL, or keep MAILAGENT_WEB_PROCESSES at 1.",
                id="mailagent.W002",
            )
        ]
    return []
