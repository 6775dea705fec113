from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
import urllib.request
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from tests.services import REPO_ROOT, free_port, subprocess_env, wait_for_port

pytestmark = pytest.mark.django_db


def test_bootstrap_creates_the_admin_from_env_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAILAGENT_ADMIN_EMAIL", "boss@example.com")
    monkeypatch.setenv("MAILAGENT_ADMIN_PASSWORD", "a long enough password 123")
    out = StringIO()
    call_command("bootstrap", "--no-demo", stdout=out)
    admin = get_user_model().objects.get(email="boss@example.com")
    assert admin.is_superuser and admin.check_password("a long enough password 123")
    assert "password:" not in out.getvalue()
    call_command("bootstrap", "--no-demo", stdout=StringIO())
    assert get_user_model().objects.filter(is_superuser=True).count() == 1


def test_bootstrap_generates_and_prints_a_password_once(monkeypatch: pytest.MonkeyPatch, client: Any) -> None:
    monkeypatch.delenv("MAILAGENT_ADMIN_EMAIL", raising=False)
    monkeypatch.delenv("MAILAGENT_ADMIN_PASSWORD", raising=False)
    out = StringIO()
    call_command("bootstrap", "--no-demo", stdout=out)
    printed = out.getvalue()
    password = printed.split("password: ", 1)[1].split()[0]
    response = client.post("/accounts/login/", {"login": "admin@localhost", "password": password})
    assert response.status_code == 302
    again = StringIO()
    call_command("bootstrap", "--no-demo", stdout=again)
    assert "password" not in again.getvalue()


@pytest.mark.parametrize(
    ("debug", "flags", "loaded"),
    [
        (True, [], True),  # development, what `make run` does (it sets DEBUG=1)
        (False, [], False),  # production default: no fictional mail in the admin's account
        (False, ["--demo"], True),
        (True, ["--no-demo"], False),
    ],
)
def test_bootstrap_loads_demo_data_only_with_debug_or_demo(
    settings: Any, debug: bool, flags: list[str], loaded: bool
) -> None:
    from apps.accounts.models import Message

    settings.DEBUG = debug
    out = StringIO()
    call_command("bootstrap", *flags, stdout=out)
    admin = get_user_model().objects.get(is_superuser=True)
    assert Message.objects.filter(account__owner=admin).exists() is loaded
    assert ("Demo data not loaded: DEBUG is off" in out.getvalue()) is (not debug and not flags)


def _make_run_bootstrap_command() -> str:
    """The bootstrap line `make run` executes (from `make -n`, exactly as make expands it)."""
    planned = subprocess.run(["make", "-n", "run"], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout
    (line,) = [line for line in planned.splitlines() if "manage.py bootstrap" in line]
    return line


@pytest.mark.django_db(transaction=True)
def test_make_run_loads_the_demo_in_development_but_not_with_debug_off() -> None:
    from apps.accounts.models import Message

    command = ["bash", "-c", _make_run_bootstrap_command()]
    env = {k: v for k, v in subprocess_env(MAILAGENT_ADMIN_PASSWORD="a long enough password 123").items()}
    env.pop("DEBUG", None)

    production = subprocess.run(command, cwd=REPO_ROOT, env={**env, "DEBUG": "0"}, capture_output=True, text=True)
    assert production.returncode == 0, production.stderr
    assert "Demo data not loaded: DEBUG is off" in production.stdout
    assert not Message.objects.exists()

    development = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True)  # make's default
    assert development.returncode == 0, development.stderr
    assert Message.objects.filter(account__owner__is_superuser=True).exists()


def test_bootstrap_refuses_demo_and_no_demo_together() -> None:
    from django.core.management import CommandError

    with pytest.raises(CommandError):
        call_command("bootstrap", "--demo", "--no-demo", stdout=StringIO())


def _kill_tree(process: subprocess.Popen[str]) -> None:
    """Kill `serve` and everything it started (uvicorn, its workers, the cluster), not only `serve`."""
    import psutil

    try:
        children = psutil.Process(process.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        children = []
    for child in children:
        with contextlib.suppress(psutil.NoSuchProcess):
            child.kill()
    process.kill()


def _serve_until_healthy(*options: str, **env: str) -> subprocess.Popen[str]:
    """`manage.py serve` on a free port, once /api/health answers 200."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "manage.py", "serve", *options, "--port", str(port)],
        cwd=REPO_ROOT,
        env=subprocess_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_for_port(port, process=process)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=10) as response:
            assert response.status == 200
    except BaseException:
        _kill_tree(process)
        raise
    return process


@pytest.mark.django_db(transaction=True)
def test_serve_runs_the_web_server_and_the_cluster_and_stops_both_on_ctrl_c() -> None:
    process = _serve_until_healthy()
    try:
        time.sleep(1.5)  # let the cluster finish starting so both children are really up
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            _kill_tree(process)
    assert process.returncode == 0, output
    assert "Q Cluster" in output and "running" in output
    assert output.rstrip().endswith("stopped")


@pytest.mark.django_db(transaction=True)
def test_ctrl_c_with_a_worker_that_does_not_stop_leaves_no_process_behind() -> None:
    # A cluster worker that never reacts (stopped with SIGSTOP, as a worker stuck in a long task or one that
    # ignores signals): before, `serve` killed only the cluster's main process and its workers lived on.
    import psutil

    process = _serve_until_healthy(MAILAGENT_STOP_GRACE_SECONDS="3")
    try:
        started = psutil.Process(process.pid).children()
        deadline = time.monotonic() + 60
        workers: list[Any] = []
        while time.monotonic() < deadline:
            cluster = [child for child in started if "manage.py background" in " ".join(child.cmdline())]
            workers = cluster[0].children(recursive=True) if cluster else []
            if len(workers) >= 2:
                break
            time.sleep(0.2)
        assert len(workers) >= 2, "the cluster did not start its workers"
        stuck = workers[-1]
        stuck.suspend()
        everything = [*started, *(p for child in started for p in child.children(recursive=True))]
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            _kill_tree(process)
    assert process.returncode == 0, output
    assert "worker did not stop in 3s; killing it and the processes it started" in output
    assert output.rstrip().endswith("stopped")
    time.sleep(0.5)
    left = [p for p in everything if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert left == [], [p.cmdline() for p in left]


@pytest.mark.django_db(transaction=True)
def test_the_worker_command_stops_on_sigterm_within_the_grace_even_with_a_stuck_worker() -> None:
    # `manage.py qcluster` alone waits for a busy worker however long (a probe saw SIGTERM ignored for 35 min);
    # `manage.py worker`, what the Procfile and the systemd unit run, stops within MAILAGENT_STOP_GRACE_SECONDS.
    import psutil

    process = subprocess.Popen(
        [sys.executable, "manage.py", "worker"],
        cwd=REPO_ROOT,
        env=subprocess_env(MAILAGENT_STOP_GRACE_SECONDS="3"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 90
        workers: list[Any] = []
        cluster: list[Any] = []
        while time.monotonic() < deadline:
            cluster = [c for c in psutil.Process(process.pid).children() if "qcluster" in " ".join(c.cmdline())]
            workers = cluster[0].children(recursive=True) if cluster else []
            if len(workers) >= 2:
                break
            time.sleep(0.2)
        assert len(workers) >= 2, "the cluster did not start its workers"
        assert psutil.Process(process.pid).cmdline()[-2].endswith("supervisor.py")  # exec'd, same process id
        workers[-1].suspend()  # stuck in a long task: it will never take the stop pill
        everything = [*cluster, *workers]
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            _kill_tree(process)
    assert process.returncode == 0, output
    assert "mailagent worker started" in output
    assert "worker did not stop in 3s; killing it and the processes it started" in output
    assert output.rstrip().endswith("stopped")
    time.sleep(0.5)
    left = [p for p in everything if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert left == [], [p.cmdline() for p in left]


@pytest.mark.django_db(transaction=True)
def test_serve_with_two_web_processes_serves_from_two_processes_and_stops_them() -> None:
    import psutil

    process = _serve_until_healthy("--no-worker", "--web-processes", "2")
    try:
        supervisor = psutil.Process(process.pid).children()[0]  # serve → uvicorn's supervisor → its workers

        def spawned_workers() -> list[Any]:  # not multiprocessing's resource tracker, the other child
            return [child for child in supervisor.children() if "spawn_main" in " ".join(child.cmdline())]

        deadline = time.monotonic() + 60
        while len(spawned_workers()) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        workers = spawned_workers()
        assert len(workers) == 2
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:  # a failed assertion: kill the whole tree, not only `serve`
            _kill_tree(process)
    assert process.returncode == 0, output
    assert not any(worker.is_running() and worker.status() != psutil.STATUS_ZOMBIE for worker in workers)


def test_more_than_one_web_process_without_redis_is_warned_about(settings: Any) -> None:
    from mailagent.checks import check_web_processes

    settings.REDIS_URL = ""
    settings.WEB_PROCESSES = 2
    assert [message.id for message in check_web_processes()] == ["mailagent.W002"]
    settings.REDIS_URL = "redis://127.0.0.1:6379/0"
    assert check_web_processes() == []
