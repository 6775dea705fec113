"""Inbox benchmark: /api/inbox/history latency over 10,000 entries and inbox_push through the real MCP client.

    .venv/bin/python bench/inbox.py [--entries 10000] [--requests 200] [--pushes 300] [--server production|daphne]

A fresh SQLite database in a temp dir. History is requested through the real URLconf (Django's test client,
logged in): the first page and a deep page (the cursor of the entry ~90% down), limit 50, p50/p95 in ms.
inbox_push is called with the official `mcp` SDK client over streamable HTTP against a real web server
subprocess on 127.0.0.1 (the production command, or Daphne): sequentially from one client, then from
4 concurrent clients; each push points at one live workspace item and carries a short comment.
Prints numbers, asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def setup_django(workdir: Path) -> None:
    os.environ["DATA_DIR"] = str(workdir / "data")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mailagent.settings")
    os.environ.setdefault("VX_MAILAGENT_KEY", "5a" * 32)
    os.environ["SECURE_SSL_REDIRECT"] = "0"
    os.environ.pop("DATABASE_URL", None)
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def make_entries(workspace: Any, count: int) -> None:
    from apps.workspaces.models import InboxEntry

    start = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(days=30)
    batch = [
        InboxEntry(
            owner_id=workspace.owner_id,
            workspace=workspace,
            workspace_label=workspace.display_label,
            docs=[{"path": "reports/summary.md"}] if n % 3 == 0 else [],
            comments=f"Status check-in {n}: everything on track.",
            # Groups of five share a millisecond, so the cursor's id tie-break is exercised.
            created=start + dt.timedelta(milliseconds=(n // 5) * 250),
            read_at=None if n % 4 else start,
        )
        for n in range(count)
    ]
    InboxEntry.objects.bulk_create(batch, batch_size=1000)


def time_history(client: Any, params: dict[str, Any], requests: int) -> list[float]:
    timings = []
    for _ in range(requests):
        started = time.perf_counter()
        response = client.get("/api/inbox/history", params)
        timings.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.content[:300]
    return timings


def start_server(kind: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    from mailagent.server import web_server_command

    if kind == "daphne":
        command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "mailagent.asgi:application"]
    else:
        command = web_server_command(host="127.0.0.1", port=port)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(command, cwd=REPO, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)


async def push_many(base_url: str, workspace_id: int, token: str, count: int, clients: int) -> float:
    from tests.workspaces.mcp_client import workspace_client

    async def one_client(share: int) -> None:
        async with workspace_client(base_url, workspace_id, token) as client:
            for n in range(share):
                result = await client.call_tool(
                    "inbox_push", {"docs": [{"path": "reports/summary.md"}], "comments": f"bench push {n}"}
                )
                if result.is_error:
                    raise RuntimeError(str(result.content))

    started = time.perf_counter()
    await asyncio.gather(*(one_client(count // clients) for _ in range(clients)))
    return (count // clients) * clients / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--pushes", type=int, default=300)
    parser.add_argument("--server", choices=["production", "daphne"], default="production")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="bench-inbox-"))
    setup_django(workdir)
    from django.contrib.auth import get_user_model
    from django.test import Client

    from apps.workspaces import actions, selectors
    from tests.services import free_port, wait_for_port

    user = get_user_model().objects.create_user(username="bench", email="bench@example.com", password="x" * 20)
    workspace = actions.create_user_workspace(owner=user, label="Bench desk")
    actions.add_item(workspace=workspace, data="# Summary\n", mime_type="text/markdown", path="reports/summary.md")
    make_entries(workspace, args.entries)
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)

    deep = selectors.inbox_history(user=user, limit=int(args.entries * 0.9))[-1]
    first = time_history(client, {"limit": 50}, args.requests)
    deep_page = time_history(client, {"limit": 50, "before": selectors.entry_cursor(deep)}, args.requests)
    print(f"inbox entries: {args.entries}  ({args.requests} requests each, limit 50, SQLite)")
    for name, timings in (("first page", first), ("deep page (~90%)", deep_page)):
        print(
            f"/api/inbox/history {name:17s} p50 {statistics.median(timings):6.2f} ms"
            f"   p95 {percentile(timings, 0.95):6.2f} ms"
        )

    _token, raw = actions.issue_token(workspace=workspace, name="bench")
    port = free_port()
    log = workdir / "server.log"
    server = start_server(args.server, port, log)
    try:
        wait_for_port(port, timeout=60, process=server)
        base = f"http://127.0.0.1:{port}"
        asyncio.run(push_many(base, workspace.pk, raw, 10, 1))  # warm-up: imports, first connection
        sequential = asyncio.run(push_many(base, workspace.pk, raw, args.pushes, 1))
        concurrent = asyncio.run(push_many(base, workspace.pk, raw, args.pushes, 4))
    finally:
        server.terminate()
        server.wait(timeout=10)
    print(f"inbox_push via the mcp SDK client ({args.server} server, stateless streamable HTTP):")
    print(f"  1 client:  {sequential:7.1f} calls/s")
    print(f"  4 clients: {concurrent:7.1f} calls/s")


if __name__ == "__main__":
    main()
