"""Events cross processes through channels-redis and reach a websocket consumer."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client, override_settings

from mailagent.asgi import application
from mailagent.settings import redis_channel_layers
from tests.services import REPO_ROOT, subprocess_env

pytestmark = [
    pytest.mark.services,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_sync_thread_connections"),
]


async def _connect(session_key: str | None) -> WebsocketCommunicator:
    headers = [(b"origin", b"http://localhost"), (b"host", b"localhost")]
    if session_key:
        headers.append((b"cookie", f"{settings.SESSION_COOKIE_NAME}={session_key}".encode()))
    return WebsocketCommunicator(application, "/ws/notifications/", headers=headers)


async def test_anonymous_websocket_is_refused() -> None:
    communicator = await _connect(None)
    connected, code = await communicator.connect()
    assert not connected
    assert code == 4401


async def test_event_sent_from_another_process_reaches_the_consumer(redis_url: str, user: Any) -> None:
    layers = redis_channel_layers(redis_url)
    client = Client()
    await sync_to_async(client.force_login)(user)
    session_key = client.cookies[settings.SESSION_COOKIE_NAME].value
    with override_settings(CHANNEL_LAYERS=layers):
        communicator = await _connect(session_key)
        connected, _ = await communicator.connect()
        assert connected
        # Stay idle past channels-redis' 5 s blocking wait: a Redis read timeout at or below it used to
        # kill the consumer's receive loop, so an event sent a few seconds later was never delivered.
        await asyncio.sleep(7)
        sender = (
            "from asgiref.sync import async_to_sync; from channels.layers import get_channel_layer;"
            f"async_to_sync(get_channel_layer().group_send)('user.{user.pk}',"
            " {'type': 'notify', 'event': {'type': 'sync_completed', 'account_id': 7, 'created': 3}})"
        )
        result = await sync_to_async(subprocess.run)(
            [sys.executable, "manage.py", "shell", "--verbosity", "0", "-c", sender],
            cwd=REPO_ROOT,
            env=subprocess_env(REDIS_URL=redis_url),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        event = await communicator.receive_json_from(timeout=10)
        assert event == {"type": "sync_completed", "account_id": 7, "created": 3}
        await communicator.disconnect()
