from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from apps.workspaces import actions
from mailagent.server import web_server_command
from tests.services import free_port, serve_web


@pytest.fixture(scope="module", params=["daphne", "production"])
def live_server_url(request: Any, django_db_setup: Any, django_db_blocker: Any) -> Iterator[str]:
    """A real web server in a subprocess on the test database: Daphne, and the command `manage.py serve`
    runs (mailagent/server.py). Neither runs an ASGI lifespan."""
    port = free_port()
    if request.param == "daphne":
        command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "mailagent.asgi:application"]
    else:
        command = web_server_command(host="127.0.0.1", port=port)
    with django_db_blocker.unblock():
        yield from serve_web(command, port)


@pytest.fixture
def workspace(user: Any) -> Any:
    return actions.create_user_workspace(owner=user, label="Research desk")
