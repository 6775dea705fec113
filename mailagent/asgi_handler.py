"""Django's ASGI handler with the middleware chain run synchronously, entered in one thread hop.

The views are synchronous. Under the stock ASGIHandler the chain is built for async: every middleware that
is a MiddlewareMixin runs its process_request / process_response through sync_to_async, and a sync-only one
switches back with async_to_sync, so one request crossed between the event loop and the request thread 20
times (19 sync_to_async + 1 async_to_sync for GET /api/filters). Built as under WSGI (all of the project's
middleware can run synchronously) the chain is one synchronous call, entered once through sync_to_async
(thread-sensitive, as Django runs sync views under ASGI), so it costs what a WSGI request costs. Request
started/finished signals, streaming responses and the body limit are the stock handler's.
"""

from __future__ import annotations

from collections.abc import Callable

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpRequest, HttpResponseBase


class SyncChainASGIHandler(ASGIHandler):
    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)
        chain: Callable[[HttpRequest], HttpResponseBase] = self._middleware_chain  # type: ignore[has-type]
        # get_response_async awaits the chain: one hop into the request thread for the whole of it.
        self._middleware_chain = sync_to_async(chain, thread_sensitive=True)


def get_asgi_application() -> SyncChainASGIHandler:
    import django

    django.setup(set_prefix=False)
    return SyncChainASGIHandler()
