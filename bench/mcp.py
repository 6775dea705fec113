"""MCP benchmark: calls/s and p95 of the mailbox endpoint's search_mail and read_thread, and of the workspace
endpoint's inbox_push, with 1 and 8 concurrent clients of the official `mcp` SDK (streamable HTTP), side by
side with the same searches through the REST API (GET /api/search, a logged-in session).

    .venv/bin/python bench/mcp.py [--calls 200] [--server production|daphne]

A fresh SQLite database in a temp dir with the demo mailbox (indexed, embeddings included), a real web server
subprocess on 127.0.0.1. Each measurement makes --calls calls split over the clients, after a warm-up; the
queries cycle through a fixed list (words, an operator query, a phrase). Prints numbers, asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import itertools
import logging
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

# Run as a script, this file's directory comes first on sys.path and this file would shadow the `mcp` SDK.
HERE = Path(__file__).resolve().parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))

from bench.inbox import percentile, setup_django, start_server  # noqa: E402

QUERIES = ["invoice", "meeting tomorrow", "from:demo is:unread", '"project update"', "budget report", "travel"]


async def measure(
    clients: int, calls: int, make: Callable[[], Any], one: Callable[[Any, int], Awaitable[None]]
) -> tuple[float, float]:
    """(calls/s, p95 ms) of `calls` calls split over `clients` concurrent clients made by `make`."""
    timings: list[float] = []
    share = max(1, calls // clients)

    async def client_loop(offset: int) -> None:
        async with make() as client:
            for n in range(share):
                started = time.perf_counter()
                await one(client, offset * share + n)
                timings.append((time.perf_counter() - started) * 1000)

    started = time.perf_counter()
    await asyncio.gather(*(client_loop(c) for c in range(clients)))
    return len(timings) / (time.perf_counter() - started), percentile(timings, 0.95)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--server", choices=["production", "daphne"], default="production")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    setup_django(workdir)
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # one INFO line per request otherwise
    import httpx2
    from django.contrib.auth import get_user_model
    from django.test import Client

    from apps.accounts.demo_mailbox.importing import import_demo_mailbox
    from apps.accounts.models import Thread
    from apps.search.actions import reindex_all
    from apps.workspaces import actions
    from tests.services import free_port, wait_for_port
    from tests.workspaces.mcp_client import mailbox_client, workspace_client

    user = get_user_model().objects.create_user(username="bench", email="bench@example.com", password="x" * 20)
    import_demo_mailbox(owner=user, stdout=io.StringIO())
    reindex_all()
    thread_ids = list(Thread.objects.filter(account__owner=user).values_list("pk", flat=True)[:200])
    _mb, mailbox_token = actions.issue_mailbox_token(owner=user, name="bench", scopes="read", calls_per_minute=6000)
    workspace = actions.create_user_workspace(owner=user, label="Bench desk")
    actions.add_item(workspace=workspace, data="# Summary\n", mime_type="text/markdown", path="reports/summary.md")
    _ws, workspace_token = actions.issue_token(workspace=workspace, name="bench")
    browser = Client(HTTP_HOST="127.0.0.1")
    browser.force_login(user)
    session = browser.cookies["sessionid"].value
    print(f"demo mailbox: {len(thread_ids)} threads sampled; {args.calls} calls per measurement; SQLite")

    port = free_port()
    server = start_server(args.server, port, workdir / "server.log")
    base = f"http://127.0.0.1:{port}"
    queries = itertools.cycle(QUERIES)

    async def search_mail(client: Any, n: int) -> None:
        result = await client.call_tool("search_mail", {"query": next(queries), "limit": 10})
        if result.is_error:
            raise RuntimeError(str(result.content))

    async def read_thread(client: Any, n: int) -> None:
        result = await client.call_tool("read_thread", {"thread_id": thread_ids[n % len(thread_ids)]})
        if result.is_error:
            raise RuntimeError(str(result.content))

    async def push(client: Any, n: int) -> None:
        result = await client.call_tool("inbox_push", {"docs": [{"path": "reports/summary.md"}], "comments": f"{n}"})
        if result.is_error:
            raise RuntimeError(str(result.content))

    async def rest_search(client: Any, n: int) -> None:
        response = await client.get(f"{base}/api/search", params={"q": next(queries), "limit": 10})
        response.raise_for_status()

    def rest_client() -> Any:
        return httpx2.AsyncClient(cookies={"sessionid": session}, timeout=60)

    rows: list[tuple[str, int, float, float]] = []
    try:
        wait_for_port(port, timeout=60, process=server)
        work: list[tuple[str, Callable[[], Any], Callable[[Any, int], Awaitable[None]]]] = [
            ("REST /api/search", rest_client, rest_search),
            ("MCP search_mail", lambda: mailbox_client(base, mailbox_token), search_mail),
            ("MCP read_thread", lambda: mailbox_client(base, mailbox_token), read_thread),
            ("MCP inbox_push", lambda: workspace_client(base, workspace.pk, workspace_token), push),
        ]
        for name, make, one in work:
            asyncio.run(measure(1, 10, make, one))  # warm-up: imports, models, first connection
            for clients in (1, 8):
                rate, p95 = asyncio.run(measure(clients, args.calls, make, one))
                rows.append((name, clients, rate, p95))
    finally:
        server.terminate()
        server.wait(timeout=10)
    print(f"{args.server} server, stateless streamable HTTP for MCP:")
    for name, clients, rate, p95 in rows:
        print(f"  {name:18s} {clients} client{'s' if clients > 1 else ' '}  {rate:7.1f} calls/s   p95 {p95:7.1f} ms")


if __name__ == "__main__":
    main()
