"""The web server takes a new connection only while it has a free request slot (mailagent/webserver.py).

RequestSlots is exercised on a real event loop; the server itself runs as `manage.py serve` starts it (the
command line of mailagent.server.web_server_command) with two worker processes and one slot each, and
answers every request of 40 concurrent clients (the rest wait in the kernel's queue, none is refused).
"""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from mailagent import webserver
from mailagent.server import web_server_command
from tests.services import free_port, serve_web


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
