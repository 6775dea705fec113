from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Callable
from typing import Any

import pytest

from apps.accounts.actions import create_local_account
from apps.accounts.models import MailAccount, Message
from apps.accounts.providers.base import RemoteMessage
from apps.accounts.store import store_remote_messages
from apps.orchestration.actions import create_director
from apps.orchestration.models import Director
from apps.routing import actions
from apps.routing.models import Filter
from tests.fakes.dovecot import make_message

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
        item = actions.create_filter(director=director, field_name=field, regex_text=pattern, **kwargs)
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
