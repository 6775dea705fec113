"""A director run waiting for its model in the generation queue (apps/llm/queue.py) says so on its page, with
the real number ahead, and goes on when its turn comes. The run executes in a worker process
(`run_director_task` in `manage.py shell`) while another machine's request holds the only slot."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.llm.configs import concurrency_key
from apps.llm.models import ApiConfig, GenerationTicket
from apps.orchestration.models import Director, Run, RunStatus
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.services import REPO_ROOT, subprocess_env

pytestmark = pytest.mark.django_db(transaction=True)


def wait_until(condition: Any, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what}: not reached in {timeout}s")


def test_the_run_page_shows_the_place_in_the_models_line(user: Any, store_mail: Any, client: Any) -> None:
    client.force_login(user)
    message = store_mail(subject="Queue me", sender="client@example.com")
    llm = FakeOpenAI()
    with llm:
        config = ApiConfig.objects.create(
            owner=user, name="local", base_url=llm.base_url, model="fake-model", max_concurrency=1
        )
        director = Director.objects.create(owner=user, name="Patient", api_config=config, step_limit=4)
        run = Run.objects.create(message=message, director=director)
        llm.script(Reply(content="Nothing to do."))
        # Generating elsewhere (another machine: only its lease, renewed here, says it lives) and one waiting.
        holder = "another-machine|00000000-0000-0000-0000-000000000000|4242|99"
        generating = GenerationTicket.objects.create(key=concurrency_key(config), holder=holder, active=True)
        waiting = GenerationTicket.objects.create(key=concurrency_key(config), holder=holder)
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
        live = reverse("runs:live", args=[run.pk])
        try:

            def queued() -> bool:  # (the foreign leases are renewed meanwhile: the worker may start slowly)
                GenerationTicket.objects.filter(holder=holder).update(heartbeat_at=timezone.now())
                return GenerationTicket.objects.filter(requester=f"run:{run.pk}").exists()

            wait_until(queued, "the run's ticket")
            page = client.get(live).content.decode()
            assert "Waiting for the model: 2 ahead (1 generating)" in page
            generating.delete()  # it finished; the other waiter takes the slot
            GenerationTicket.objects.filter(pk=waiting.pk).update(active=True, heartbeat_at=timezone.now())
            wait_until(
                lambda: "Waiting for the model: 1 ahead (1 generating)" in client.get(live).content.decode(), "1 ahead"
            )
            waiting.delete()
            worker.wait(timeout=120)
        finally:
            if worker.poll() is None:
                worker.kill()
        assert llm.chat_requests(), "the run called its model once its turn came"
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, (run.status, run.error)
    page = client.get(live).content.decode()
    assert "Waiting for the model" not in page
    assert not GenerationTicket.objects.exists()
