from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from apps.workspaces import actions
from mailagent.server import web_server_command
from tests.services import REPO_ROOT, free_port, subprocess_env, wait_for_port


def _serve(command: list[str], port: int) -> Iterator[str]:
    log = tempfile.NamedTemporaryFile(prefix="web-", suffix=".log", delete=False)  # noqa: SIM115
    process = subprocess.Popen(command, cwd=REPO_ROOT, env=subprocess_env(), stdout=log, stderr=subprocess.STDOUT)
    try:
        try:
            wait_for_port(port, timeout=60, process=process)
        except (RuntimeError, TimeoutError):
            raise RuntimeError("The web server did not start:\n" + Path(log.name).read_text()) from None
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


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
        yield from _serve(command, port)


@pytest.fixture
def workspace(user: Any) -> Any:
    return actions.create_user_workspace(owner=user, label="Research desk")
