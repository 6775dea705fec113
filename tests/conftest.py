from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from tests.fakes.dovecot import DovecotServer, Mailbox, dovecot_server
from tests.services import REPO_ROOT, free_port, redis_server, subprocess_env, wait_for_port

USER_PASSWORD = "correct horse battery staple 42"


@pytest.fixture
def user(db: Any) -> Any:
    from allauth.account.models import EmailAddress

    created = get_user_model().objects.create_user(username="owner", email="owner@example.com", password=USER_PASSWORD)
    EmailAddress.objects.create(user=created, email=created.email, primary=True, verified=True)
    return created


@pytest.fixture
def staff_user(db: Any) -> Any:
    return get_user_model().objects.create_user(
        username="staff", email="staff@example.com", password=USER_PASSWORD, is_staff=True, is_superuser=True
    )


@pytest.fixture
def logged_in_client(client: Any, user: Any) -> Any:
    client.force_login(user)
    return client


@pytest.fixture
def staff_client(client: Any, staff_user: Any) -> Any:
    client.force_login(staff_user)
    return client


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    with redis_server() as url:
        yield url


@pytest.fixture
def asgi_server(transactional_db: Any) -> Iterator[str]:
    """The real production server (Daphne) in a subprocess on the test database."""
    port = free_port()
    log = tempfile.NamedTemporaryFile(prefix="daphne-", suffix=".log", delete=False)  # noqa: SIM115
    process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "mailagent.asgi:application"],
        cwd=REPO_ROOT,
        env=subprocess_env(),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        try:
            wait_for_port(port, timeout=30, process=process)
        except (RuntimeError, TimeoutError):
            raise RuntimeError("Daphne did not start:\n" + Path(log.name).read_text()) from None
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(scope="session")
def dovecot() -> Iterator[DovecotServer]:
    """One real Dovecot for the session; every test takes its own user (see `imap_mailbox`)."""
    with dovecot_server() as server:
        yield server


@pytest.fixture
def imap_mailbox(dovecot: DovecotServer) -> Mailbox:
    return dovecot.add_user()
