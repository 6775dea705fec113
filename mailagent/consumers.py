"""Per-user live notifications over a websocket.

Background work (sync, director runs) finishes in qcluster processes; with Redis configured it reaches
the browser through the channel layer group ``user.<id>``. Events carry ids and small payloads.
"""

from __future__ import annotations

from typing import Any

from channels.generic.websocket import AsyncJsonWebsocketConsumer


def user_group(user_id: int) -> str:
    return f"user.{user_id}"


class NotificationsConsumer(AsyncJsonWebsocketConsumer):
    group_name: str = ""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        self.group_name = user_group(user.pk)
        await self.channel_layer.group_add(self.group_name, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if self.group_name:
            await self.channel_layer.group_discard(self.group_name, self.channel_name)

    async def notify(self, event: dict[str, Any]) -> None:
        """Handler for `{"type": "notify", "event": {...}}` messages sent to the user's group."""
        await self.send_json(event["event"])


class UnknownPathConsumer(AsyncJsonWebsocketConsumer):
    """Websocket paths that match no route: the handshake is refused (403) instead of the router raising
    "No route found" (a server error)."""

    async def connect(self) -> None:
        await self.close()
