from __future__ import annotations

import datetime as dt
import itertools
import os
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from apps.accounts.actions import create_local_account
from apps.accounts.models import MailAccount, Message
from apps.accounts.providers.base import RemoteMessage
from apps.accounts.store import store_remote_messages
from apps.orchestration.actions import create_director
from apps.orchestration.models import Director
from apps.routing import actions as routing_actions
from apps.routing.models import Filter
from mailagent.server import web_server_command
from tests.fakes.dovecot import DovecotServer, Mailbox, dovecot_server, make_message
from tests.fakes.google_server import FakeGoogleServer
from tests.fakes.graph_server import FakeGraphServer
from tests.fakes.loopback_https import plain_http_for
from tests.services import free_port, redis_server, serve_web

USER_PASSWORD = "correct horse battery staple 42"


BROWSER_ONCE = (
    "browser tests run once per make test, in the SQLite pass: they check pages and their JavaScript in Chromium; "
    "the PostgreSQL pass runs the same views through the test client and the real web server without a browser"
)
# `make test` runs the two passes side by side on two cores; with this set (by the Makefile's test target) the
# browser test modules are shared between the passes, half each, so that neither pass waits for all of them.
BROWSER_SPLIT_ENV = "MAILAGENT_TEST_BROWSER_SPLIT"


def browser_pass(module_path: str) -> str:
    """The pass a browser test module runs in under `make test`: a stable hash of its path picks one."""
    return "postgresql" if zlib.crc32(module_path.encode()) % 2 else "sqlite"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    this_pass = "postgresql" if os.environ.get("MAILAGENT_TEST_POSTGRES") else "sqlite"
    split = bool(os.environ.get(BROWSER_SPLIT_ENV))
    if this_pass == "sqlite" and not split:
        return
    for item in items:
        if item.get_closest_marker("browser") is None:
            continue
        if not split:
            item.add_marker(pytest.mark.skip(reason=BROWSER_ONCE))
            continue
        module = item.nodeid.split("::", 1)[0]
        chosen = browser_pass(module)
        if chosen != this_pass:
            item.add_marker(
                pytest.mark.skip(reason=f"make test runs this browser test module once, in the {chosen} pass")
            )


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    """Rate-limit counters and other cached state never leak from one test into the next."""
    from django.core.cache import cache

    cache.clear()
    yield


@pytest.fixture(autouse=True)
def _own_library_folders(tmp_path_factory: pytest.TempPathFactory, settings: Any, monkeypatch: Any) -> None:
    """Each test's libraries live in a folder of its own (user ids repeat across rolled-back tests on SQLite),
    also for the processes a test starts (the environment variable)."""
    folder = tmp_path_factory.mktemp("libraries")
    settings.ORGANIZATION_LIBRARY_DIR = folder
    monkeypatch.setenv("MAILAGENT_LIBRARY_DIR", str(folder))


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


@pytest.fixture
async def close_sync_thread_connections() -> Any:
    """Async tests reach the database through one long-lived sync thread (database_sync_to_async); its
    connection would outlive the test and, on SQLite, break the WAL for the next process that opens the
    file (a "disk I/O error" for later tests). Close it when the test ends."""
    yield
    from asgiref.sync import sync_to_async
    from django.db import connections

    await sync_to_async(connections.close_all, thread_sensitive=True)()


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    with redis_server() as url:
        yield url


@pytest.fixture
def asgi_server(transactional_db: Any) -> Iterator[str]:
    """The real production web server (the command `manage.py serve` runs) in a subprocess on the test database."""
    port = free_port()
    yield from serve_web(web_server_command(host="127.0.0.1", port=port), port)


def _serve_fake(server: Any, settings: Any) -> Iterator[Any]:
    """Start a fake provider and point the settings at it for one test (its OAuth endpoints are advertised
    as https and reached as plain http: tests/fakes/loopback_https.py)."""
    server.start()
    for name, value in server.settings().items():
        setattr(settings, name, value)
    try:
        with plain_http_for(server.port):
            yield server
    finally:
        server.stop()


@pytest.fixture
def graph(settings: Any) -> Iterator[FakeGraphServer]:
    """A fake Microsoft identity platform + Graph on loopback (tests/fakes/graph_server.py)."""
    yield from _serve_fake(FakeGraphServer(), settings)


@pytest.fixture
def google(settings: Any) -> Iterator[FakeGoogleServer]:
    """A fake Google OAuth + Gmail/Calendar/Tasks on loopback; modules may override it (page sizes)."""
    yield from _serve_fake(FakeGoogleServer(), settings)


@pytest.fixture(scope="session")
def dovecot() -> Iterator[DovecotServer]:
    """One real Dovecot for the session; every test takes its own user (see `imap_mailbox`)."""
    with dovecot_server() as server:
        yield server


@pytest.fixture
def imap_mailbox(dovecot: DovecotServer) -> Mailbox:
    return dovecot.add_user()


_numbers = itertools.count(1)


@pytest.fixture
def account(user: Any) -> MailAccount:
    return create_local_account(owner=user, name="inbox", address="owner@example.com")


@pytest.fixture
def director(user: Any) -> Callable[..., Director]:
    def make(name: str, **kwargs: Any) -> Director:
        return create_director(owner=user, name=name, **kwargs)

    return make


@pytest.fixture
def add_filter() -> Callable[..., Filter]:
    def make(director: Director, field: str, pattern: str, **kwargs: Any) -> Filter:
        item = routing_actions.create_filter(director=director, field_name=field, regex_text=pattern, **kwargs)
        # Filters only route mail newer than themselves; tests store mail "now", so backdate the filter.
        Filter.objects.filter(pk=item.pk).update(created_at=item.created_at - dt.timedelta(days=365))
        item.refresh_from_db()
        return item

    return make


StoreMail = Callable[..., Message]


@pytest.fixture
def store_mail(account: MailAccount, django_capture_on_commit_callbacks: Any) -> StoreMail:
    """Store one RFC 822 message through the real ingest path; the on-commit hooks (index, route) run."""

    def store(
        *,
        subject: str = "Hello",
        body: str = "Hello.\n",
        sender: str = "Alice Example <alice@example.com>",
        to: str = "Owner <owner@example.com>",
        cc: str | None = None,
        bcc: str | None = None,
        date: dt.datetime | None = None,
        target: MailAccount | None = None,
    ) -> Message:
        number = next(_numbers)
        raw = make_message(
            subject=subject,
            body=body,
            sender=sender,
            to=to,
            message_id=f"<route-{number}@example.com>",
            date=date or dt.datetime.now(dt.UTC),
        )
        if cc or bcc:
            head, _, rest = raw.partition(b"\r\n")
            extra = b"".join(f"{name}: {value}\r\n".encode() for name, value in (("Cc", cc), ("Bcc", bcc)) if value)
            raw = head + b"\r\n" + extra + rest
        with django_capture_on_commit_callbacks(execute=True):
            result = store_remote_messages(
                account=target or account,
                messages=[RemoteMessage(provider_id=f"route:{number}", raw=raw, folder="INBOX")],
            )
        assert result.created == 1, result
        return Message.objects.get(pk=result.created_ids[0])

    return store


@pytest.fixture
def chromium(monkeypatch: Any) -> Iterator[Any]:
    """A headless Debian Chromium for `browser` tests (see tests/browser.py for login/screenshot helpers)."""
    # Playwright's sync API keeps an event loop in this thread; the test's own ORM calls run between its
    # blocking calls, never concurrently, so Django's async-context guard does not apply here.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from tests.browser import launch_chromium

    with launch_chromium() as browser:
        yield browser


@pytest.fixture
def browser_page(chromium: Any) -> Any:
    """A fresh page in the `chromium` browser."""
    return chromium.new_page()
