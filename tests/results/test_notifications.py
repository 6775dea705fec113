"""Typed notification events: pushed through the channel layer on commit, and rebuilt from the database by
the polling endpoint; the per-user switch and the one-time prompt."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from apps.orchestration.actions import finish_run
from apps.orchestration.models import Run, RunStatus
from apps.results.models import NotificationPreference
from apps.workspaces.actions import push_inbox_entry
from mailagent.consumers import user_group
from tests.results.conftest import MakeResult

pytestmark = pytest.mark.django_db


def _listen(user_id: int) -> Any:
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(user_group(user_id), channel)
    return layer, channel


def test_a_finished_run_is_pushed_to_its_owner_on_commit(
    user: Any, make_result: MakeResult, django_capture_on_commit_callbacks: Any
) -> None:
    result = make_result(subject="Invoice 42", status=RunStatus.QUEUED, items=[{}])
    layer, channel = _listen(user.pk)
    run = Run.objects.get(pk=result.run.pk)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        finish_run(run=run, status=RunStatus.COMPLETED)
    assert len(callbacks) == 1  # nothing is sent before the commit
    callbacks[0]()
    message = async_to_sync(layer.receive)(channel)
    assert message["type"] == "notify"
    event = message["event"]
    assert event["type"] == "run_completed"
    assert event["title"] == "Processing complete: Invoice 42 — Clients"
    assert event["node"] == f"run-{run.pk}" and event["url"] == f"/results/?node=run-{run.pk}"
    with django_capture_on_commit_callbacks(execute=True):
        Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)
        run.refresh_from_db()
        finish_run(run=run, status=RunStatus.FAILED, error="boom")
    failed = async_to_sync(layer.receive)(channel)["event"]
    assert failed["type"] == "run_failed" and failed["title"].startswith("Processing failed: Invoice 42")


def test_a_run_loaded_with_its_director_and_message_is_announced_without_a_query(
    user: Any, make_result: MakeResult, django_capture_on_commit_callbacks: Any, django_assert_num_queries: Any
) -> None:
    result = make_result(subject="Invoice 43", status=RunStatus.QUEUED, items=[{}])
    layer, channel = _listen(user.pk)
    run = Run.objects.select_related("director", "message").get(pk=result.run.pk)  # as the engine loads it
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        finish_run(run=run, status=RunStatus.COMPLETED)
    with django_assert_num_queries(0):
        callbacks[0]()
    assert async_to_sync(layer.receive)(channel)["event"]["title"] == "Processing complete: Invoice 43 — Clients"


def test_an_inbox_push_is_announced(
    user: Any, make_result: MakeResult, django_capture_on_commit_callbacks: Any
) -> None:
    result = make_result(items=[{"path": "reply.md"}])
    layer, channel = _listen(user.pk)
    with django_capture_on_commit_callbacks(execute=True):
        push_inbox_entry(workspace=result.items[0].workspace, docs=[{"path": "reply.md"}], comments="Please check.")
    kinds = []
    for _ in range(2):  # workspaces' own inbox_entry event and the typed notification
        kinds.append(async_to_sync(layer.receive)(channel)["event"])
    pushed = next(event for event in kinds if event["type"] == "inbox_pushed")
    assert pushed["title"] == "New in your Inbox: Invoice 42 — Clients" and pushed["body"] == "Please check."


def test_polling_rebuilds_the_events_from_the_database(
    logged_in_client: Client, user: Any, make_result: MakeResult
) -> None:
    before = make_result(subject="Already done")
    first = logged_in_client.get("/results/events/").json()
    assert first["events"] == [] and first["cursor"].isdigit()
    finished = before.run.finished_at
    assert finished is not None
    assert first["known"] == [f"run:{before.run.pk}:completed:{int(finished.timestamp() * 1000)}"]
    assert first["browserNotifications"] is True and first["promptDismissed"] is False
    done = make_result(subject="Contract", items=[{}])
    failed = make_result(subject="Lunch", director="Social", status=RunStatus.FAILED)
    make_result(subject="Waiting", status=RunStatus.QUEUED)
    other = get_user_model().objects.create_user(username="other", email="other@example.com", password="x" * 12)
    make_result(subject="Not yours", owner=other)
    old = make_result(subject="Long ago")
    Run.objects.filter(pk=old.run.pk).update(finished_at=timezone.now() - dt.timedelta(hours=1))
    body = logged_in_client.get("/results/events/", {"since": first["cursor"]}).json()
    titles = {event["title"] for event in body["events"]} - {"Processing complete: Already done — Clients"}
    assert titles == {"Processing complete: Contract — Clients", "Processing failed: Lunch — Social"}
    ids = {event["id"] for event in body["events"]} - set(first["known"])
    assert all(event_id.startswith((f"run:{done.run.pk}:", f"run:{failed.run.pk}:")) for event_id in ids)
    # The next poll re-reads the overlap window; the ids stay the same, so browsers show each event once.
    again = logged_in_client.get("/results/events/", {"since": body["cursor"]}).json()
    assert {event["id"] for event in again["events"]} == ids | set(first["known"])
    bad = logged_in_client.get("/results/events/", {"since": "yesterday"})
    assert bad.status_code == 400 and set(bad.json()) == {"error"}


def test_the_switch_and_the_prompt_are_remembered(logged_in_client: Client, user: Any) -> None:
    page = logged_in_client.get("/results/").content.decode()
    assert "Browser notifications when processing completes are <strong>on</strong>" in page
    off = logged_in_client.post(
        "/results/notifications/", {"browser_notifications": "off"}, headers={"HX-Request": "true"}
    )
    assert "are <strong>off</strong>" in off.content.decode()
    dismissed = logged_in_client.post("/results/notifications/", {"prompt": "dismissed"}).json()
    assert dismissed == {"browserNotifications": False, "promptDismissed": True}
    preference = NotificationPreference.objects.get(user=user)
    assert (preference.browser_notifications, preference.prompt_dismissed) == (False, True)
    assert logged_in_client.get("/results/events/").json()["browserNotifications"] is False


def test_every_page_loads_the_notifications_client(logged_in_client: Client, client: Client) -> None:
    html = logged_in_client.get("/runs/").content.decode()
    assert 'src="/static/results/notifications.js"' in html and 'data-events-url="/results/events/"' in html
    client.logout()
    assert "notifications.js" not in client.get("/accounts/login/").content.decode()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_sync_thread_connections")
async def test_the_notifications_socket_delivers_the_event_to_its_owner_only(
    user: Any, make_result: MakeResult
) -> None:
    """Through the real ASGI application: a signed-in socket at /ws/notifications/ receives the typed event of
    its own run when the run's final write commits; a stranger's socket receives nothing."""
    from channels.db import database_sync_to_async
    from channels.testing import WebsocketCommunicator
    from django.conf import settings

    from mailagent.asgi import application

    result = await database_sync_to_async(make_result)(subject="Refund request", status=RunStatus.QUEUED)
    stranger = await database_sync_to_async(get_user_model().objects.create_user)(
        username="stranger", email="stranger@example.com", password="x" * 12
    )

    async def socket_for(who: Any) -> WebsocketCommunicator:
        client = Client()
        await database_sync_to_async(client.force_login)(who)
        cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
        headers = [(b"origin", b"http://localhost"), (b"host", b"localhost"), (b"cookie", cookie.encode())]
        communicator = WebsocketCommunicator(application, "/ws/notifications/", headers=headers)
        connected, _ = await communicator.connect()
        assert connected
        return communicator

    mine, theirs = await socket_for(user), await socket_for(stranger)

    def finish() -> None:
        run = Run.objects.get(pk=result.run.pk)
        Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)
        finish_run(run=run, status=RunStatus.COMPLETED)

    await database_sync_to_async(finish)()
    event = await mine.receive_json_from(timeout=10)
    assert event["type"] == "run_completed"
    assert event["title"] == "Processing complete: Refund request — Clients"
    assert await theirs.receive_nothing(timeout=0.5)
    await mine.disconnect()
    await theirs.disconnect()
