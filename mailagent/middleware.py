from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.middleware import LoginRequiredMiddleware as DjangoLoginRequiredMiddleware
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase

# The documented allowlist: everything else needs a logged-in user.
PUBLIC_EXACT_PATHS = frozenset({"/api/health"})
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
            return JsonResponse({"detail": "Authentication required"}, status=401)
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
