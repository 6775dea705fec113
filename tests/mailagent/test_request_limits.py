"""Request bodies are bounded before anything reads them, against the real web server in a subprocess.

The probe that found this: a 100 MB multipart POST to /accounts/login/ without a session raised the
Daphne process's RSS by ~1.2 GB and stalled /api/health for seconds. The server's peak RSS is read from
/proc/<pid>/status (VmHWM) before and after.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import tempfile
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from apps.accounts.models import MailAccount, Message
from mailagent.server import web_server_command
from tests.services import REPO_ROOT, asgi_request, free_port, subprocess_env, wait_for_port

MB = 1024 * 1024
# Generous for allocator noise and lazily imported modules; the unbounded server grew by ~1,200 MB.
RSS_GROWTH_ALLOWED_MB = 40
UPLOAD_LIMIT = 48 * MB


@dataclass
class Server:
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    def rss_mb(self, key: str = "VmHWM") -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) // 1024
        raise AssertionError(f"{key} not in /proc status")

    def get(self, path: str) -> int:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=30) as response:
            return int(response.status)


@pytest.fixture
def server(transactional_db: Any) -> Iterator[Server]:
    port = free_port()
    log = Path(tempfile.mkstemp(prefix="web-", suffix=".log")[1])
    env = subprocess_env(MAILAGENT_MAX_UPLOAD_BYTES=str(UPLOAD_LIMIT), DEBUG="1")
    with log.open("wb") as output:
        process = subprocess.Popen(
            web_server_command(host="127.0.0.1", port=port),
            cwd=REPO_ROOT,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        try:
            wait_for_port(port, process=process)
        except (RuntimeError, TimeoutError):
            raise RuntimeError("the web server did not start:\n" + log.read_text()) from None
        running = Server(port=port, process=process, log=log)
        assert running.get("/api/health") == 200  # warm up: imports and the first request are done
        yield running
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.unlink(missing_ok=True)


BOUNDARY = "----mailagent-test-boundary"


def _multipart_head(field: str, filename: str) -> bytes:
    return (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{field}"; filename="{filename}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()


def _multipart_tail() -> bytes:
    return f"\r\n--{BOUNDARY}--\r\n".encode()


def _post_streaming(
    port: int, path: str, *, size: int, chunked: bool, cookies: str = "", extra: bytes = b"", filename: str = "a.bin"
) -> tuple[int, bytes]:
    """POST a multipart body of `size` payload bytes, generated while sending (the client holds 1 MB)."""
    head = extra + _multipart_head("file", filename)
    tail = _multipart_tail()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    connection.putrequest("POST", path)
    connection.putheader("Content-Type", f"multipart/form-data; boundary={BOUNDARY}")
    if cookies:
        connection.putheader("Cookie", cookies)
    if chunked:
        connection.putheader("Transfer-Encoding", "chunked")
    else:
        connection.putheader("Content-Length", str(len(head) + size + len(tail)))
    connection.endheaders()

    def send(data: bytes) -> None:
        connection.send(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)

    try:
        send(head)
        chunk = b"a" * MB
        for offset in range(0, size, MB):
            send(chunk[: min(MB, size - offset)])
        send(tail)
        if chunked:
            connection.send(b"0\r\n\r\n")
    except OSError:
        pass  # the server answered and closed early: that is the point; read its answer below
    try:
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def _poll_health(server: Server, stop: threading.Event, results: list[int | str]) -> None:
    while not stop.is_set():
        try:
            results.append(server.get("/api/health"))
        except OSError as exc:
            results.append(f"{type(exc).__name__}: {exc}")
        stop.wait(0.1)


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_100mb_anonymous_post_to_login_is_refused_without_buffering(server: Server, chunked: bool) -> None:
    before = server.rss_mb()
    stop = threading.Event()
    health: list[int | str] = []
    poller = threading.Thread(target=_poll_health, args=(server, stop, health))
    poller.start()
    try:
        status, body = _post_streaming(server.port, "/accounts/login/", size=100 * MB, chunked=chunked)
    finally:
        stop.set()
        poller.join()
    growth = server.rss_mb() - before
    print(f"anonymous 100 MB login POST ({'chunked' if chunked else 'content-length'}): RSS +{growth} MB")
    assert status == 413
    assert "without a login this server accepts at most 256.0\xa0KB" in body.decode()
    assert growth <= RSS_GROWTH_ALLOWED_MB
    assert health and all(result == 200 for result in health), health
    assert server.get("/api/health") == 200


def _session_cookie(user: Any) -> str:
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


def _csrf_pair() -> tuple[str, bytes]:
    """A CSRF cookie and the matching form field (the import view is CSRF-protected)."""
    from django.http import HttpRequest
    from django.middleware.csrf import get_token

    request = HttpRequest()
    token = get_token(request)
    secret = request.META["CSRF_COOKIE"]
    field = (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="csrfmiddlewaretoken"\r\n\r\n{token}\r\n'
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="new_account_name"\r\n\r\nUploads\r\n'
    ).encode()
    return f"{settings.CSRF_COOKIE_NAME}={secret}", field


def test_logged_in_upload_streams_to_disk(server: Server, user: Any) -> None:
    cookie, fields = _csrf_pair()
    cookies = f"{_session_cookie(user)}; {cookie}"
    before = server.rss_mb()
    size = 40 * MB
    url = "/mail/accounts/import/"
    status, body = _post_streaming(
        server.port, url, size=size, chunked=False, cookies=cookies, extra=fields, filename="a.mbox"
    )
    growth = server.rss_mb() - before
    print(f"logged-in 40 MB upload: RSS +{growth} MB")
    assert status == 302, body[:2000]
    assert growth <= RSS_GROWTH_ALLOWED_MB
    # The 40 MB of "a" is not mail: the import says so and stores nothing, but it did reach the importer.
    assert MailAccount.objects.filter(owner=user, name="Uploads").exists()
    assert not Message.objects.exists()


def test_logged_in_upload_over_the_limit_is_refused_before_reading(server: Server, user: Any) -> None:
    before = server.rss_mb()
    status, body = _post_streaming(
        server.port, "/mail/accounts/import/", size=UPLOAD_LIMIT + 2 * MB, chunked=True, cookies=_session_cookie(user)
    )
    assert status == 413
    assert "uploads here may be at most 48.0\xa0MB" in body.decode()
    assert server.rss_mb() - before <= RSS_GROWTH_ALLOWED_MB


def test_upload_endpoint_needs_a_valid_session_for_the_upload_limit(server: Server, user: Any) -> None:
    forged = f"{settings.SESSION_COOKIE_NAME}=not-a-session-key"
    status, body = _post_streaming(server.port, "/mail/accounts/import/", size=2 * MB, chunked=False, cookies=forged)
    assert status == 413
    assert "without a login" in body.decode()


def test_websockets_still_work_behind_the_limit(server: Server) -> None:
    # A websocket upgrade is not an HTTP body: the middleware passes it to Channels untouched.
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(
            b"GET /ws/notifications/ HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        answer = sock.recv(1024)
    # Anonymous: Channels accepts the handshake or refuses it (403), but never a server error.
    assert answer.startswith((b"HTTP/1.1 101", b"HTTP/1.1 403")), answer


# --- the middleware itself, on the real ASGI application ------------------------------------------


async def _call(
    path: str, body_chunks: list[bytes], headers: list[tuple[bytes, bytes]]
) -> tuple[int, bytes, list[Any]]:
    return await asgi_request(path, method="POST", body_chunks=body_chunks, headers=headers)


@pytest.mark.django_db(transaction=True)
async def test_api_answers_413_as_json_and_counts_streamed_bytes(close_sync_thread_connections: Any) -> None:
    # A lying Content-Length (small) does not help: the streamed bytes are counted.
    chunks = [b"x" * (64 * 1024)] * 6
    status, body, headers = await _call(
        "/api/ask", chunks, [(b"content-type", b"application/json"), (b"content-length", b"10")]
    )
    assert status == 413
    assert json.loads(body)["error"].startswith("The request body is too large; without a login")
    assert (b"connection", b"close") in headers


@pytest.mark.django_db(transaction=True)
async def test_bearer_requests_get_the_authenticated_limit(close_sync_thread_connections: Any) -> None:
    # 1 MB is over the anonymous limit but under the authenticated one: the app answers (401 for a bad token).
    body = json.dumps({"question": "x" * MB}).encode()
    status, _, _ = await _call(
        "/api/ask",
        [body],
        [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"authorization", b"Bearer made-up"),
        ],
    )
    assert status != 413
