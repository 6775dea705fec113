"""How Inbox replies reach a run without workspaces importing orchestration (DESIGN: imports point down).

Orchestration registers a listener in its AppConfig.ready(); `announce_reply` calls every listener on
commit of the reply, with the entry id, run id and text only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db import transaction

if TYPE_CHECKING:
    from apps.workspaces.models import InboxEntry

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class InboxReply:
    entry_id: str
    run_id: int | None
    workspace_id: int
    text: str


ReplyListener = Callable[[InboxReply], None]
_listeners: list[ReplyListener] = []


def on_reply(listener: ReplyListener) -> None:
    if listener not in _listeners:
        _listeners.append(listener)


def announce_reply(entry: InboxEntry) -> None:
    reply = InboxReply(entry_id=str(entry.pk), run_id=entry.run_id, workspace_id=entry.workspace_id, text=entry.reply)

    def deliver() -> None:
        for listener in list(_listeners):
            listener(reply)

    transaction.on_commit(deliver)
