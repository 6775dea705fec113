"""`get_search_backend()`: the backend for the database in use, configured by settings.SEARCH_BACKEND.

SEARCH_BACKEND = {"BACKEND": "auto" | "<dotted path to a BaseSearchBackend subclass>", ...options}
"auto" picks by `connection.vendor`; the other keys are backend options (see base.DEFAULT_OPTIONS).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.utils.module_loading import import_string

from apps.search.backends.base import BaseSearchBackend, SearchFilters, SearchHit

__all__ = ["BaseSearchBackend", "SearchFilters", "SearchHit", "backend_class_for_vendor", "get_search_backend"]

VENDOR_BACKENDS = {
    "sqlite": "apps.search.backends.sqlite.SQLiteSearchBackend",
    "postgresql": "apps.search.backends.postgres.PostgresSearchBackend",
}


def backend_class_for_vendor(vendor: str) -> type[BaseSearchBackend]:
    path = VENDOR_BACKENDS.get(vendor)
    if path is None:
        raise ImproperlyConfigured(f"No search backend for the {vendor!r} database (SQLite and PostgreSQL only)")
    backend_class: type[BaseSearchBackend] = import_string(path)
    return backend_class


def get_search_backend() -> BaseSearchBackend:
    """The configured backend over the default database."""
    options: dict[str, Any] = dict(getattr(settings, "SEARCH_BACKEND", {}) or {})
    path = str(options.pop("BACKEND", "auto") or "auto")
    backend_class = backend_class_for_vendor(connection.vendor) if path == "auto" else import_string(path)
    return backend_class(options)
