"""Fault campaign: real processes are killed with SIGKILL at the points where work can be lost or left
stuck (holding the account lock, importing, indexing, running a director, running an Ask question), then
the system restarts and its sweepers run: nothing is lost, nothing is duplicated, nothing stays running."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest
from django.utils import timezone
from django_q.models import Schedule

from apps.accounts.actions import create_local_account
from apps.accounts.importers import MailImportError, import_path
from apps.accounts.models import MailAccount
from apps.accounts.sync import acquire_sync_lock, release_sync_lock
from apps.ask.apps import STALLED_SCHEDULE_NAME
from apps.ask.models import AskConversation, AskRun, RunStatus
from apps.ask.runner import STALLED_AFTER, fail_stalled_runs
from mailagent.liveness import holder_is_dead, process_identity
from tests.services import REPO_ROOT, subprocess_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.faults]

HOLD_LOCK = (
    "import time; from apps.accounts.sync import acquire_sync_lock;"
    "print('held' if acquire_sync_lock({pk}) else 'busy', flush=True); time.sleep(300)"
)


def kill9(process: subprocess.Popen[Any]) -> None:
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


def test_the_lock_of_a_killed_holder_is_taken_over_at_once(user: Any, tmp_path: Any) -> None:
    account = create_local_account(owner=user, name="locked")
    holder = subprocess.Popen(
        [sys.executable, "manage.py", "shell", "--verbosity", "0", "-c", HOLD_LOCK.format(pk=account.pk)],
        cwd=REPO_ROOT,
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        # While the holder lives, the lock is its own (a live process is never robbed).
        assert acquire_sync_lock(account.pk) is None
        (tmp_path / "one.eml").write_bytes(b"Subject: hi\r\nMessage-ID: <one@example.com>\r\n\r\nbody\r\n")
        with pytest.raises(MailImportError, match="being synced or imported right now"):
            import_path(account, tmp_path / "one.eml")
        assert MailAccount.objects.get(pk=account.pk).sync_lock_holder.split("|")[2] == str(holder.pid)
    finally:
        kill9(holder)
    started = time.monotonic()
    summary = import_path(account, tmp_path / "one.eml")  # no 600 s wait: the dead holder's lock is taken over
    assert time.monotonic() - started < 30
    assert summary.imported == 1
    assert MailAccount.objects.get(pk=account.pk).sync_lock_token == ""


def test_a_holder_on_another_machine_keeps_the_lock_until_it_expires(user: Any) -> None:
    account = create_local_account(owner=user, name="remote")
    token = acquire_sync_lock(account.pk)
    assert token is not None
    MailAccount.objects.filter(pk=account.pk).update(sync_lock_holder="another-host|boot|1|1")
    assert acquire_sync_lock(account.pk) is None
    MailAccount.objects.filter(pk=account.pk).update(sync_lock_expires_at=timezone.now() - dt.timedelta(seconds=1))
    taken = acquire_sync_lock(account.pk)
    assert taken is not None and taken != token
    release_sync_lock(account.pk, taken)


def dead_process_identity() -> str:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        identity = process_identity(process.pid)
        assert not holder_is_dead(identity)
    finally:
        kill9(process)
    assert holder_is_dead(identity)
    return identity


def test_ask_runs_of_a_dead_server_process_are_failed_with_a_reason(user: Any) -> None:
    conversation = AskConversation.objects.create(owner=user)
    now = timezone.now()
    dead = dead_process_identity()
    orphaned = AskRun.objects.create(
        conversation=conversation, owner=user, question="q1", status=RunStatus.RUNNING, started_at=now, worker=dead
    )
    queued = AskRun.objects.create(conversation=conversation, owner=user, question="q2", worker=dead)
    live = AskRun.objects.create(
        conversation=conversation,
        owner=user,
        question="q3",
        status=RunStatus.RUNNING,
        started_at=now,
        worker=process_identity(),
    )
    unknown = AskRun.objects.create(conversation=conversation, owner=user, question="q4", created_at=now)
    done = AskRun.objects.create(conversation=conversation, owner=user, question="q5", status=RunStatus.DONE)

    assert fail_stalled_runs(now=now) == 2
    for run in (orphaned, queued):
        run.refresh_from_db()
        assert run.status == RunStatus.ERROR
        assert "server that ran it stopped" in run.error and run.finished_at == now
    # A run in a live process, or whose process cannot be checked, is left alone until it is too old.
    assert set(AskRun.objects.filter(status=RunStatus.RUNNING).values_list("pk", flat=True)) == {live.pk}
    assert fail_stalled_runs(now=now + STALLED_AFTER + dt.timedelta(seconds=1)) == 2
    assert set(AskRun.objects.filter(status=RunStatus.ERROR).values_list("pk", flat=True)) == {
        orphaned.pk,
        queued.pk,
        live.pk,
        unknown.pk,
    }
    done.refresh_from_db()
    assert done.status == RunStatus.DONE
    schedule = Schedule.objects.get(name=STALLED_SCHEDULE_NAME)
    assert schedule.func == "apps.ask.tasks.fail_stalled_ask_runs_task" and schedule.repeats == -1
