"""Live steps over /ws/ask/<run id>/: runs execute on the server's event loop, their events reach only
the socket of their own run — also when two runs go at the same time."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from apps.accounts.actions import create_local_account
from apps.accounts.models import Message
from apps.ask import actions, runner
from apps.ask.models import AskRun
from apps.search.actions import index_messages
from mailagent.asgi import application

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("close_sync_thread_connections")]


def _mailbox(user: Any) -> None:
    account = create_local_account(owner=user, name="main", address="owner@example.com")
    rows = [
        ("QNB E-Ekstre - Nisan 2026", "QNB Finansbank", "Son Ödeme Tarihi: 11/05/2026\nDönem Borcu: 8.406,90 TL"),
        ("Rechnung Nr. 2026-1187", "Schreiber & Partner", "Rechnungsbetrag: 1.428,00 EUR\nZahlbar bis 05.12.2026"),
        ("Lunch on Friday?", "Ada", "Sandwiches at noon."),
    ]
    for number, (subject, sender, body) in enumerate(rows, start=1):
        Message.objects.create(
            account=account,
            provider_id=f"rt:{number}",
            dedupe_key=f"rt-{number}@example.com",
            message_id=f"rt-{number}@example.com",
            from_name=sender,
            from_address=f"sender{number}@example.com",
            subject=subject,
            body_text=body,
            date=dt.datetime(2026, 4, number, tzinfo=dt.UTC),
        )
    index_messages(message_ids=list(Message.objects.values_list("pk", flat=True)))


async def _connect(session_key: str | None, path: str) -> WebsocketCommunicator:
    headers = [(b"origin", b"http://localhost"), (b"host", b"localhost")]
    if session_key:
        headers.append((b"cookie", f"{settings.SESSION_COOKIE_NAME}={session_key}".encode()))
    return WebsocketCommunicator(application, path, headers=headers)


async def _session(user: Any) -> str:
    client = Client()
    await database_sync_to_async(client.force_login)(user)
    return str(client.cookies[settings.SESSION_COOKIE_NAME].value)


async def _collect(communicator: WebsocketCommunicator) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    while True:
        event = await communicator.receive_json_from(timeout=60)
        events.append(event)
        if event["type"] in ("completed", "error"):
            return events


async def test_two_concurrent_runs_never_cross(user: Any) -> None:
    await database_sync_to_async(_mailbox)(user)
    create = database_sync_to_async(actions.create_ask_run)
    first = await create(owner=user, question="when is the QNB payment due?")
    second = await create(owner=user, question="how much is the Schreiber invoice?")
    session = await _session(user)
    sockets = {}
    for run in (first, second):
        communicator = await _connect(session, f"/ws/ask/{run.pk}/?format=json")
        connected, _ = await communicator.connect()
        assert connected
        sockets[str(run.pk)] = communicator
    html_socket = await _connect(session, f"/ws/ask/{first.pk}/")
    assert (await html_socket.connect())[0]
    # A live run's snapshot is its status and step rows, never the item itself: the item carries ws-connect,
    # and swapping it in again would open one more socket per snapshot.
    snapshot = await html_socket.receive_from(timeout=10)
    assert f"ask-status-{first.pk}" in snapshot and str(second.pk) not in snapshot
    assert "ws-connect" not in snapshot

    tasks = [await runner.launch(str(first.pk)), await runner.launch(str(second.pk))]
    collected = await asyncio.gather(*(_collect(c) for c in sockets.values()))
    await asyncio.gather(*tasks)

    for (run_id, _communicator), events in zip(sockets.items(), collected, strict=True):
        assert {event["runId"] for event in events} == {run_id}
        assert events[0]["type"] == "started"
        assert events[-1]["type"] == "completed" and events[-1]["status"] == "done"
        steps = [e["stepId"] for e in events if e["type"] == "step_completed"]
        assert steps[:2] == ["classify", "plan"] and steps[-1] == "answer"
        assert all(set(e) >= {"runId", "timestamp", "type", "stepId", "label", "detail", "status"} for e in events)
    fragments = []
    closed = False
    while not await html_socket.receive_nothing(timeout=0.5):
        output = await html_socket.receive_output()
        if output["type"] == "websocket.close":
            closed = True  # the server closes the socket itself after the finished item
            break
        fragments.append(output.get("text", ""))
    assert closed
    assert fragments and all(str(second.pk) not in fragment for fragment in fragments)
    assert any('hx-swap-oob="true"' in f and f"ask-step-{first.pk}-plan" in f for f in fragments)
    for communicator in sockets.values():
        await communicator.disconnect()

    runs = await database_sync_to_async(lambda: list(AskRun.objects.all()))()
    done: dict[Any, AskRun] = {item.pk: item for item in runs}
    assert "11/05/2026" in done[first.pk].answer
    assert "1.428,00 EUR" in done[second.pk].answer


async def test_late_socket_gets_the_finished_run_and_strangers_get_nothing(user: Any) -> None:
    await database_sync_to_async(_mailbox)(user)
    run = await database_sync_to_async(actions.create_ask_run)(owner=user, question="when is the QNB payment due?")
    await database_sync_to_async(actions.execute_ask_run)(run_id=run.pk)
    late = await _connect(await _session(user), f"/ws/ask/{run.pk}/?format=json")
    assert (await late.connect())[0]
    event = await late.receive_json_from(timeout=10)
    assert (event["type"], event["runId"]) == ("completed", str(run.pk))
    await late.disconnect()

    anonymous = await _connect(None, f"/ws/ask/{run.pk}/")
    assert await anonymous.connect() == (False, 4401)
    stranger = await database_sync_to_async(get_user_model().objects.create_user)(
        username="stranger", email="stranger@example.com", password="pw-123456789"
    )
    other = await _connect(await _session(stranger), f"/ws/ask/{run.pk}/")
    assert await other.connect() == (False, 4404)
