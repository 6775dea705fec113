"""The production ASGI application (mailagent.asgi) runs the whole request synchronously, in one hop onto a
thread of the process's request pool (mailagent/asgi_handler.py): a logged-in request, an anonymous one and
a view error behave as before, and a request crosses from the event loop into a thread a handful of times,
not once per middleware method (the stock handler: 19 sync_to_async calls for GET /api/filters)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref import sync
from django.contrib.auth import get_user_model

from bench.search_eval import session_cookie
from tests.services import asgi_request

pytestmark = pytest.mark.django_db(transaction=True)


def _session_cookie() -> str:
    get_user_model().objects.create_user(username="hops", email="hops@example.com", password="x" * 20)
    return session_cookie("hops")


async def _get(path: str, cookie: str = "") -> tuple[int, bytes]:
    status, body, _headers = await asgi_request(path, headers=[(b"cookie", cookie.encode())] if cookie else [])
    return status, body


async def test_one_request_enters_the_request_thread_a_few_times(
    close_sync_thread_connections: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    cookie = await sync.sync_to_async(_session_cookie)()
    status, body = await _get("/api/filters", cookie)
    assert status == 200 and json.loads(body) == []

    hops: list[str] = []
    original = sync.SyncToAsync.__call__

    async def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        hops.append(getattr(self.func, "__qualname__", repr(self.func)))
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(sync.SyncToAsync, "__call__", counted)
    status, body = await _get("/api/filters", cookie)
    assert status == 200 and json.loads(body) == []
    # One: request_started, the chain and request_finished run in the same call; the stock handler made 19.
    assert len(hops) == 1, hops


async def test_anonymous_and_failing_requests_keep_their_answers(close_sync_thread_connections: Any) -> None:
    status, body = await _get("/api/filters")
    assert status == 401 and json.loads(body) == {"error": "Authentication required"}
    status, _ = await _get("/mail/")
    assert status == 302
    cookie = await sync.sync_to_async(_session_cookie)()
    status, body = await _get("/api/filters/999999", cookie)
    assert status == 404 and json.loads(body)
