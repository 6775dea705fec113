"""The real `mcp` SDK client (streamable HTTP) against a workspace endpoint, for tests and bench/inbox.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


@asynccontextmanager
async def workspace_client(base_url: str, workspace_id: int, token: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        transport = streamable_http_client(f"{base_url}/mcp/{workspace_id}/", http_client=http)
        async with Client(transport) as client:
            yield client


def tool_text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)
