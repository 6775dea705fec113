"""A real `manage.py qcluster` process picks up a queued task and stores its result (Redis and ORM brokers)."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import pytest
from django_q.models import Task

from tests.services import REPO_ROOT, qcluster, subprocess_env

pytestmark = pytest.mark.django_db(transaction=True)

ENQUEUE = (
    "from django_q.tasks import async_task;"
    "print(async_task('apps.accounts.tasks.sync_all_accounts_task', task_name='cluster-smoke'))"
)


def run_cluster_and_wait(env: dict[str, str]) -> Task:
    with qcluster(env) as cluster:
        enqueued = subprocess.run(
            [sys.executable, "manage.py", "shell", "--verbosity", "0", "-c", ENQUEUE],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert enqueued.returncode == 0, enqueued.stderr
        task_id = enqueued.stdout.strip()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            task = Task.objects.filter(id=task_id).first()
            if task is not None:
                return task
            assert cluster.poll() is None, "qcluster exited early"
            time.sleep(0.25)
        raise AssertionError("the cluster did not finish the task within 60s")


@pytest.mark.services
def test_qcluster_on_redis_completes_a_task(redis_url: str, user: Any) -> None:
    task = run_cluster_and_wait(subprocess_env(REDIS_URL=redis_url))
    assert task.success, task.result
    assert task.result == []
    assert task.name == "cluster-smoke"


def test_qcluster_on_the_orm_broker_completes_a_task(user: Any) -> None:
    task = run_cluster_and_wait(subprocess_env())
    assert task.success, task.result
