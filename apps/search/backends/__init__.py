"""`get_search_backend()`: the backend for the database in use, configured by settings.SEARCH_BACKEND.

SEARCH_BACKEND = {"BACKEND": "auto" | "<dotted path to a BaseSearchBackend subclass>", ...options}
"auto" picks by `connection.vendor`; the other keys are backend options (see base.DEFAULT_OPTIONS).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.utils.module_loading import import_string

from apps.search.backends.base import BaseSearchBackend, SearchFilters, SearchHit

__all__ = [
    "BaseSearchBackend",
    "SearchFilters",
    "SearchHit",
    "backend_class_for_vendor",
    "get_search_backend",
    "serve_one_query",
]

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


# Options this process sets over the settings' (see serve_one_query).
_process_options: dict[str, Any] = {}


@contextmanager
def serve_one_query() -> Iterator[None]:
    """Inside, the process answers one query and exits (`manage.py search`, `manage.py ask`): it does not
    build the in-memory keyword index, whose first load reads every document (~4 s of CPU for 45k mails, in
    a thread that slows the query itself) to save milliseconds on each of many queries. FTS5 ranks the same
    hits with the same scores (tests/search/test_keyword_index.py)."""
    before = dict(_process_options)
    _process_options["KEYWORD_INDEX"] = False
    try:
        yield
    finally:
        _process_options.clear()
        _process_options.update(before)


def get_search_backend() -> BaseSearchBackend:
    """The configured backend over the default database."""
    options: dict[str, Any] = dict(getattr(settings, "SEARCH_BACKEND", {}) or {})
    options.update(_process_options)
    path = str(options.pop("BACKEND", "auto") or "auto")
    backend_class = backend_class_for_vendor(connection.vendor) if path == "auto" else import_string(path)
    return backend_class(options)
