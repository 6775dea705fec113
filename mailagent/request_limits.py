"""Request-body limits enforced before anything reads the body.

Django's ASGI handler reads the whole body (spooling it to disk) before any middleware or view runs, so
neither authentication nor a view's size check happens in time to protect the server. This ASGI
middleware sits in front of Django and decides from the headers:

- anonymous requests (login, signup, password reset, ...) may send at most
  `MAILAGENT_MAX_ANONYMOUS_REQUEST_BYTES`;
- requests from a logged-in session may send `MAILAGENT_MAX_REQUEST_BYTES`; so may a request whose bearer
  token the app behind checked (the MCP endpoint calls grant_authenticated_limit after authenticating it,
  before it reads the body). An `Authorization: Bearer` header alone lifts nothing: a request carrying one
  has its declared length checked when the app first reads the body, after the token was checked;
- upload endpoints (`MAILAGENT_UPLOAD_URL_NAMES`) accept `MAILAGENT_MAX_UPLOAD_BYTES` plus form overhead,
  but only from a logged-in session, checked here against the session store before the body is read.

A declared Content-Length over the limit is answered 413 without reading a byte; bodies without one
(chunked) are counted as they stream and cut off with 413 at the limit. This only bounds memory because
the server streams bodies to the app with back-pressure (uvicorn; see mailagent/server.py) instead of
buffering them whole first as Daphne/Twisted does.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from functools import cache
from http.cookies import SimpleCookie
from importlib import import_module
from typing import Any

from django.conf import settings
from django.template.defaultfilters import filesizeformat
from django.urls import NoReverseMatch, reverse
from django.utils.html import escape

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Any, Any, Any], Awaitable[None]]

# Multipart framing and the form's other fields on top of the file itself, so a file just over the upload
# limit still reaches the view, which explains the limit in the page instead of a bare 413.
UPLOAD_FORM_OVERHEAD_BYTES = 1024 * 1024


def anonymous_limit() -> int:
    return int(settings.MAILAGENT_MAX_ANONYMOUS_REQUEST_BYTES)


def authenticated_limit() -> int:
    return int(settings.MAILAGENT_MAX_REQUEST_BYTES)


def upload_limit() -> int:
    return int(settings.MAILAGENT_MAX_UPLOAD_BYTES) + UPLOAD_FORM_OVERHEAD_BYTES


@cache
def _upload_paths() -> frozenset[str]:
    paths = set()
    for name in settings.MAILAGENT_UPLOAD_URL_NAMES:
        try:
            paths.add(reverse(name))
        except NoReverseMatch:
            continue
    return frozenset(paths)


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value)
    return None


def _declared_length(scope: Scope) -> int | None:
    raw = _header(scope, b"content-length")
    if raw is None:
        return None
    try:
        return max(0, int(raw.strip()))
    except ValueError:
        return None


def _has_bearer_token(scope: Scope) -> bool:
    value = _header(scope, b"authorization") or b""
    return value[:7].lower() == b"bearer " and len(value.strip()) > 7


LIMIT_SCOPE_KEY = "mailagent.body_limit"


def grant_authenticated_limit(scope: Scope) -> None:
    """For the app behind the middleware: this request's credentials (a bearer token) were checked, so its
    body may be as large as a logged-in user's. Call it before reading the body."""
    limit = scope.get(LIMIT_SCOPE_KEY)
    if isinstance(limit, _Limit):
        limit.grant()


def _session_key(scope: Scope) -> str:
    raw = _header(scope, b"cookie")
    if not raw:
        return ""
    cookies: SimpleCookie = SimpleCookie()
    try:
        cookies.load(raw.decode("latin-1"))
    except Exception:
        return ""
    morsel = cookies.get(settings.SESSION_COOKIE_NAME)
    return morsel.value if morsel is not None else ""


async def session_user_is_authenticated(scope: Scope) -> bool:
    """Whether the request's session cookie belongs to an active user (same check as Django's auth)."""
    key = _session_key(scope)
    if not key:
        return False
    from django.contrib.auth import aget_user
    from django.http import HttpRequest

    engine = import_module(settings.SESSION_ENGINE)
    request = HttpRequest()
    request.session = engine.SessionStore(key)
    user = await aget_user(request)
    return bool(user.is_authenticated)


class _Limit:
    """The request's body limit, decided lazily: the session is only looked up when a body needs it."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.is_upload = scope.get("path", "") in _upload_paths()
        self._decided: int | None = None
        self.reason = "anonymous"

    def grant(self) -> None:
        if not self.is_upload:
            self._decided = authenticated_limit()
            self.reason = "authenticated"

    async def for_size(self, size: int) -> int:
        if size <= anonymous_limit():
            return anonymous_limit()
        if self._decided is None:
            self._decided = await self._decide()
        return self._decided

    async def _decide(self) -> int:
        if self.is_upload:
            if await session_user_is_authenticated(self.scope):
                self.reason = "upload"
                return upload_limit()
            return anonymous_limit()
        if await session_user_is_authenticated(self.scope):
            self.reason = "authenticated"
            return authenticated_limit()
        return anonymous_limit()


def too_large_message(limit: int, reason: str, size: int | None) -> str:
    sent = f"The request body is {filesizeformat(size)}; " if size is not None else "The request body is too large; "
    if reason == "upload":
        what = f"uploads here may be at most {filesizeformat(limit - UPLOAD_FORM_OVERHEAD_BYTES)}"
        hint = "Import bigger archives from disk on the server instead."
    elif reason == "authenticated":
        what = f"this server accepts at most {filesizeformat(limit)} per request"
        hint = "Send less data per request."
    else:
        what = f"without a login this server accepts at most {filesizeformat(limit)}"
        hint = "Log in first if you meant to upload something."
    return f"{sent}{what}. {hint}"


async def send_too_large(scope: Scope, send: Send, *, limit: int, reason: str, size: int | None) -> None:
    message = too_large_message(limit, reason, size)
    accept = (_header(scope, b"accept") or b"").lower()
    if scope.get("path", "").startswith("/api/") or (b"json" in accept and b"html" not in accept):
        body = json.dumps({"error": message}).encode()
        content_type = b"application/json"
    else:
        body = (
            '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1"><title>Request too large</title>'
            f"</head><body><h1>Request too large (413)</h1><p>{escape(message)}</p>"
            '<p><a href="/">Back to mailagent</a></p></body></html>'
        ).encode()
        content_type = b"text/html; charset=utf-8"
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", content_type),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})


class RequestBodyLimitMiddleware:
    """ASGI middleware: 413 for bodies over the request's limit, before the app reads them."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = _Limit(scope)
        scope[LIMIT_SCOPE_KEY] = limit
        declared = _declared_length(scope)
        # With a bearer token the app may vouch for it (grant_authenticated_limit) before it reads the body:
        # the declared length is then checked at the first read, against the limit decided by then.
        declared_unchecked = declared is not None and _has_bearer_token(scope)
        if declared is not None and not declared_unchecked:
            allowed = await limit.for_size(declared)
            if declared > allowed:
                await send_too_large(scope, send, limit=allowed, reason=limit.reason, size=declared)
                return

        received = 0
        cut_off = False
        response_started = False

        async def counted_receive() -> Message:
            nonlocal received, cut_off, declared_unchecked
            if cut_off:
                return {"type": "http.disconnect"}
            if declared_unchecked and declared is not None:
                declared_unchecked = False
                allowed = await limit.for_size(declared)
                if declared > allowed:
                    cut_off = True
                    if not response_started:
                        await send_too_large(scope, send, limit=allowed, reason=limit.reason, size=declared)
                    return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] != "http.request":
                return message
            received += len(message.get("body", b""))
            allowed = await limit.for_size(received)
            if received > allowed:
                cut_off = True
                if not response_started:
                    await send_too_large(scope, send, limit=allowed, reason=limit.reason, size=None)
                # The app sees a client that went away and stops reading (Django raises RequestAborted).
                return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal response_started
            if cut_off:
                return  # we already answered 413
            if message["type"] == "http.response.start":
                response_started = True
            await send(message)

        await self.app(scope, counted_receive, guarded_send)
