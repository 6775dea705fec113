"""Fault campaign: real processes are killed with SIGKILL at the points where work can be lost or left
stuck (holding the account lock, importing, indexing, running a director, running an Ask question), then
the system restarts and its sweepers run: nothing is lost, nothing is duplicated, nothing stays running."""

from __future__ import annotations

import contextlib
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


def fault_env() -> dict[str, str]:
    # A loaded machine must not turn a filter match into a timed-out filter (50 ms by default).
    return subprocess_env(ROUTING_FILTER_TIMEOUT_MS="5000", ROUTING_MESSAGE_BUDGET_MS="10000")


def kill9(process: subprocess.Popen[Any]) -> None:
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


def test_the_lock_of_a_killed_holder_is_taken_over_at_once(user: Any, tmp_path: Any) -> None:
    account = create_local_account(owner=user, name="locked")
    holder = subprocess.Popen(
        [sys.executable, "manage.py", "shell", "--verbosity", "0", "-c", HOLD_LOCK.format(pk=account.pk)],
        cwd=REPO_ROOT,
        env=fault_env(),
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


# --- kill -9 during import and during indexing -------------------------------------------------------

ENRON_BOXES = ("mckay-b", "mckay-j", "mclaughlin-e", "mims-thurston-p")
ENRON_UNIQUE = 736  # distinct messages of those four inboxes (tests/accounts/test_import.py)


@pytest.fixture(scope="module")
def enron_boxes(tmp_path_factory: pytest.TempPathFactory) -> Any:
    import tarfile

    from tests.services import shared_path

    archive_path = shared_path("data", "enron", "enron-inbox.tar.gz")
    target = tmp_path_factory.mktemp("enron-faults")
    with tarfile.open(archive_path, "r:gz") as archive:
        members = [m for m in archive if m.isfile() and m.name.split("/")[1] in ENRON_BOXES]
        archive.extractall(target, members=members, filter="data")
    return target / "maildir"


def start_import(path: Any, account: str) -> subprocess.Popen[Any]:
    return subprocess.Popen(
        [sys.executable, "manage.py", "import_mail", str(path), "--account", account, "--owner", "owner@example.com"],
        cwd=REPO_ROOT,
        env=fault_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def kill_when(process: subprocess.Popen[Any], condition: Any, what: str, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            kill9(process)
            return
        if process.poll() is not None:
            output = process.stdout.read() if process.stdout else ""
            raise AssertionError(f"the import ended before the kill point ({what}): {output[-2000:]}")
        time.sleep(0.005)
    kill9(process)
    raise AssertionError(f"the kill point ({what}) was not reached in {timeout}s")


def finish_import(path: Any, account: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", "import_mail", str(path), "--account", account, "--owner", "owner@example.com"],
        cwd=REPO_ROOT,
        env=fault_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def assert_nothing_lost_or_duplicated(account_name: str) -> None:
    from apps.accounts.models import HookFailure, Message
    from apps.search.models import SearchDocument

    messages = Message.objects.filter(account__name=account_name)
    ids = set(messages.values_list("pk", flat=True))
    assert len(ids) == ENRON_UNIQUE
    assert messages.values("dedupe_key").distinct().count() == ENRON_UNIQUE
    assert not messages.filter(outbox__indexed_at=None).exists()
    assert not messages.filter(outbox__routed_at=None).exists()
    held = SearchDocument.objects.filter(kind="message", object_id__in=ids)
    documents = list(held.values_list("object_id", flat=True))
    assert len(documents) == len(set(documents)) == ENRON_UNIQUE  # every message indexed exactly once
    assert not HookFailure.objects.filter(message__account__name=account_name).exists()
    assert MailAccount.objects.get(name=account_name).sync_lock_token == ""


def test_kill_9_while_parsing_an_import_then_import_again(user: Any, enron_boxes: Any) -> None:
    from apps.accounts.models import Message

    process = start_import(enron_boxes, "killed-parsing")

    def parsing() -> bool:
        locked = MailAccount.objects.filter(name="killed-parsing").exclude(sync_lock_token="").exists()
        return locked and not Message.objects.filter(account__name="killed-parsing").exists()

    kill_when(process, parsing, "lock held, nothing stored yet")
    assert not Message.objects.filter(account__name="killed-parsing").exists()
    output = finish_import(enron_boxes, "killed-parsing")  # at once: the dead importer's lock is taken over
    assert f"{ENRON_UNIQUE} new" in output or str(ENRON_UNIQUE) in output
    assert_nothing_lost_or_duplicated("killed-parsing")


def test_kill_9_while_indexing_then_the_sweeper_and_a_re_import_finish(user: Any, enron_boxes: Any) -> None:
    from apps.accounts import outbox
    from apps.accounts.models import Message

    process = start_import(enron_boxes, "killed-indexing")
    unindexed = Message.objects.filter(account__name="killed-indexing", outbox__indexed_at=None)
    kill_when(process, unindexed.exists, "messages committed, their indexing running")
    stranded = unindexed.count()
    assert stranded > 0
    # Restart: the sweeper finds the stranded messages once their grace period is over.
    swept = outbox.sweep_outbox(now=timezone.now() + outbox.GRACE, limit=10_000)
    assert swept.announced["index"] == stranded
    assert not unindexed.exists()
    finish_import(enron_boxes, "killed-indexing")  # the rest of the mailbox, nothing twice
    assert_nothing_lost_or_duplicated("killed-indexing")


# --- kill -9 of the qcluster during a director run -------------------------------------------------


def start_cluster() -> subprocess.Popen[Any]:
    return subprocess.Popen(
        [sys.executable, "manage.py", "qcluster"],
        cwd=REPO_ROOT,
        env=fault_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: the kill takes the workers with it
    )


def kill_cluster(cluster: subprocess.Popen[Any]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(cluster.pid, signal.SIGKILL)
    cluster.wait(timeout=30)


def wait_until(condition: Any, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what}: not reached in {timeout}s")


def test_kill_9_of_the_worker_during_a_director_run_then_restart(user: Any, add_filter: Any, tmp_path: Any) -> None:
    from apps.llm.models import ApiConfig
    from apps.orchestration.models import Conversation, Director, Run, ThreadStatus
    from apps.orchestration.models import RunStatus as DirectorRunStatus
    from apps.workspaces.models import WorkspaceItem
    from tests.fakes.openai_server import FakeOpenAI, Reply

    llm = FakeOpenAI()
    with llm:
        config = ApiConfig.objects.create(
            owner=user, name="fake", base_url=llm.base_url, api_key="sk-fake", model="fake-model", timeout_seconds=300
        )
        director = Director.objects.create(owner=user, name="Summaries", api_config=config, step_limit=6)
        add_filter(director, "subject", ".")
        note = {"label": "summary", "data": "Quarterly numbers are in.", "path": "notes/summary.md"}
        llm.script(
            Reply.calls(("workspace_add_item", note)),
            Reply(content="Done.", delay=120),  # the first attempt dies waiting for this answer
            Reply.calls(("workspace_add_item", note)),  # the requeued attempt repeats its work...
            Reply.text("Done: summary saved."),
        )
        (tmp_path / "one.eml").write_bytes(
            b"From: Ada <ada@example.com>\r\nTo: owner@example.com\r\nSubject: Quarterly numbers\r\n"
            b"Message-ID: <director-fault@example.com>\r\nDate: Mon, 02 Nov 2026 10:00:00 +0000\r\n\r\n"
            b"See attached.\r\n"
        )
        finish_import(tmp_path / "one.eml", "director-fault")  # routes the message: one run, queued on the broker
        run = Run.objects.get(director=director)
        assert run.status == DirectorRunStatus.QUEUED

        cluster = start_cluster()
        try:
            wait_until(lambda: len(llm.chat_requests()) >= 2, "the director's second model call")
            run.refresh_from_db()
            assert run.status == DirectorRunStatus.RUNNING
        finally:
            kill_cluster(cluster)
        assert WorkspaceItem.objects.filter(workspace__run_id=run.pk).count() == 1

        cluster = start_cluster()  # restart; the stalled-run sweeper runs (its time limit waived here)
        try:
            swept = subprocess.run(
                [
                    sys.executable,
                    "manage.py",
                    "shell",
                    "--verbosity",
                    "0",
                    "-c",
                    "from apps.orchestration.actions import requeue_stalled_runs;"
                    "print(requeue_stalled_runs(older_than_seconds=0))",
                ],
                cwd=REPO_ROOT,
                env=fault_env(),
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert swept.returncode == 0, swept.stderr
            assert swept.stdout.strip() == f"[{run.pk}]"
            wait_until(
                lambda: Run.objects.filter(pk=run.pk, status=DirectorRunStatus.COMPLETED).exists(),
                "the requeued run completing",
                timeout=180,
            )
        finally:
            kill_cluster(cluster)

    assert Run.objects.filter(director=director).count() == 1
    items = WorkspaceItem.objects.filter(workspace__run_id=run.pk)
    assert list(items.values_list("path", "data")) == [("notes/summary.md", "Quarterly numbers are in.")]
    assert Conversation.objects.filter(run_id=run.pk, status=ThreadStatus.FAILED).count() == 1  # the dead attempt
    assert len(llm.chat_requests()) == 4
