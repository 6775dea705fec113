"""The generation queue (apps/llm/queue.py) across real processes: `manage.py shell` children call the model
through the product's own path (ApiConfig → llm_config → chat) against the fake OpenAI server, which records
how many requests it served at once. With the in-process semaphore each process had a limit of its own, so
two processes with max_concurrency 1 sent two requests at once."""

from __future__ import annotations

import datetime as dt
import itertools
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone

from apps.llm import LLMError, chat
from apps.llm.configs import concurrency_key, llm_config
from apps.llm.models import ApiConfig, GenerationTicket
from apps.llm.queue import QueuePosition, queue_position, waiting_as
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.services import REPO_ROOT, subprocess_env

pytestmark = pytest.mark.django_db(transaction=True)

# A child process: waits for the start file (so that every child competes from the same moment, whatever its
# start-up took), then makes CALLS model calls, printing each change of its place in the line.
CHILD = """
import os, sys, time
from apps.llm import chat
from apps.llm.configs import concurrency_key, llm_config
from apps.llm.models import ApiConfig
from apps.llm.queue import waiting_as
config = llm_config(ApiConfig.objects.get(pk={config_id}))
print("ready", flush=True)
while not os.path.exists({start!r}):
    time.sleep(0.01)
def report(position):
    print("go" if position is None else f"ahead {{position.ahead}}", flush=True)
with waiting_as("child:{name}", report):
    for _ in range({calls}):
        chat(config, [{{"role": "user", "content": "{name}"}}])
print("done", flush=True)
"""


def wait_until(condition: Any, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    raise AssertionError(f"{what}: not reached in {timeout}s")


@pytest.fixture
def slow_llm() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(default=Reply(content="ok", delay=0.4)) as server:
        yield server  # type: ignore[misc]


def make_config(user: Any, server: FakeOpenAI, *, max_concurrency: int) -> ApiConfig:
    return ApiConfig.objects.create(
        owner=user,
        name=f"local {max_concurrency}",
        base_url=server.base_url,
        model="fake-model",
        max_concurrency=max_concurrency,
        max_retries=0,
        timeout_seconds=60,
    )


class Child:
    def __init__(self, config: ApiConfig, name: str, start: Path, calls: int, env: dict[str, str]) -> None:
        code = CHILD.format(config_id=config.pk, start=str(start), calls=calls, name=name)
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "shell", "--verbosity", "0", "-c", code],
            cwd=REPO_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def finish(self, timeout: float = 180) -> list[str]:
        self.process.wait(timeout=timeout)
        self._reader.join(timeout=10)
        assert self.process.returncode == 0, "\n".join(self.lines)
        return self.lines


def run_children(
    config: ApiConfig | list[ApiConfig], count: int, calls: int, env: dict[str, str] | None = None
) -> list[list[str]]:
    configs = config if isinstance(config, list) else [config] * count
    with tempfile.TemporaryDirectory() as workdir:
        start = Path(workdir) / "start"
        children = [Child(configs[i], f"p{i}", start, calls, env or subprocess_env()) for i in range(count)]
        try:
            wait_until(lambda: all("ready" in child.lines for child in children), "every child started")
            start.touch()
            return [child.finish() for child in children]
        finally:
            for child in children:
                if child.process.poll() is None:
                    child.process.kill()


def test_two_processes_with_one_slot_never_generate_at_once(user: Any, slow_llm: FakeOpenAI) -> None:
    config = make_config(user, slow_llm, max_concurrency=1)
    outputs = run_children(config, count=2, calls=2)
    assert len(slow_llm.chat_requests()) == 4
    assert slow_llm.max_overlap() == 1
    spans = sorted(slow_llm.chat_spans)
    assert all(earlier[1] <= later[0] for earlier, later in itertools.pairwise(spans))
    # Someone waited, and was told so: one ahead of it (the one generating), then its turn.
    waits = [line for lines in outputs for line in lines if line.startswith("ahead ")]
    assert waits and set(waits) == {"ahead 1"}
    assert all(lines[-1] == "done" for lines in outputs)
    assert not GenerationTicket.objects.exists()  # every ticket is gone with its request


def test_the_limit_is_shared_by_three_processes(user: Any, slow_llm: FakeOpenAI) -> None:
    config = make_config(user, slow_llm, max_concurrency=2)
    outputs = run_children(config, count=3, calls=2)
    assert len(slow_llm.chat_requests()) == 6
    assert slow_llm.max_overlap() == 2  # the two slots are used, never a third
    assert any(line.startswith("ahead ") for lines in outputs for line in lines)


def test_two_users_configs_on_one_local_server_share_its_line(user: Any, slow_llm: FakeOpenAI) -> None:
    """Two users (or a director model and an Ask model) on the same Ollama compete for the same cores."""
    other = get_user_model().objects.create_user(username="other", email="other@example.com", password="x" * 12)
    mine = make_config(user, slow_llm, max_concurrency=1)
    theirs = make_config(other, slow_llm, max_concurrency=1)
    assert llm_config(mine).key == llm_config(theirs).key == f"server:127.0.0.1:{slow_llm.port}"
    run_children([mine, theirs], count=2, calls=2)
    assert len(slow_llm.chat_requests()) == 4
    assert slow_llm.max_overlap() == 1


def test_a_holder_generating_longer_than_the_lease_keeps_its_slot(user: Any) -> None:
    """The lease is 1 s here and each reply takes 2.5 s: without the heartbeat thread renewing the holder's
    ticket, the waiter would take the slot as a dead holder's and both would generate at once."""
    server = FakeOpenAI(default=Reply(content="ok", delay=2.5))
    with server:
        config = make_config(user, server, max_concurrency=1)
        env = subprocess_env(MAILAGENT_LLM_QUEUE_LEASE_SECONDS="1")
        outputs = run_children(config, count=2, calls=1, env=env)
        assert len(server.chat_requests()) == 2
        assert server.max_overlap() == 1
    assert any("ahead 1" in lines for lines in outputs)


def test_hosted_configs_keep_a_line_each(user: Any) -> None:
    first = ApiConfig.objects.create(owner=user, name="a", base_url="https://api.openai.com/v1", model="m")
    second = ApiConfig.objects.create(owner=user, name="b", base_url="https://api.openai.com/v1", model="m")
    assert (concurrency_key(first), concurrency_key(second)) == (f"apiconfig:{first.pk}", f"apiconfig:{second.pk}")


def test_a_killed_holders_slot_is_taken_back(user: Any, slow_llm: FakeOpenAI, settings: Any) -> None:
    settings.LLM_QUEUE_MAX_WAIT_SECONDS = 60  # fails with "queue_timeout" if the dead holder kept its slot
    config = make_config(user, slow_llm, max_concurrency=1)
    slow_llm.script(Reply(content="never read", delay=120))  # the holder is killed while it waits for this
    with tempfile.TemporaryDirectory() as workdir:
        start = Path(workdir) / "start"
        start.touch()
        holder = Child(config, "holder", start, 1, subprocess_env())
        try:
            wait_until(lambda: GenerationTicket.objects.filter(active=True).exists(), "the holder's slot")
            wait_until(lambda: slow_llm.max_overlap() == 1, "the holder's request")
            os.kill(holder.process.pid, signal.SIGKILL)
            holder.process.wait(timeout=30)
        finally:
            if holder.process.poll() is None:
                holder.process.kill()
    # The lease (30 s) has not lapsed: the ticket is taken back because its process is gone.
    ticket = GenerationTicket.objects.get()
    assert ticket.active and (timezone.now() - ticket.heartbeat_at).total_seconds() < 30
    result = chat(llm_config(config), [{"role": "user", "content": "after the kill"}])
    assert result.content == "ok"
    assert not GenerationTicket.objects.exists()


def foreign_ticket(key: str, *, active: bool = True, heartbeat_age: float = 0.0) -> GenerationTicket:
    """A ticket of a process on another machine (not checkable from here: only its lease says it lives)."""
    return GenerationTicket.objects.create(
        key=key,
        holder="another-machine|00000000-0000-0000-0000-000000000000|4242|99",
        active=active,
        heartbeat_at=timezone.now() - dt.timedelta(seconds=heartbeat_age),
    )


def test_a_lapsed_lease_of_another_machine_is_taken_back(user: Any, slow_llm: FakeOpenAI, settings: Any) -> None:
    settings.LLM_QUEUE_MAX_WAIT_SECONDS = 5
    config = llm_config(make_config(user, slow_llm, max_concurrency=1))
    foreign_ticket(config.key, heartbeat_age=settings.LLM_QUEUE_LEASE_SECONDS + 5)
    assert chat(config, [{"role": "user", "content": "x"}]).content == "ok"
    assert not GenerationTicket.objects.exists()


def test_a_wait_beyond_the_bound_fails_saying_how_long_and_how_many_were_ahead(
    user: Any, slow_llm: FakeOpenAI, settings: Any
) -> None:
    settings.LLM_QUEUE_MAX_WAIT_SECONDS = 0.6
    config = llm_config(make_config(user, slow_llm, max_concurrency=1))
    foreign_ticket(config.key)  # generating elsewhere, lease renewed
    foreign_ticket(config.key, active=False)  # waiting before us
    positions: list[QueuePosition | None] = []
    events: list[Any] = []
    with waiting_as("test:1", positions.append), pytest.raises(LLMError) as caught:
        chat(config, [{"role": "user", "content": "x"}], events=events.append)
    assert caught.value.category == "queue_timeout"
    message = str(caught.value)
    assert "waited 1 s in the generation queue" in message or "waited 0 s in the generation queue" in message
    assert "2 requests still ahead (1 generating, at most 1 at a time)" in message
    assert slow_llm.chat_requests() == []  # nothing was sent
    assert [(e.kind, e.category) for e in events] == [("request", ""), ("error", "queue_timeout")]
    assert positions and positions[0] is not None and (positions[0].ahead, positions[0].generating) == (2, 1)
    assert GenerationTicket.objects.count() == 2  # its own ticket left with it


def test_the_position_moves_as_the_line_does(user: Any, slow_llm: FakeOpenAI, settings: Any) -> None:
    config = llm_config(make_config(user, slow_llm, max_concurrency=1))
    generating = foreign_ticket(config.key)
    waiting = foreign_ticket(config.key, active=False)
    positions: list[tuple[int, int] | None] = []

    def report(position: QueuePosition | None) -> None:
        positions.append(None if position is None else (position.ahead, position.generating))

    def ask() -> None:
        try:
            with waiting_as("ask:77", report):
                chat(config, [{"role": "user", "content": "x"}])
        finally:
            connection.close()

    worker = threading.Thread(target=ask)
    worker.start()
    wait_until(lambda: positions[-1:] == [(2, 1)], "two ahead")
    found = queue_position("ask:77")
    assert found is not None and (found.ahead, found.generating) == (2, 1)
    generating.delete()  # the one generating finishes; the other waiter takes its slot
    GenerationTicket.objects.filter(pk=waiting.pk).update(active=True)
    wait_until(lambda: positions[-1:] == [(1, 1)], "one ahead")
    GenerationTicket.objects.filter(pk=waiting.pk).delete()
    worker.join(timeout=30)
    assert positions[-1] is None  # its turn came
    assert [p for i, p in enumerate(positions) if i == 0 or p != positions[i - 1]] == [(2, 1), (1, 1), None]
    assert queue_position("ask:77") is None
    assert len(slow_llm.chat_requests()) == 1
