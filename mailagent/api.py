"""The JSON API root: django-ninja, OpenAPI docs at /api/docs. Apps contribute routers in urls.py."""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.http import HttpRequest
from ninja import NinjaAPI, Schema, Status
from ninja.errors import HttpError
from ninja.security import django_auth

from mailagent.diagnostics import runtime_diagnostics

api = NinjaAPI(
    title="mailagent API",
    version="1",
    auth=django_auth,
    urls_namespace="api",
    docs_url="/docs",
)


class HealthOut(Schema):
    status: str
    database: str


@api.get("/health", auth=None, response={200: HealthOut, 503: HealthOut}, tags=["system"])
def health(request: HttpRequest) -> Status:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception:
        return Status(503, {"status": "error", "database": "unreachable"})
    return Status(200, {"status": "ok", "database": connection.vendor})


@api.get("/diagnostics/runtime", tags=["system"])
def diagnostics_runtime(request: HttpRequest) -> dict[str, Any]:
    if not request.user.is_staff:
        raise HttpError(403, "Diagnostics are for administrators")
    return runtime_diagnostics()
