"""Typed live events pushed to a user's browsers over the channel layer (group ``user.<id>``).

Only ids and small payloads travel; pages render their own partials. With the in-memory layer (no
Redis) events sent from a qcluster process do not reach Daphne: pages also poll, so nothing is lost.
"""

from __future__ import annotations

import logging
from typing import Literal, TypedDict

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from mailagent.consumers import user_group

logger = logging.getLogger(__name__)


class SyncCompletedEvent(TypedDict):
    type: Literal["sync_completed"]
    account_id: int
    status: str
    created: int


def notify_user(user_id: int, event: SyncCompletedEvent) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(user_group(user_id), {"type": "notify", "event": dict(event)})
    except Exception:  # a push is best effort: the database state is the truth
        logger.warning("could not push %s to user %s", event["type"], user_id, exc_info=True)
