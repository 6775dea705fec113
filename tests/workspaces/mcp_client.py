"""The real `mcp` SDK client (streamable HTTP) against a workspace or the mailbox endpoint, for tests and
bench/inbox.py, bench/mcp.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


@asynccontextmanager
async def endpoint_client(url: str, token: str | None, timeout: float = 30) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport) as client:
            yield client


@asynccontextmanager
async def workspace_client(base_url: str, workspace_id: int, token: str | None) -> AsyncIterator[Client]:
    async with endpoint_client(f"{base_url}/mcp/{workspace_id}/", token) as client:
        yield client


@asynccontextmanager
async def mailbox_client(base_url: str, token: str | None, timeout: float = 60) -> AsyncIterator[Client]:
    async with endpoint_client(f"{base_url}/mcp/mailbox/", token, timeout) as client:
        yield client


def tool_text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)
