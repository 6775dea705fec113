"""Fetcher: schedule control through the API, fetch cycles over a real Dovecot, the Fetcher page."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.urls import reverse
from django_q.models import Schedule

from apps.accounts.actions import create_imap_account
from apps.orchestration.models import Run, RunStatus
from apps.routing import tasks
from apps.routing.models import CycleStatus, CycleTrigger, FetchCycle, FetchCycleMessage
from apps.routing.selectors import fetcher_schedule_name
from tests.fakes.dovecot import Mailbox, make_message


@pytest.mark.django_db
def test_start_stop_through_the_api_keeps_the_interval(logged_in_client: Any, user: Any) -> None:
    FETCHER_SCHEDULE_NAME = fetcher_schedule_name(owner_id=user.pk)
    status = logged_in_client.get("/api/fetcher/status").json()
    assert status["running"] is False and status["currentCycle"] is None and status["recentCycles"] == []

    started = logged_in_client.post("/api/fetcher/start", content_type="application/json").json()
    assert started["running"] is True and started["intervalMinutes"] == 5
    schedule = Schedule.objects.get(name=FETCHER_SCHEDULE_NAME)
    assert schedule.func == "apps.routing.tasks.scheduled_fetch_task"
    assert schedule.kwargs == repr({"owner_id": user.pk})
    assert schedule.repeats == -1 and schedule.minutes == 5

    stopped = logged_in_client.post("/api/fetcher/stop").json()
    assert stopped["running"] is False
    assert Schedule.objects.get(name=FETCHER_SCHEDULE_NAME).repeats == 0

    Schedule.objects.filter(name=FETCHER_SCHEDULE_NAME).update(minutes=17)  # edited in the admin
    again = logged_in_client.post("/api/fetcher/start", content_type="application/json").json()
    assert again["running"] is True and again["intervalMinutes"] == 17
    assert Schedule.objects.filter(name=FETCHER_SCHEDULE_NAME).count() == 1

    custom = logged_in_client.post(
        "/api/fetcher/start", data={"intervalMinutes": 2}, content_type="application/json"
    ).json()
    assert custom["intervalMinutes"] == 2
    bad = logged_in_client.post("/api/fetcher/start", data={"intervalMinutes": 0}, content_type="application/json")
    assert bad.status_code == 400


@pytest.mark.django_db
def test_fetcher_api_needs_login(client: Any) -> None:
    for method, path in [("get", "/api/fetcher/status"), ("post", "/api/fetcher/start"), ("post", "/api/fetcher/run")]:
        response = getattr(client, method)(path)
        assert response.status_code == 401, path
    assert client.get(reverse("routing:fetcher")).status_code == 302


def _seed(mailbox: Mailbox, subjects: list[str]) -> None:
    now = dt.datetime.now(dt.UTC)
    for number, subject in enumerate(subjects):
        mailbox.append("INBOX", make_message(subject=subject, date=now, message_id=f"<{subject}-{number}@x.test>"))


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_fetch_cycles_sync_route_and_group_runs(
    imap_mailbox: Mailbox, user: Any, logged_in_client: Any, director: Any, add_filter: Any
) -> None:
    account = create_imap_account(
        owner=user,
        name="work",
        address=imap_mailbox.username,
        host="127.0.0.1",
        port=imap_mailbox.server.port,
        security="none",
        username=imap_mailbox.username,
        password=imap_mailbox.password,
    )
    support, billing = director("Support"), director("Billing")
    add_filter(support, "subject", "urgent")
    add_filter(billing, "subject", "invoice|urgent")
    _seed(imap_mailbox, ["urgent-outage", "invoice-march", "lunch"])

    response = logged_in_client.post("/api/fetcher/run")
    assert response.status_code == 202
    cycle = FetchCycle.objects.get(pk=response.json()["fetchCycleId"])
    assert cycle.trigger == CycleTrigger.RUN and cycle.status == CycleStatus.COMPLETED
    assert cycle.messages_stored == 3 and cycle.runs_created == 3
    assert cycle.accounts_synced == 1 and cycle.accounts[str(account.pk)]["created"] == 3
    assert cycle.synced_at is not None and cycle.finished_at is not None
    assert FetchCycleMessage.objects.filter(cycle=cycle).count() == 3
    runs = Run.objects.filter(fetch_cycle_id=cycle.pk)
    assert sorted((r.director.name, r.message.subject) for r in runs) == [
        ("Billing", "invoice-march"),
        ("Billing", "urgent-outage"),
        ("Support", "urgent-outage"),
    ]
    assert not runs.filter(status=RunStatus.QUEUED).exists()

    # Incremental: the next cycle brings only the new message, and the old ones are not routed again.
    _seed(imap_mailbox, ["urgent-again"])
    second = logged_in_client.post("/api/fetcher/fetch").json()["fetchCycleId"]
    cycle2 = FetchCycle.objects.get(pk=second)
    assert cycle2.status == CycleStatus.COMPLETED
    assert (cycle2.messages_stored, cycle2.runs_created) == (1, 2)
    assert Run.objects.count() == 5

    status = logged_in_client.get("/api/fetcher/status").json()
    assert status["lastCycle"]["id"] == cycle2.pk
    assert [c["id"] for c in status["recentCycles"]] == [cycle2.pk, cycle.pk]

    page = logged_in_client.get(reverse("routing:fetcher")).content.decode()
    assert f'id="cycle-{cycle.pk}"' in page and "urgent-outage" in page
    partial = logged_in_client.get(reverse("routing:fetcher_status"))
    assert partial.status_code == 200 and 'id="fetcher-status"' in partial.content.decode()

    # A scheduled cycle syncs the schedule owner's accounts.
    assert tasks.scheduled_fetch_task(owner_id=user.pk) == CycleStatus.COMPLETED
    scheduled = FetchCycle.objects.get(trigger=CycleTrigger.SCHEDULE)
    assert scheduled.owner == user and scheduled.requested_by is None and list(scheduled.accounts) == [str(account.pk)]


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_failing_account_is_recorded_and_the_cycle_completes(
    imap_mailbox: Mailbox, user: Any, logged_in_client: Any
) -> None:
    create_imap_account(
        owner=user,
        name="broken",
        address=imap_mailbox.username,
        host="127.0.0.1",
        port=imap_mailbox.server.port,
        security="none",
        username=imap_mailbox.username,
        password="wrong password",
    )
    cycle_id = logged_in_client.post("/api/fetcher/fetch").json()["fetchCycleId"]
    cycle = FetchCycle.objects.get(pk=cycle_id)
    assert cycle.status == CycleStatus.COMPLETED
    assert cycle.accounts_failed == 1 and cycle.accounts_synced == 0
    (summary,) = cycle.accounts.values()
    assert summary["status"] == "error" and summary["error"]
    page = logged_in_client.get(reverse("routing:fetcher")).content.decode()
    assert "+1 failed" in page


@pytest.mark.django_db
def test_stalled_cycles_are_closed(settings: Any) -> None:
    from apps.routing.actions import fail_stalled_cycles

    stale = FetchCycle.objects.create(trigger=CycleTrigger.SCHEDULE)
    FetchCycle.objects.filter(pk=stale.pk).update(started_at=dt.datetime.now(dt.UTC) - dt.timedelta(days=1))
    fresh = FetchCycle.objects.create(trigger=CycleTrigger.FETCH)
    assert fail_stalled_cycles() == 1
    stale.refresh_from_db()
    fresh.refresh_from_db()
    assert stale.status == CycleStatus.FAILED and "worker stopped" in stale.error
    assert fresh.status == CycleStatus.RUNNING


@pytest.mark.django_db
def test_page_controls_start_and_stop(logged_in_client: Any, user: Any) -> None:
    page = logged_in_client.get(reverse("routing:fetcher"))
    assert page.status_code == 200 and "Start schedule" in page.content.decode()
    partial = logged_in_client.post(reverse("routing:fetcher_control", args=["start"]), HTTP_HX_REQUEST="true")
    assert "Stop schedule" in partial.content.decode()
    logged_in_client.post(reverse("routing:fetcher_control", args=["stop"]))
    assert Schedule.objects.get(name=fetcher_schedule_name(owner_id=user.pk)).repeats == 0
    assert logged_in_client.post(reverse("routing:fetcher_control", args=["explode"])).status_code == 404


@pytest.mark.django_db
def test_a_routing_failure_is_shown_on_the_cycle(monkeypatch: pytest.MonkeyPatch, store_mail: Any) -> None:
    from apps.routing import actions, receivers

    cycle = FetchCycle.objects.create(trigger=CycleTrigger.FETCH)
    message = store_mail()

    def broken(**kwargs: Any) -> None:
        raise RuntimeError("rule set unavailable")

    monkeypatch.setattr(actions, "route_messages", broken)
    receivers.route_stored_messages(None, account_id=1, message_ids=[message.pk], fetch_cycle_id=cycle.pk)
    cycle.refresh_from_db()
    assert cycle.error.startswith("routing of 1 new messages failed (RuntimeError: rule set unavailable)")


@pytest.fixture
def other_user(db: Any) -> Any:
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user(username="other", email="other@example.com", password="x" * 20)


@pytest.mark.django_db
def test_each_owner_controls_only_their_own_fetcher(client: Any, user: Any, other_user: Any) -> None:
    client.force_login(user)
    assert client.post("/api/fetcher/start", content_type="application/json").json()["running"] is True
    mine = Schedule.objects.get(name=fetcher_schedule_name(owner_id=user.pk))

    client.force_login(other_user)
    status = client.get("/api/fetcher/status").json()
    assert status["running"] is False  # the first owner's schedule is not theirs
    client.post("/api/fetcher/start", data={"intervalMinutes": 30}, content_type="application/json")
    client.post("/api/fetcher/stop")
    mine.refresh_from_db()
    assert (mine.repeats, mine.minutes) == (-1, 5)  # untouched by the other owner's start/stop
    theirs = Schedule.objects.get(name=fetcher_schedule_name(owner_id=other_user.pk))
    assert (theirs.repeats, theirs.minutes, theirs.kwargs) == (0, 30, repr({"owner_id": other_user.pk}))


@pytest.mark.django_db
def test_cycles_are_visible_to_their_owner_and_to_staff_only(
    client: Any, user: Any, other_user: Any, staff_user: Any
) -> None:
    client.force_login(user)
    own = client.post("/api/fetcher/fetch").json()["fetchCycleId"]
    assert FetchCycle.objects.get(pk=own).owner == user

    client.force_login(other_user)
    theirs = client.post("/api/fetcher/fetch").json()["fetchCycleId"]
    status = client.get("/api/fetcher/status").json()
    assert [c["id"] for c in status["recentCycles"]] == [theirs]
    assert status["currentCycle"]["id"] == theirs  # not run: on-commit callbacks do not fire here
    page = client.get(reverse("routing:fetcher")).content.decode()
    assert f'id="cycle-{theirs}"' in page and f'id="cycle-{own}"' not in page

    client.force_login(staff_user)
    status = client.get("/api/fetcher/status").json()
    assert {c["id"] for c in status["recentCycles"]} == {own, theirs}
    assert status["currentCycle"] is None  # the staff member's own fetcher has no cycle
    page = client.get(reverse("routing:fetcher")).content.decode()
    assert f'id="cycle-{own}"' in page and f'id="cycle-{theirs}"' in page


@pytest.mark.django_db
def test_a_scheduled_fetch_for_a_removed_owner_does_nothing(user: Any) -> None:
    owner_id = user.pk
    user.delete()
    assert tasks.scheduled_fetch_task(owner_id=owner_id) == "gone"
    assert not FetchCycle.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_migration_splits_the_global_schedule_per_account_owner(user: Any, other_user: Any) -> None:
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    create_imap_account(
        owner=user, name="work", address="a@x.test", host="127.0.0.1", port=1, security="none", username="a",
        password="p",
    )  # fmt: skip
    before = [("routing", "0001_initial")]
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes("routing")
    executor = MigrationExecutor(connection)
    try:
        executor.migrate(before)
        old = executor.loader.project_state(before).apps
        old_cycle = old.get_model("routing", "FetchCycle")
        requested = old_cycle.objects.create(trigger="fetch", requested_by_id=other_user.pk)
        scheduled = old_cycle.objects.create(trigger="schedule")
        Schedule.objects.create(
            name="mailagent-fetcher", func="apps.routing.tasks.scheduled_fetch_task", schedule_type=Schedule.MINUTES,
            minutes=17, repeats=-1,
        )  # fmt: skip
        MigrationExecutor(connection).migrate(latest)
    finally:
        MigrationExecutor(connection).migrate(latest)
    assert FetchCycle.objects.get(pk=requested.pk).owner_id == other_user.pk
    assert FetchCycle.objects.get(pk=scheduled.pk).owner_id is None  # staff still see it
    assert not Schedule.objects.filter(name="mailagent-fetcher").exists()
    (split,) = Schedule.objects.filter(name__startswith="mailagent-fetcher-")
    assert split.name == fetcher_schedule_name(owner_id=user.pk)  # the only owner of a mail account
    assert (split.minutes, split.repeats, split.kwargs) == (17, -1, repr({"owner_id": user.pk}))
