"""Runs: one per (message, director), whatever fires the hook how often or how concurrently."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import close_old_connections

from apps.accounts.models import Message
from apps.accounts.providers.base import RemoteMessage
from apps.accounts.signals import messages_stored
from apps.accounts.store import store_remote_messages
from apps.orchestration import actions as orchestration_actions
from apps.orchestration.models import Run, RunStatus
from apps.routing import actions
from tests.fakes.dovecot import make_message

pytestmark = pytest.mark.django_db


def test_one_email_two_directors_exactly_two_runs_when_the_hook_fires_twice(
    director: Any, add_filter: Any, store_mail: Any, django_capture_on_commit_callbacks: Any
) -> None:
    support, sales = director("Support"), director("Sales")
    add_filter(support, "from", r"client.*@domain\.com")
    add_filter(support, "subject", r"urgent")  # OR-ed with the first: still one run for Support
    add_filter(sales, "body", r"\bquote\b")
    message = store_mail(
        subject="Urgent: need a quote", body="Please send a quote.\n", sender="Client 9 <client9@domain.com>"
    )
    assert sorted(Run.objects.filter(message=message).values_list("director__name", flat=True)) == [
        "Sales",
        "Support",
    ]
    support_run = Run.objects.get(message=message, director=support)
    assert support_run.match["regex"] == r"client.*@domain\.com"  # the first filter in order wins
    with django_capture_on_commit_callbacks(execute=True):
        messages_stored.send(sender=Message, account_id=message.account_id, message_ids=[message.pk])
    again = actions.route_messages(message_ids=[message.pk])
    assert again.created_run_ids == [] and len(again.routes) == 2
    assert Run.objects.filter(message=message).count() == 2


@pytest.mark.django_db(transaction=True)
def test_two_workers_racing_create_each_run_once(director: Any, add_filter: Any, account: Any) -> None:
    support, sales = director("Support"), director("Sales")
    add_filter(support, "subject", "race")
    add_filter(sales, "subject", "race")
    stored = store_remote_messages(
        account=account,
        messages=[
            RemoteMessage(provider_id=f"race:{n}", raw=make_message(subject=f"race {n}", message_id=f"<race{n}@x>"))
            for n in range(20)
        ],
    )
    # transaction=True: the on-commit hook already routed them once. Race two more workers over them.
    assert Run.objects.count() == 40
    Run.objects.all().delete()
    ids = stored.created_ids
    barrier = threading.Barrier(2)
    created: list[list[int]] = []
    failures: list[BaseException] = []

    def worker() -> None:
        try:
            barrier.wait()
            created.append(actions.route_messages(message_ids=ids).created_run_ids)
        except BaseException as exc:  # surfaced below
            failures.append(exc)
        finally:
            close_old_connections()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not failures, failures
    assert Run.objects.count() == 40
    assert Run.objects.values("message_id", "director_id").distinct().count() == 40
    assert sum(len(c) for c in created) == 40  # every run was created by exactly one of the two


def test_runs_are_processed_once_and_closed_honestly(director: Any, add_filter: Any, store_mail: Any) -> None:
    support = director("Support")
    add_filter(support, "subject", "hello")
    message = store_mail(subject="hello")
    run = Run.objects.get(message=message)
    # django-q2 runs synchronously in tests: the enqueued task already processed it.
    assert run.status == RunStatus.SKIPPED
    assert run.status_reason == "Director has no API config: nothing was executed"
    assert run.started_at is not None and run.finished_at is not None
    assert orchestration_actions.process_run(run_id=run.pk) is None  # already taken: no second execution


def test_other_users_filters_never_see_my_mail(
    django_user_model: Any, add_filter: Any, store_mail: Any, director: Any
) -> None:
    other = django_user_model.objects.create_user(username="other", email="other@example.com", password="x")
    foreign = orchestration_actions.create_director(owner=other, name="Snoop")
    add_filter(foreign, "subject", ".*")
    mine = director("Mine")
    add_filter(mine, "subject", "secret")
    message = store_mail(subject="secret plans")
    assert list(Run.objects.filter(message=message).values_list("director__name", flat=True)) == ["Mine"]


def test_a_large_batch_routes_every_message(director: Any, add_filter: Any, account: Any) -> None:
    # An import commits up to 2,000 messages per batch; every one must get its run (no query-size limit).
    support = director("Support")
    add_filter(support, "subject", "invoice")
    messages = Message.objects.bulk_create(
        [
            Message(account=account, provider_id=f"big:{n}", dedupe_key=f"big:{n}", subject=f"invoice {n}")
            for n in range(1_500)
        ]
    )
    outcome = actions.route_messages(message_ids=[m.pk for m in messages], respect_creation=False)
    assert len(outcome.created_run_ids) == 1_500
    assert Run.objects.filter(director=support).count() == 1_500
    again = actions.route_messages(message_ids=[m.pk for m in messages], respect_creation=False)
    assert again.created_run_ids == [] and Run.objects.count() == 1_500
