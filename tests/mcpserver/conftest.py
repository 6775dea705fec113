from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mailagent.server import web_server_command
from tests.services import free_port, serve_web


@pytest.fixture(scope="module")
def live_server_url(django_db_setup: Any, django_db_blocker: Any) -> Iterator[str]:
    """The production web server (`manage.py serve`'s command) in a subprocess on the test database, started
    once per module: it serves /mcp/mailbox/ through the real ASGI application."""
    port = free_port()
    with django_db_blocker.unblock():
        yield from serve_web(web_server_command(host="127.0.0.1", port=port), port)
