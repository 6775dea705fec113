from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from apps.accounts.actions import create_local_account
from apps.accounts.models import Message
from apps.accounts.providers.base import RemoteMessage
from apps.accounts.store import store_remote_messages
from apps.orchestration.actions import RunRequest, create_director, create_runs, finish_run
from apps.orchestration.models import Director, Run, RunStatus
from apps.workspaces.actions import add_item, open_workspace
from apps.workspaces.models import WorkspaceItem
from tests.fakes.dovecot import make_message

_numbers = itertools.count(1)


@dataclass
class Result:
    message: Message
    run: Run
    items: list[WorkspaceItem] = field(default_factory=list)


MakeResult = Callable[..., Result]


def store_message(owner: Any, *, subject: str, body: str = "Hello.\n", account: Any = None) -> Message:
    account = account or create_local_account(owner=owner, name=f"box {next(_numbers)}", address="o@example.com")
    number = next(_numbers)
    raw = make_message(
        subject=subject,
        body=body,
        sender="Client Example <client@example.com>",
        to="Owner <owner@example.com>",
        message_id=f"<results-{number}@example.com>",
        date=dt.datetime.now(dt.UTC),
    )
    stored = store_remote_messages(
        account=account, messages=[RemoteMessage(provider_id=f"results:{number}", raw=raw, folder="INBOX")]
    )
    return Message.objects.get(pk=stored.created_ids[0])


def make_run(
    owner: Any,
    *,
    message: Message,
    director: Director,
    status: str = RunStatus.COMPLETED,
    items: list[dict[str, Any]] | None = None,
) -> Result:
    (run_id,) = create_runs(requests=[RunRequest(message_id=message.pk, director_id=director.pk)], fetch_cycle_id=None)
    run = Run.objects.get(pk=run_id)
    if status != RunStatus.QUEUED:
        finish_run(run=run, status=status, error="model call failed (timeout)" if status == "failed" else "")
    workspace = open_workspace(
        owner=owner,
        run_id=run.pk,
        message_id=message.pk,
        director_id=director.pk,
        director_name=director.name,
        title=message.subject,
    )
    made = [
        add_item(
            workspace=workspace,
            context={"director": {"id": str(director.pk), "name": director.name}},
            **{"label": f"item {index}", "data": f"text {index}", **spec},
        )
        for index, spec in enumerate(items or [])
    ]
    return Result(message=message, run=run, items=made)


@pytest.fixture
def make_result(user: Any) -> MakeResult:
    """One email processed by one director (created on first use), with the given workspace items."""
    directors: dict[str, Director] = {}

    def make(
        *,
        subject: str = "Invoice 42",
        director: str = "Clients",
        status: str = RunStatus.COMPLETED,
        items: list[dict[str, Any]] | None = None,
        message: Message | None = None,
        owner: Any = None,
    ) -> Result:
        who = owner or user
        key = f"{who.pk}:{director}"
        if key not in directors:
            directors[key] = create_director(owner=who, name=director)
        mail = message or store_message(who, subject=subject)
        return make_run(who, message=mail, director=directors[key], status=status, items=items)

    return make
