"""kill -9 in the middle of a director run: the engine stores each step's diagnostics (ProviderEvents,
OrchLog) together with the step's transcript in one transaction, so a kill loses only the step in
progress; every completed step keeps its events, the stalled-run sweeper puts the run back, and the
retried run completes without storing anything of the dead attempt twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

from apps.llm.models import ApiConfig
from apps.orchestration.actions import requeue_stalled_runs
from apps.orchestration.models import (
    Conversation,
    Director,
    OrchLog,
    ProviderEvent,
    Run,
    RunStatus,
    ThreadKind,
    ThreadStatus,
)
from apps.workspaces.models import Workspace, WorkspaceItem
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.services import REPO_ROOT, subprocess_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.faults]


def wait_until(condition: Any, what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what}: not reached in {timeout}s")


def test_kill_9_mid_run_keeps_every_completed_steps_events(user: Any, store_mail: Any) -> None:
    message = store_mail(subject="Crash me", sender="client@example.com")
    llm = FakeOpenAI()
    with llm:
        config = ApiConfig.objects.create(
            owner=user, name="fake", base_url=llm.base_url, api_key="sk-fake", model="fake-model", timeout_seconds=300
        )
        director = Director.objects.create(owner=user, name="Crashy", api_config=config, step_limit=6)
        run = Run.objects.create(message=message, director=director)
        llm.script(
            Reply.calls(("workspace_add_item", {"label": "summary", "data": "It is late.", "path": "s.md"})),
            Reply.calls(("workspace_list_items", {})),
            Reply(content="never arrives", delay=30),  # the process is killed while waiting for step 3
        )
        worker = subprocess.Popen(
            [
                sys.executable,
                "manage.py",
                "shell",
                "--verbosity",
                "0",
                "-c",
                f"from apps.orchestration.tasks import run_director_task; run_director_task({run.pk})",
            ],
            cwd=REPO_ROOT,
            env=subprocess_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_until(lambda: len(llm.chat_requests()) >= 3, "the third model call")
        finally:
            os.kill(worker.pid, signal.SIGKILL)
            worker.wait(timeout=30)

        run.refresh_from_db()
        assert run.status == RunStatus.RUNNING
        thread = Conversation.objects.get(run=run, kind=ThreadKind.DIRECTOR)
        roles = [m["role"] for m in thread.messages]
        # Two completed steps: each an assistant message with its call and the tool's answer.
        assert roles.count("assistant") == 2 and roles.count("tool") == 2
        # Steps 1 and 2 are whole; step 3's request event was still in memory when the process died.
        assert thread_events(thread) == [("request", 1), ("response", 1), ("request", 1), ("response", 1)]
        first_attempt_logs = thread_actions(thread)
        assert first_attempt_logs == [
            ("director", "director_start"),
            ("tool", "workspace_add_item"),
            ("tool", "workspace_list_items"),
        ]
        assert WorkspaceItem.objects.filter(workspace__run_id=run.pk, path="s.md").count() == 1

        # The sweeper closes the dead attempt's thread and queues the run again; tests run its task at once,
        # in this process, against the same model server: it adds the same item again, then answers.
        llm.script(
            Reply.calls(("workspace_add_item", {"label": "summary", "data": "It is late.", "path": "s.md"})),
            Reply(content="Summary in s.md."),
        )
        assert requeue_stalled_runs(older_than_seconds=0) == [run.pk]

    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, (run.status, run.error)
    thread.refresh_from_db()
    assert thread.status == ThreadStatus.FAILED
    # The dead attempt's rows are as they were: nothing of it stored again by the retry.
    assert thread_events(thread) == [("request", 1), ("response", 1), ("request", 1), ("response", 1)]
    assert thread_actions(thread) == first_attempt_logs
    retry = Conversation.objects.get(run=run, kind=ThreadKind.DIRECTOR, status=ThreadStatus.COMPLETED)
    assert thread_events(retry) == [("request", 1), ("response", 1), ("request", 1), ("response", 1)]
    assert thread_actions(retry) == [
        ("director", "director_start"),
        ("tool", "workspace_add_item"),
        ("result", "director_complete"),
    ]
    assert OrchLog.objects.filter(run=run).count() == len(first_attempt_logs) + 3
    # Same workspace, the item once: the retry's add was refused as a path conflict, and the model was told.
    assert Workspace.objects.filter(run_id=run.pk).count() == 1
    assert WorkspaceItem.objects.filter(workspace__run_id=run.pk).count() == 1
    tool_answer = next(m for m in retry.messages if m["role"] == "tool")
    assert "already used" in tool_answer["content"]
    assert ProviderEvent.objects.filter(run=run).count() == 8


def thread_events(thread: Conversation) -> list[tuple[str, int]]:
    return list(ProviderEvent.objects.filter(thread=thread).order_by("pk").values_list("kind", "attempt"))


def thread_actions(thread: Conversation) -> list[tuple[str, Any]]:
    return [
        (entry.phase, (entry.detail or {}).get("action") or (entry.detail or {}).get("tool"))
        for entry in OrchLog.objects.filter(dir_thread=thread).order_by("pk")
    ]
