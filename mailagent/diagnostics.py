"""Runtime facts for the diagnostics API and page: read-only, no app imports."""

from __future__ import annotations

import importlib.metadata
import platform
import sys
from typing import Any

import django
from django.apps import apps
from django.conf import settings
from django.db import connection

from mailagent.crypto import encryption_status

VERSIONED_PACKAGES = (
    "django",
    "channels",
    "channels-redis",
    "daphne",
    "django-q2",
    "django-allauth",
    "django-ninja",
    "django-htmx",
    "psycopg",
    "pgvector",
    "openai",
    "cryptography",
)


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version(), "django": django.get_version()}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def database_info() -> dict[str, Any]:
    info: dict[str, Any] = {"vendor": connection.vendor}
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SHOW server_version")
            info["server_version"] = cursor.fetchone()[0]
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
            info["pgvector"] = row[0] if row else None
        elif connection.vendor == "sqlite":
            import sqlite3

            info["server_version"] = sqlite3.sqlite_version
            cursor.execute("PRAGMA journal_mode")
            info["journal_mode"] = cursor.fetchone()[0]
            info["path"] = str(connection.settings_dict["NAME"])
    return info


def model_counts() -> dict[str, int]:
    counts: dict[str, int] = {}
    for model in apps.get_models():
        module = model.__module__
        if module.startswith("apps.") or model._meta.label in {"auth.User", "django_q.Task", "django_q.Schedule"}:
            counts[model._meta.label] = model._default_manager.count()
    return counts


def runtime_diagnostics() -> dict[str, Any]:
    layer = str(settings.CHANNEL_LAYERS["default"]["BACKEND"])
    return {
        "encryption": encryption_status(),
        "data_dir": str(settings.DATA_DIR),
        "database": database_info(),
        "broker": "redis" if settings.REDIS_URL else "orm",
        "channel_layer": layer.rsplit(".", 1)[-1],
        "debug": settings.DEBUG,
        "counts": model_counts(),
        "versions": package_versions(),
        "python_executable": sys.executable,
    }
