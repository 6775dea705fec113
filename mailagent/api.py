"""The JSON API root: django-ninja, OpenAPI docs at /api/docs. Apps contribute routers in urls.py.

Every error answer has one shape, `{"error": "<message>"}`, sometimes with more fields (`field`, `errors`,
`currentRevision`, ...): the exception handlers below turn django-ninja's own errors (`{"detail": ...}` by
default) into it, mailagent.middleware.ApiJsonErrorsMiddleware does the same for whatever answers below
the API (unknown paths, CSRF, Django's 500), and the OpenAPI schema declares it for every operation with
the status codes the operation can really give.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.conf import settings
from django.contrib.auth import logout as auth_logout
from django.core.exceptions import RequestDataTooBig
from django.db import DataError, connection
from django.http import Http404, HttpRequest, HttpResponse
from django.http.multipartparser import MultiPartParserError
from django.shortcuts import render
from ninja import NinjaAPI, Schema, Status
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.openapi.docs import Swagger, _csrf_needed
from ninja.parser import Parser
from ninja.security import django_auth

from mailagent.diagnostics import runtime_diagnostics
from mailagent.request_limits import too_large_message
from mailagent.textinput import MAX_REPORTED, NUL_PROBLEM, nul_locations

logger = logging.getLogger(__name__)

ERROR_SCHEMA_NAME = "Error"
ERROR_SCHEMA: dict[str, Any] = {
    "title": ERROR_SCHEMA_NAME,
    "type": "object",
    "properties": {
        "error": {"type": "string", "description": "What went wrong and what to do about it"},
        "field": {"type": ["string", "null"], "description": "The input the error is about, when there is one"},
        "errors": {"type": "array", "items": {"type": "object"}, "description": "Validation details"},
    },
    "required": ["error"],
}
ERROR_DESCRIPTIONS = {
    "400": "Malformed request (body, encoding, a number out of range)",
    "401": "Not logged in",
    "403": "Not allowed (CSRF check failed, or staff only)",
    "404": "No such object for this user",
    "422": "Invalid input",
}
UNSAFE_METHODS = {"post", "put", "patch", "delete"}


class MailagentAPI(NinjaAPI):
    def get_openapi_schema(self, *, path_prefix: str | None = None, path_params: Any = None) -> Any:
        schema = super().get_openapi_schema(path_prefix=path_prefix, path_params=path_params)
        schema.setdefault("components", {}).setdefault("schemas", {})[ERROR_SCHEMA_NAME] = ERROR_SCHEMA
        for operations in schema["paths"].values():
            for method, operation in operations.items():
                declare_error_responses(method, operation)
        return schema


def declare_error_responses(method: str, operation: dict[str, Any]) -> None:
    """The error statuses this operation can answer, all with the Error schema (kept where already declared)."""
    parameters = operation.get("parameters", [])
    codes = set()
    if operation.get("security"):
        codes.add("401")
    if parameters or "requestBody" in operation:
        # Invalid input; and an id in the path, query or body may name nothing this user owns.
        codes.update({"400", "404", "422"})
    if method in UNSAFE_METHODS:
        codes.update({"400", "403"})  # a malformed body; django_auth's CSRF check
    responses = operation.setdefault("responses", {})
    for code in sorted(codes):
        # django-ninja keys the statuses a route declares with ints: a "400" next to 400 would be a duplicate
        # key in the JSON document, which Swagger UI refuses to render ("duplicated mapping key").
        if int(code) in responses:
            responses[code] = responses.pop(int(code))
        existing = responses.get(code)
        if existing is None:
            responses[code] = {
                "description": ERROR_DESCRIPTIONS[code],
                "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{ERROR_SCHEMA_NAME}"}}},
            }


class NulRefusingParser(Parser):
    """django-ninja's JSON and query parsing, refusing NUL characters (U+0000) on every database alike: a 422
    naming the field, where PostgreSQL alone used to fail later with a vague "out of range" 400."""

    def parse_body(self, request: HttpRequest) -> Any:
        data = super().parse_body(request)
        self._refuse_nul(data, "body")
        return data

    def parse_querydict(self, data: Any, list_fields: list[str], request: HttpRequest) -> Any:
        parsed = super().parse_querydict(data, list_fields, request)
        self._refuse_nul(parsed, "query")
        return parsed

    @staticmethod
    def _refuse_nul(data: Any, source: str) -> None:
        locations = nul_locations(data)[:MAX_REPORTED]
        if locations:
            raise ValidationError(
                [{"loc": (source, *loc), "msg": NUL_PROBLEM, "type": "nul_character"} for loc in locations]
            )


class LocalSwagger(Swagger):
    """Swagger UI from django-ninja's own static files (the CDN page breaks the CSP). django-ninja renders
    that page only when "ninja" is in INSTALLED_APPS; it is not (importing it there loaded django-ninja and
    the Django test utilities it imports, ~30 MB, into every process at startup, the cluster's and watchers'
    too: issue 40), so settings.py lists its templates and static directories and this renders the same
    page with the same context."""

    def render_page(self, request: HttpRequest, api: NinjaAPI, **kwargs: Any) -> HttpResponse:
        self.settings["url"] = self.get_openapi_url(api, kwargs)
        context = {"swagger_settings": json.dumps(self.settings, indent=1), "api": api, "add_csrf": _csrf_needed(api)}
        return render(request, self.template, context)


api = MailagentAPI(
    parser=NulRefusingParser(),
    title="mailagent API",
    version="1",
    auth=django_auth,
    urls_namespace="api",
    docs_url="/docs",
    docs=LocalSwagger(),
)


class InvalidField(HttpError):
    """An input that parsed but cannot be used (a name taken, an id naming nothing of the user's, a value
    contradicting another): answered `{"error": ..., "field": <the API's name for it>}`, 422 by default."""

    def __init__(self, field: str, message: str, status_code: int = 422) -> None:
        super().__init__(status_code, message)
        self.field = field


def error_response(request: HttpRequest, status: int, message: str, **extra: Any) -> HttpResponse:
    return api.create_response(request, {"error": message, **extra}, status=status)


@api.exception_handler(ValidationError)
def on_validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    details = [
        f"{'.'.join(str(part) for part in error.get('loc', ()))}: {error.get('msg', 'invalid')}" for error in exc.errors
    ]
    return error_response(request, 422, "Invalid input: " + "; ".join(details), errors=exc.errors)


@api.exception_handler(AuthenticationError)
def on_authentication_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return error_response(request, 401, "Authentication required")


@api.exception_handler(HttpError)
def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if isinstance(exc.__cause__, ValidationError):
        # django-ninja turns every error of the body parser into "Cannot parse request body" (400); a body
        # that parsed but was refused by NulRefusingParser is invalid input, answered as such.
        return on_validation_error(request, exc.__cause__)
    if isinstance(exc, InvalidField):
        return error_response(request, exc.status_code, str(exc), field=exc.field)
    return error_response(request, exc.status_code, str(exc))


@api.exception_handler(Http404)
def on_not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return error_response(request, 404, "Not found")


@api.exception_handler(MultiPartParserError)
def on_malformed_multipart(request: HttpRequest, exc: MultiPartParserError) -> HttpResponse:
    return error_response(request, 400, f"Malformed multipart body: {exc}")


@api.exception_handler(RequestDataTooBig)
def on_body_too_large(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    # Django's DATA_UPLOAD_MAX_MEMORY_SIZE: bodies over it are refused before the server's limit only when a
    # request reaches the app another way (a test client, another server); the same 413 and message either way.
    try:
        size: int | None = int(request.META.get("CONTENT_LENGTH") or 0) or None
    except ValueError:
        size = None
    limit = int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
    return error_response(request, 413, too_large_message(limit, "authenticated", size))


@api.exception_handler(OverflowError)
def on_number_out_of_range(request: HttpRequest, exc: OverflowError) -> HttpResponse:
    # SQLite cannot bind integers past 2**63-1 (an id or a limit); such an object cannot exist.
    return error_response(request, 400, "A number in the request is out of range")


@api.exception_handler(DataError)
def on_data_error(request: HttpRequest, exc: DataError) -> HttpResponse:
    logger.info("Rejected out-of-range input on %s: %s", request.path, exc)
    return error_response(request, 400, "A value in the request is out of range for the database")


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


class ErrorOut(Schema):
    error: str


class WhoamiOut(Schema):
    authenticated: bool
    id: int | None = None
    username: str | None = None
    email: str | None = None
    isStaff: bool = False
    isSuperuser: bool = False


class LogoutOut(Schema):
    loggedOut: bool


@api.get("/auth/whoami", auth=None, response={200: WhoamiOut}, tags=["auth"])
def whoami(request: HttpRequest) -> dict[str, Any]:
    """Who the session belongs to; public (spec §3.2.2a), so a client can tell whether to sign in."""
    user = request.user
    if not user.is_authenticated:
        return {"authenticated": False}
    return {
        "authenticated": True,
        "id": user.pk,
        "username": user.get_username(),
        "email": getattr(user, "email", "") or None,
        "isStaff": bool(user.is_staff),
        "isSuperuser": bool(user.is_superuser),
    }


@api.post("/auth/logout", response={200: LogoutOut}, tags=["auth"])
def logout(request: HttpRequest) -> dict[str, Any]:
    """Ends the session (like the sign-out page): the session cookie no longer authenticates."""
    auth_logout(request)
    return {"loggedOut": True}


@api.get("/diagnostics/runtime", response={200: dict[str, Any], 403: ErrorOut}, tags=["system"])
def diagnostics_runtime(request: HttpRequest) -> dict[str, Any]:
    if not request.user.is_staff:
        raise HttpError(403, "Diagnostics are for administrators")
    return runtime_diagnostics()
