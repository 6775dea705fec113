"""Demo mailbox loaded by `make run` into an empty database."""

from __future__ import annotations

from typing import Any

from apps.accounts.models import Message


def load_demo_on_empty_database(sender: Any, *, user: Any, stdout: Any, **kwargs: Any) -> None:
    if Message.objects.exists():
        return
    from apps.accounts.demo_mailbox.importing import import_demo_mailbox

    import_demo_mailbox(owner=user, stdout=stdout)
