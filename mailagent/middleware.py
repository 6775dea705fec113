from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.middleware import LoginRequiredMiddleware as DjangoLoginRequiredMiddleware
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponsePermanentRedirect, JsonResponse
from django.http.multipartparser import MultiPartParser, MultiPartParserError
from django.http.response import HttpResponseBase
from django.middleware.common import CommonMiddleware as DjangoCommonMiddleware
from django.utils.http import escape_leading_slashes

# The documented allowlist: everything else needs a logged-in user.
PUBLIC_EXACT_PATHS = frozenset({"/api/health", "/api/auth/whoami"})
PUBLIC_PATH_PREFIXES = ("/accounts/",)


def is_public_path(path: str) -> bool:
    if path in PUBLIC_EXACT_PATHS or path.rstrip("/") in PUBLIC_EXACT_PATHS:
        return True
    static_prefix = "/" + settings.STATIC_URL.lstrip("/")
    return path.startswith(PUBLIC_PATH_PREFIXES) or path.startswith(static_prefix)


class LoginRequiredMiddleware(DjangoLoginRequiredMiddleware):
    """Django's login-required middleware with our allowlist and JSON 401s for the API."""

    def process_request(self, request: HttpRequest) -> HttpResponse | None:
        # API paths are decided here, before URL resolution, so unknown /api/ paths answer 401 too and no
        # view-level opt-out can make an API route public: only the allowlist above is.
        path = request.path_info
        if path.startswith("/api/") and not is_public_path(path) and not request.user.is_authenticated:
            return JsonResponse({"error": "Authentication required"}, status=401)
        return None

    def process_view(
        self,
        request: HttpRequest,
        view_func: Callable[..., Any],
        view_args: tuple[Any, ...],
        view_kwargs: dict[str, Any],
    ) -> HttpResponseBase | None:
        if request.user.is_authenticated:
            return None
        if is_public_path(request.path_info):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)


API_PREFIX = "/api/"
# What an API client is told when something below the API (URL resolution, CSRF, Django's error handling)
# answered with an HTML page; the status code is kept.
API_ERROR_DETAILS = {
    400: "Bad request",
    403: "Forbidden",
    404: "Not found: no API route or object at this path",
    405: "Method not allowed on this path",
    413: "Request body too large",
    500: "Internal server error; the server log has the details",
}


class ApiJsonErrorsMiddleware:
    """Every error under /api/ is JSON with the API's one shape, `{"error": "<message>"}` (see mailagent/api.py),
    whatever answered it (an unknown path, Django's CSRF or error handlers, an exception in a view), with
    DEBUG on or off. Malformed request bodies and out-of-range numbers are the client's error (400), on pages
    too, not a server error."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if (
            response.status_code >= 400
            and request.path_info.startswith(API_PREFIX)
            and not response.get("Content-Type", "").startswith("application/json")
        ):
            detail = API_ERROR_DETAILS.get(response.status_code) or response.reason_phrase
            replacement = JsonResponse({"error": detail}, status=response.status_code)
            for header in ("Allow", "Retry-After"):
                if response.has_header(header):
                    replacement[header] = response[header]
            return replacement
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponseBase | None:
        if isinstance(exception, MultiPartParserError):
            message = f"Malformed multipart body: {exception}"
        elif isinstance(exception, OverflowError):
            message = "A number in the request is out of range"
        else:
            return None
        if request.path_info.startswith(API_PREFIX):
            return JsonResponse({"error": message}, status=400)
        return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")


class MalformedMultipartMiddleware:
    """A multipart request whose Content-Type has no valid boundary (or whose length is invalid) is answered
    400 before anything parses it: Django raises MultiPartParserError from `request.POST`, and the CSRF
    check reads `request.POST` of every POST, which made it a server error on every form and API endpoint."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if (request.content_type or "").startswith("multipart/"):
            try:
                # Validates the headers only; the body stream is not touched.
                MultiPartParser(request.META, io.BytesIO(), [], request.encoding)
            except MultiPartParserError as exc:
                message = f"Malformed multipart body: {exc}"
                if request.path_info.startswith(API_PREFIX):
                    return JsonResponse({"error": message}, status=400)
                return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")
        return self.get_response(request)


class CommonMiddleware(DjangoCommonMiddleware):
    """Django's CommonMiddleware, except that a POST/PUT/PATCH/DELETE to a path missing its trailing slash is
    redirected with 308 (the client repeats the same method and body) instead of raising RuntimeError (a
    500) under DEBUG or turning into a GET through a 301 without it."""

    def get_full_path_with_slash(self, request: HttpRequest) -> str:
        return escape_leading_slashes(request.get_full_path(force_append_slash=True))

    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if (
            response.status_code == 404
            and request.method not in ("GET", "HEAD")
            and self.should_redirect_with_slash(request)
        ):
            redirect = HttpResponsePermanentRedirect(self.get_full_path_with_slash(request))
            redirect.status_code = 308
            return super().process_response(request, redirect)
        return super().process_response(request, response)
