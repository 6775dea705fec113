"""Inbox changes pushed to the owner's browsers over the channel layer (group ``user.<id>``).

Only the kind and the entry id travel; the Inbox page re-renders its own partials. Without Redis an
event sent from a qcluster process never reaches the web process, so the page also polls every 20 s.
"""

from __future__ import annotations

import logging
from typing import Literal, TypedDict

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from mailagent.consumers import user_group

logger = logging.getLogger(__name__)

InboxEventKind = Literal["inbox_entry", "inbox_read", "inbox_deleted"]


class InboxEvent(TypedDict):
    type: InboxEventKind
    entry_id: str


def push_inbox_event(owner_id: int, kind: InboxEventKind, entry_id: str) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    event: InboxEvent = {"type": kind, "entry_id": entry_id}
    try:
        async_to_sync(layer.group_send)(user_group(owner_id), {"type": "notify", "event": dict(event)})
    except Exception:  # best effort: the database is the truth and the page polls
        logger.warning("could not push %s to user %s", kind, owner_id, exc_info=True)
