"""Real local services for tests: free ports, Redis servers, subprocess environments."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.db import connection

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DIR = REPO_ROOT.parent / "shared"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def missing_service(reason: str) -> None:
    """Skip on a developer machine; fail in CI, where every service must be present."""
    if in_ci():
        pytest.fail(f"{reason} (CI=true: a missing service is a failure)")
    pytest.skip(reason)


def shared_path(*parts: str) -> Path:
    path = SHARED_DIR.joinpath(*parts)
    if not path.exists():
        missing_service(f"{path} is not available (../shared is only present in the team's workspace)")
    return path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# How long a started server may take to listen: a deadline, not a timing check (a healthy start returns
# at once, a dead process fails at once). Generous because `make test` runs the SQLite and PostgreSQL suites
# side by side on two cores, and a loaded machine starts a Django process slowly.
STARTUP_TIMEOUT = 180.0


def wait_for_port(port: int, timeout: float = STARTUP_TIMEOUT, process: subprocess.Popen[Any] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port} after {timeout}s")


def find_executable(name: str) -> str | None:
    return shutil.which(name) or next(
        (str(p) for p in (Path("/usr/sbin") / name, Path("/usr/bin") / name) if p.exists()), None
    )


@contextmanager
def redis_server() -> Iterator[str]:
    executable = find_executable("redis-server")
    if executable is None:
        missing_service("redis-server is not installed (apt-get install redis-server)")
        raise AssertionError  # unreachable
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="mailagent-redis-")
    process = subprocess.Popen(
        [executable, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", workdir],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, process=process)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)


def current_database_url() -> str:
    """A DATABASE_URL for the database the tests are using right now (the test database)."""
    sd = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{sd['NAME']}"
    host = sd.get("HOST") or ""
    query = ""
    options_host = (sd.get("OPTIONS") or {}).get("host")
    if options_host:
        query = f"?host={quote(options_host)}"
    auth = quote(sd.get("USER") or "")
    if sd.get("PASSWORD"):
        auth += ":" + quote(sd["PASSWORD"])
    port = f":{sd['PORT']}" if sd.get("PORT") else ""
    return f"postgresql://{auth}@{host}{port}/{sd['NAME']}{query}"


def subprocess_env(**extra: str) -> dict[str, str]:
    """Environment for a child process (Daphne, qcluster, manage.py) sharing the test database."""
    env = dict(os.environ)
    env["DATABASE_URL"] = current_database_url()
    env["Q_FORCE_ASYNC"] = "1"  # a real cluster, not the synchronous test mode
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


@contextmanager
def qcluster(env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[Any]]:
    """A real `manage.py qcluster` on the test database while the block runs; stopped (SIGTERM) after it."""
    cluster = subprocess.Popen(
        [sys.executable, "manage.py", "qcluster"],
        cwd=REPO_ROOT,
        env=env or subprocess_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield cluster
    finally:
        cluster.terminate()
        cluster.wait(timeout=30)


def serve_web(command: list[str], port: int, timeout: float = STARTUP_TIMEOUT) -> Iterator[str]:
    """Run a web server command in a subprocess on the test database and yield its URL (for fixtures)."""
    log = tempfile.NamedTemporaryFile(prefix="web-", suffix=".log", delete=False)  # noqa: SIM115
    process = subprocess.Popen(command, cwd=REPO_ROOT, env=subprocess_env(), stdout=log, stderr=subprocess.STDOUT)
    try:
        try:
            wait_for_port(port, timeout=timeout, process=process)
        except (RuntimeError, TimeoutError):
            raise RuntimeError("The web server did not start:\n" + Path(log.name).read_text()) from None
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


async def asgi_request(
    path: str,
    *,
    method: str = "GET",
    body_chunks: list[bytes] | None = None,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> tuple[int, bytes, list[Any]]:
    """One HTTP request straight into the production ASGI application (mailagent.asgi), no server:
    (status, body, response headers). The body is sent in `body_chunks` (streamed when several)."""
    from asgiref.testing import ApplicationCommunicator

    from mailagent.asgi import application

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"testserver"), *(headers or [])],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    communicator = ApplicationCommunicator(application, scope)
    chunks = body_chunks or [b""]
    for index, chunk in enumerate(chunks):
        await communicator.send_input({"type": "http.request", "body": chunk, "more_body": index < len(chunks) - 1})
    start = await communicator.receive_output(timeout=10)
    parts = []
    while True:
        message = await communicator.receive_output(timeout=10)
        parts.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    await communicator.wait(timeout=10)
    return int(start["status"]), b"".join(parts), list(start["headers"])
