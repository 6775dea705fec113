from __future__ import annotations

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

from mailagent.signals import demo_data_requested
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


def test_bootstrap_asks_for_demo_data(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []

    def receiver(sender: Any, user: Any, stdout: Any, **kwargs: Any) -> None:
        calls.append(user)

    demo_data_requested.connect(receiver)
    try:
        monkeypatch.setattr("apps.accounts.demo.load_demo_on_empty_database", lambda *a, **k: None)
        call_command("bootstrap", stdout=StringIO())
    finally:
        demo_data_requested.disconnect(receiver)
    assert len(calls) == 1 and calls[0].is_superuser


@pytest.mark.django_db(transaction=True)
def test_serve_runs_the_web_server_and_the_cluster_and_stops_both_on_ctrl_c() -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(port)],
        cwd=REPO_ROOT,
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_for_port(port, timeout=60, process=process)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=10) as response:
            assert response.status == 200
        time.sleep(1.5)  # let the cluster finish starting so both children are really up
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, output
    assert "Q Cluster" in output and "running" in output
    assert output.rstrip().endswith("stopped")
