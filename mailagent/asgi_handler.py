"""Django's ASGI handler with the whole request run synchronously, in one hop onto a reused thread.

The views are synchronous. Under the stock ASGIHandler the chain is built for async: every middleware that
is a MiddlewareMixin runs its process_request / process_response through sync_to_async, and a sync-only one
switches back with async_to_sync, so one request crossed between the event loop and a request thread 20
times (19 sync_to_async + 1 async_to_sync for GET /api/filters); each request also started (and joined) a
thread of its own (ThreadSensitiveContext).

Here the middleware chain is built as under WSGI (all of the project's middleware can run synchronously) and
one request is one call on a thread of a per-process pool (WEB_THREADS): request_started, the chain, and,
for an ordinary response, its close (request_finished: the database connection is given back in the thread
that used it). Only the body is read and the response written on the event loop. A streaming response is
closed on the loop's side after it was sent, as the stock handler does. With 20 clients on the Enron corpus
(bench/search.py --http, 2 processes) the server's CPU per hybrid search went from 25.2 to ~21 ms.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from typing import IO, Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.http import HttpResponseBase
from django.urls import set_script_prefix

from mailagent.webserver import request_slots

Scope = Mapping[str, Any]
Receive = Callable[[], Awaitable[Mapping[str, Any]]]
Send = Callable[[Mapping[str, Any]], Awaitable[None]]

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def request_pool() -> ThreadPoolExecutor:
    """The threads that run requests in this process (made on first use: after uvicorn forked the worker)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=settings.WEB_THREADS, thread_name_prefix="request")
        return _pool


class PooledSyncASGIHandler(ASGIHandler):
    def __init__(self) -> None:
        super().__init__()
        request_slots.limit = settings.WEB_BUSY_REQUESTS  # the server takes new connections below this

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        leave = request_slots.enter()
        try:
            with closing(body_file):
                respond = sync_to_async(self._respond, thread_sensitive=False, executor=request_pool())
                response = await respond(scope, body_file)
                await self.send_response(response, send)
                if response.streaming:
                    await sync_to_async(response.close, thread_sensitive=False, executor=request_pool())()
        finally:
            leave()

    def _respond(self, scope: Scope, body_file: IO[bytes]) -> HttpResponseBase:
        """The response to one request, made in a pool thread; an ordinary one is already closed."""
        set_script_prefix(get_script_prefix(scope))
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, error_response = self.create_request(scope, body_file)
        response = self.get_response(request) if request is not None else error_response
        assert response is not None  # create_request returns a request or the response to an invalid one
        if not response.streaming:
            response.close()  # request_finished, in this thread
        return response


def get_asgi_application() -> PooledSyncASGIHandler:
    import django

    django.setup(set_prefix=False)
    return PooledSyncASGIHandler()
