"""The outbox of the messages-stored hooks: a failed or interrupted index/route leaves the message pending
(never only logged), the scheduled sweeper finishes it with backoff, a re-import finishes it too, and the
home and Diagnostics pages say what is waiting and what to do."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.db import OperationalError
from django.utils import timezone
from django_q.models import Schedule

from apps.accounts import outbox
from apps.accounts.apps import OUTBOX_SCHEDULE_NAME
from apps.accounts.importers import import_path
from apps.accounts.models import HookFailure, HookKind, MailAccount, Message, MessageOutbox
from apps.accounts.tasks import sweep_outbox_task
from apps.orchestration.models import Run
from apps.search.backends import get_search_backend
from apps.search.models import SearchDocument
from tests.fakes.dovecot import make_message

pytestmark = pytest.mark.django_db

LATER = dt.timedelta(minutes=5)


def break_indexing(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(self: Any, documents: Any) -> Any:
        raise OperationalError("disk I/O error")

    monkeypatch.setattr(type(get_search_backend()), "index", fail)


def indexed_message_ids() -> set[int]:
    return set(SearchDocument.objects.filter(kind="message").values_list("object_id", flat=True))


def write_mbox(path: Path, count: int, prefix: str = "outbox") -> Path:
    chunks = []
    for number in range(count):
        raw = make_message(
            subject=f"Quarterly {prefix} {number}",
            body=f"Body {number}\n",
            sender="Ada <ada@example.com>",
            to="owner@example.com",
            message_id=f"<{prefix}-{number}@example.com>",
            date=dt.datetime(2026, 11, 2, 10, number % 60, tzinfo=dt.UTC),
        )
        chunks.append(b"From ada@example.com Mon Nov  2 10:00:00 2026\n" + raw.replace(b"\r\n", b"\n") + b"\n")
    path.write_bytes(b"".join(chunks))
    return path


def test_a_failed_index_leaves_the_message_pending_and_the_sweeper_indexes_it(
    store_mail: Callable[..., Message], monkeypatch: pytest.MonkeyPatch
) -> None:
    break_indexing(monkeypatch)
    message = store_mail(subject="Invoice 4711")
    message.refresh_from_db()
    assert message.outbox.indexed_at is None
    assert message.pk not in indexed_message_ids()
    failure = HookFailure.objects.get(message=message, kind=HookKind.INDEX)
    assert failure.attempts == 1
    assert "disk I/O error" in failure.last_error
    assert failure.next_attempt_at > timezone.now()

    # Still broken: the sweeper's attempt is recorded and the backoff grows.
    first_due = failure.next_attempt_at + dt.timedelta(seconds=1)
    assert outbox.sweep_outbox(now=first_due).announced["index"] == 1
    failure.refresh_from_db()
    assert failure.attempts == 2
    assert failure.next_attempt_at - failure.last_failed_at == outbox.backoff(2) > outbox.backoff(1)
    # Before the next attempt is due nothing is tried.
    assert outbox.sweep_outbox(now=first_due).announced["index"] == 0

    monkeypatch.undo()
    assert outbox.sweep_outbox(now=failure.next_attempt_at + dt.timedelta(seconds=1)).announced["index"] == 1
    message.refresh_from_db()
    assert message.outbox.indexed_at is not None
    assert message.pk in indexed_message_ids()
    assert not HookFailure.objects.filter(message=message).exists()
    assert message.outbox.routed_at is not None  # routing was never broken


def test_a_failed_route_is_retried_and_creates_each_run_once(
    store_mail: Callable[..., Message], director: Any, add_filter: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    boss = director("Bills")
    add_filter(boss, "subject", "invoice")
    from apps.orchestration import actions as orchestration_actions

    real_create_runs = orchestration_actions.create_runs

    def broken(**kwargs: Any) -> list[int]:
        raise OperationalError("database is locked")

    monkeypatch.setattr(orchestration_actions, "create_runs", broken)
    message = store_mail(subject="Invoice 4712")
    message.refresh_from_db()
    assert message.outbox.routed_at is None and message.outbox.indexed_at is not None
    assert not Run.objects.filter(message=message).exists()
    assert HookFailure.objects.get(message=message, kind=HookKind.ROUTE).attempts == 1

    monkeypatch.setattr(orchestration_actions, "create_runs", real_create_runs)
    later = timezone.now() + LATER
    outbox.sweep_outbox(now=later)
    outbox.sweep_outbox(now=later + LATER)
    message.refresh_from_db()
    assert message.outbox.routed_at is not None
    assert Run.objects.filter(message=message, director=boss).count() == 1
    assert not HookFailure.objects.exists()


def test_one_bad_message_does_not_hold_back_the_rest_of_a_swept_batch(
    store_mail: Callable[..., Message], monkeypatch: pytest.MonkeyPatch
) -> None:
    break_indexing(monkeypatch)
    messages = [store_mail(subject=f"Report {n}") for n in range(3)]
    poison = messages[1].pk
    real_index = None
    monkeypatch.undo()
    real_index = type(get_search_backend()).index

    def fail_on_poison(self: Any, documents: Any) -> Any:
        if any(document.object_id == poison and document.kind == "message" for document in documents):
            raise ValueError("cannot index this one")
        return real_index(self, documents)

    monkeypatch.setattr(type(get_search_backend()), "index", fail_on_poison)
    outbox.sweep_outbox(now=timezone.now() + LATER)
    done = set(Message.objects.filter(outbox__indexed_at__isnull=False).values_list("pk", flat=True))
    assert done == {messages[0].pk, messages[2].pk}
    assert list(HookFailure.objects.values_list("message_id", "attempts", "last_error")) == [
        (poison, 2, "ValueError: cannot index this one")
    ]


def test_a_crash_after_commit_is_finished_by_the_sweeper_and_by_a_re_import(
    account: MailAccount, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    """The probe's finding: killed right after the messages committed, before their hooks ran."""
    mbox = write_mbox(tmp_path / "inbox.mbox", 30)
    with django_capture_on_commit_callbacks(execute=False):  # the process "dies" before on-commit work
        summary = import_path(account, mbox)
    assert summary.imported == 30
    assert Message.objects.filter(outbox__indexed_at=None).count() == 30
    assert not indexed_message_ids()

    # Re-running the import stores nothing new but finishes the unfinished messages.
    with django_capture_on_commit_callbacks(execute=True):
        again = import_path(account, mbox)
    assert again.imported == 0 and again.duplicates == 30
    assert Message.objects.filter(outbox__indexed_at=None).count() == 0
    assert Message.objects.filter(outbox__routed_at=None).count() == 0
    assert len(indexed_message_ids()) == 30

    # The sweeper alone does it too (here for a second batch), through its scheduled task.
    more = write_mbox(tmp_path / "more.mbox", 12, prefix="later")
    with django_capture_on_commit_callbacks(execute=False):
        import_path(account, more)
    assert Message.objects.filter(outbox__indexed_at=None).count() == 12
    MessageOutbox.objects.filter(indexed_at=None).update(stored_at=timezone.now() - LATER)
    assert sweep_outbox_task() == {"index": 12, "route": 12}
    assert Message.objects.filter(outbox__indexed_at=None).count() == 0
    assert len(indexed_message_ids()) == 42
    assert sweep_outbox_task() == {"index": 0, "route": 0}


def test_the_sweeper_is_scheduled_after_migrate() -> None:
    schedule = Schedule.objects.get(name=OUTBOX_SCHEDULE_NAME)
    assert schedule.func == "apps.accounts.tasks.sweep_outbox_task"
    assert schedule.schedule_type == Schedule.MINUTES and schedule.minutes == 1
    assert schedule.repeats == -1


def test_home_and_diagnostics_show_persistent_failures_and_what_to_do(
    store_mail: Callable[..., Message],
    monkeypatch: pytest.MonkeyPatch,
    client: Any,
    user: Any,
    staff_user: Any,
) -> None:
    page = client
    page.force_login(user)
    assert b'data-testid="outbox-status"' not in page.get("/").content  # nothing waiting: nothing shown

    break_indexing(monkeypatch)
    message = store_mail(subject="Contract")
    at = timezone.now()
    for _ in range(outbox.PERSISTENT_ATTEMPTS - 1):
        at = HookFailure.objects.get(message=message).next_attempt_at + dt.timedelta(seconds=1)
        outbox.sweep_outbox(now=at)
    assert HookFailure.objects.get(message=message).attempts == outbox.PERSISTENT_ATTEMPTS
    MessageOutbox.objects.filter(message=message).update(stored_at=timezone.now() - LATER)

    home = page.get("/").content.decode()
    assert 'data-testid="outbox-status"' in home
    assert "keeps failing" in home
    assert "OperationalError: disk I/O error" in home
    assert "manage.py reindex" in home
    row = home.split('data-kind="index"', 1)[1].split("</tr>", 1)[0]
    assert [cell.split("<", 1)[0] for cell in row.split('class="num">')[1:]] == ["1", "1", "1"]

    # Another user's failures are not theirs to see; staff see everyone's on Diagnostics.
    other = type(user).objects.create_user(username="other", password="pw-other-123456")
    page.force_login(other)
    assert 'data-testid="outbox-status"' not in page.get("/").content.decode()
    page.force_login(staff_user)
    diagnostics = page.get("/runs/diagnostics/").content.decode()
    assert "OperationalError: disk I/O error" in diagnostics
