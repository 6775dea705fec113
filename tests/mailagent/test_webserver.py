"""The web server takes a new connection only while it has a free request slot (mailagent/webserver.py).

RequestSlots is exercised on a real event loop; the server itself runs as `manage.py serve` starts it (the
command line of mailagent.server.web_server_command) with two worker processes and one slot each, and
answers every request of 40 concurrent clients (the rest wait in the kernel's queue, none is refused).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from mailagent import webserver
from mailagent.server import web_server_command
from tests.services import REPO_ROOT, free_port, serve_web, subprocess_env, wait_for_port


async def _waits(slots: webserver.RequestSlots, seconds: float = 0.05) -> bool:
    """Whether wait_for_free is still waiting after `seconds`."""
    try:
        await asyncio.wait_for(slots.wait_for_free(), seconds)
    except TimeoutError:
        return True
    return False


async def test_a_full_process_waits_until_a_request_leaves() -> None:
    slots = webserver.RequestSlots()
    slots.limit = 2
    first = slots.enter()
    assert not await _waits(slots)
    second = slots.enter()
    assert await _waits(slots)
    waiter = asyncio.ensure_future(slots.wait_for_free())
    await asyncio.sleep(0.01)
    assert not waiter.done()
    first()
    await asyncio.wait_for(waiter, 1)
    second()
    second()  # leaving twice counts once
    assert slots.busy == 0


async def test_an_accepted_connection_holds_a_slot_until_its_request_enters_or_briefly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(webserver, "ARRIVAL_SECONDS", 0.2)
    slots = webserver.RequestSlots()
    slots.limit = 1
    slots.accepted()
    assert await _waits(slots)
    leave = slots.enter()  # its request arrived: one slot in use, not two
    assert slots.busy == 1
    leave()
    assert not await _waits(slots)
    slots.accepted()  # a connection that never sends a request (a browser's preconnect)
    assert await _waits(slots, 0.05)
    await asyncio.wait_for(slots.wait_for_free(), 1)  # freed when ARRIVAL_SECONDS ran out


async def test_a_long_request_stops_holding_its_slot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(webserver, "LONG_REQUEST_SECONDS", 0.2)
    slots = webserver.RequestSlots()
    slots.limit = 1
    leave = slots.enter()
    assert await _waits(slots, 0.05)
    await asyncio.wait_for(slots.wait_for_free(), 1)  # still running, no longer counted
    other = slots.enter()
    leave()  # the long one ends: the one counted now stays counted
    assert slots.busy == 1
    other()
    assert slots.busy == 0


async def test_without_the_server_nothing_is_limited() -> None:
    slots = webserver.RequestSlots()
    for _ in range(50):
        slots.enter()
    assert not await _waits(slots)


@pytest.fixture
def two_workers(transactional_db: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("MAILAGENT_WEB_BUSY_REQUESTS", "1")
    port = free_port()
    yield from serve_web(web_server_command(host="127.0.0.1", port=port, processes=2), port)


def test_two_gated_workers_answer_every_concurrent_client(two_workers: str) -> None:
    answers: list[int] = []
    failures: list[BaseException] = []
    lock = threading.Lock()

    def client() -> None:
        for _ in range(5):
            try:
                with urllib.request.urlopen(f"{two_workers}/api/health", timeout=30) as response:
                    body = json.loads(response.read())
                with lock:
                    answers.append(response.status if body["status"] == "ok" else -1)
            except BaseException as exc:
                with lock:
                    failures.append(exc)

    threads = [threading.Thread(target=client) for _ in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures[:3]
    assert answers == [200] * 200


# --- request heads are bounded, and a new connection is served while keep-alive clients are busy -----------


@dataclass
class RunningServer:
    url: str
    port: int
    process: subprocess.Popen[bytes]

    def peak_rss_mb(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) // 1024
        raise AssertionError("VmHWM not in /proc status")


@pytest.fixture
def one_web_process(transactional_db: Any) -> Iterator[RunningServer]:
    """The server as `manage.py serve` starts it (one process, WEB_BUSY_REQUESTS as configured)."""
    port = free_port()
    log = tempfile.NamedTemporaryFile(prefix="web-", suffix=".log", delete=False)  # noqa: SIM115
    process = subprocess.Popen(
        web_server_command(host="127.0.0.1", port=port),
        cwd=REPO_ROOT,
        env=subprocess_env(),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        try:
            wait_for_port(port, timeout=60, process=process)
        except (RuntimeError, TimeoutError):
            raise RuntimeError("The web server did not start:\n" + Path(log.name).read_text()) from None
        server = RunningServer(url=f"http://127.0.0.1:{port}", port=port, process=process)
        with urllib.request.urlopen(f"{server.url}/api/health", timeout=30) as response:
            assert response.status == 200  # warm: imports and the first request are done
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        Path(log.name).unlink(missing_ok=True)


def _raw_request(port: int, head: bytes, *, chunk: int = 64 * 1024) -> bytes:
    """Send a request head in chunks (stopping when the server closes) and return what it answered."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        answer = b""
        try:
            for start in range(0, len(head), chunk):
                sock.sendall(head[start : start + chunk])
        except OSError:
            pass  # the server answered and closed before the rest: read its answer
        try:
            while data := sock.recv(65536):
                answer += data
        except OSError:
            pass
        return answer


def test_oversized_request_heads_are_refused_before_the_app(one_web_process: RunningServer) -> None:
    port = one_web_process.port
    before = one_web_process.peak_rss_mb()
    started = time.monotonic()
    huge = _raw_request(
        port, b"GET /api/health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (16 * 1024 * 1024) + b"\r\n\r\n"
    )
    assert huge.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n"), huge[:200]
    assert b"connection: close" in huge and huge.endswith(b"The request's headers are larger than 65536 bytes.")
    assert time.monotonic() - started < 5  # the 64 MB header cost ~11 s of CPU before

    many = b"GET /api/health HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: 1\r\n" % n for n in range(101)) + b"\r\n"
    assert _raw_request(port, many).startswith(b"HTTP/1.1 431 ")
    long_line = _raw_request(port, b"GET /api/health?" + b"q" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert long_line.startswith(b"HTTP/1.1 414 URI Too Long\r\n"), long_line[:200]

    # Ordinary heads still pass: 40 fields of 1 KB (a browser with many cookies sends a few KB)
    fine = b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    fine += b"".join(b"X-%d: %s\r\n" % (n, b"v" * 1024) for n in range(40)) + b"\r\n"
    assert _raw_request(port, fine).startswith(b"HTTP/1.1 200 OK\r\n")
    # Eight hostile heads at once leave the process's memory where it was (they took it +800 MB, kept)
    threads = [
        threading.Thread(
            target=_raw_request,
            args=(port, b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (8 * 1024 * 1024) + b"\r\n\r\n"),
        )
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert one_web_process.peak_rss_mb() - before < 40


KEEP_ALIVE_CLIENTS = 12
LOAD_SECONDS = 7.0
PROBE_LIMIT_SECONDS = 5.0


def test_a_health_probe_is_answered_while_keep_alive_clients_keep_the_server_busy(
    one_web_process: RunningServer, django_user_model: Any
) -> None:
    """12 logged-in keep-alive clients send their next request as soon as the last is answered; a fresh
    connection to /api/health every 0.25 s must be answered within 5 s (it waited for the whole load before:
    60 s in the probe campaign). The numbers before and after are bench/fair_accept.py's."""
    browser = Client()
    browser.force_login(django_user_model.objects.create_user(username="busy", email="busy@example.com"))
    cookie = f"{settings.SESSION_COOKIE_NAME}={browser.cookies[settings.SESSION_COOKIE_NAME].value}"
    port = one_web_process.port
    stop = threading.Event()
    client_answers: list[int] = []
    probe_seconds: list[float] = []
    lock = threading.Lock()

    def keep_alive_client() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        while not stop.is_set():
            connection.request("GET", "/api/filters", headers={"Cookie": cookie})
            response = connection.getresponse()
            response.read()
            with lock:
                client_answers.append(response.status)
        connection.close()

    def probe() -> None:
        started = time.monotonic()
        try:
            with urllib.request.urlopen(f"{one_web_process.url}/api/health", timeout=LOAD_SECONDS + 30) as response:
                assert response.status == 200
            elapsed = time.monotonic() - started
        except OSError:
            elapsed = float("inf")
        with lock:
            probe_seconds.append(elapsed)

    clients = [threading.Thread(target=keep_alive_client) for _ in range(KEEP_ALIVE_CLIENTS)]
    for thread in clients:
        thread.start()
    probes: list[threading.Thread] = []
    deadline = time.monotonic() + LOAD_SECONDS
    time.sleep(0.5)  # the clients are connected and busy
    while time.monotonic() < deadline:
        probes.append(threading.Thread(target=probe))
        probes[-1].start()
        time.sleep(0.25)
    stop.set()
    for thread in [*probes, *clients]:
        thread.join()
    assert client_answers and set(client_answers) == {200}
    assert len(probe_seconds) == len(probes) >= 20
    assert max(probe_seconds) < PROBE_LIMIT_SECONDS, sorted(probe_seconds)[-5:]
