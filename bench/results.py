"""Results page benchmark: the tree selector, the rendered page and the notifications poll on a busy account.

    .venv/bin/python bench/results.py [--emails 2000] [--repeat 20]

A fresh SQLite database in a temp dir: one user, `--emails` messages, each processed by two directors, each
run with three workspace items (~2 KB of markdown each). Prints the median and p95 of the tree selector
(no filter, a search, a tag filter), of GET /results/ through the real URLconf and middleware, of a run pane,
and of GET /results/events/ (what every open tab polls every 5 s without Redis). Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
HX = {"HX-Request": "true"}


def setup_django(workdir: Path) -> None:
    os.environ["DATA_DIR"] = str(workdir / "data")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mailagent.settings")
    os.environ.setdefault("VX_MAILAGENT_KEY", "5a" * 32)
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def populate(emails: int) -> Any:
    import datetime as dt

    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from apps.accounts.actions import create_local_account
    from apps.accounts.models import Message
    from apps.orchestration.models import Director, Run
    from apps.workspaces.models import Workspace, WorkspaceItem

    user = get_user_model().objects.create_user(username="bench", email="bench@example.com", password="x" * 16)
    account = create_local_account(owner=user, name="bench", address="bench@example.com")
    directors = [Director.objects.create(owner=user, name=name) for name in ("Clients", "Bookkeeping")]
    now = timezone.now()
    messages = Message.objects.bulk_create(
        Message(
            account=account,
            provider_id=f"b:{n}",
            dedupe_key=f"b-{n}",
            subject=f"Invoice {n} for the quarter",
            from_name="Client",
            from_address=f"client{n % 50}@example.com",
            body_text="Hello,\n\nplease find the invoice attached.\n" * 20,
            date=now - dt.timedelta(minutes=n),
        )
        for n in range(emails)
    )
    runs = Run.objects.bulk_create(
        Run(
            message=message,
            director=director,
            status="completed",
            created_at=now - dt.timedelta(minutes=n, seconds=k),
            finished_at=now - dt.timedelta(minutes=n),
        )
        for n, message in enumerate(messages)
        for k, director in enumerate(directors)
    )
    workspaces = Workspace.objects.bulk_create(
        Workspace(owner=user, run_id=run.pk, message_id=run.message_id, director_name="d", title="t") for run in runs
    )
    body = "## Summary\n\n" + "The client asks about the invoice. " * 60
    WorkspaceItem.objects.bulk_create(
        (
            WorkspaceItem(
                workspace=workspace,
                label=f"item {k}",
                mime_type="text/markdown",
                data=body,
                tags=["finance"] if k == 0 else [],
            )
            for workspace in workspaces
            for k in range(3)
        ),
        batch_size=2000,
    )
    return user, runs[0]


def measure(name: str, repeat: int, call: Callable[[], Any]) -> None:
    call()  # warm
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    p95 = samples[min(len(samples) - 1, int(len(samples) * 0.95))]
    print(f"{name:<44} median {statistics.median(samples):7.1f} ms   p95 {p95:7.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--emails", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        setup_django(Path(tmp))
        from django.test import Client

        from apps.results import selectors
        from apps.results.selectors import ResultFilters

        started = time.perf_counter()
        user, run = populate(args.emails)
        setup_s = time.perf_counter() - started
        print(f"{args.emails} emails, {2 * args.emails} runs, {6 * args.emails} items (setup {setup_s:.1f} s)")
        client = Client(HTTP_HOST="localhost")
        client.force_login(user)

        def get(url: str, **headers: str) -> Any:
            response = client.get(url, headers=headers, secure=True)  # production redirects plain http
            assert response.status_code == 200, (url, response.status_code)
            return response

        since = str(int(time.time() * 1000) - 60_000)
        measure(
            "tree selector, no filter", args.repeat, lambda: selectors.results_tree(user=user, filters=ResultFilters())
        )
        measure(
            "tree selector, search 'invoice 1'",
            args.repeat,
            lambda: selectors.results_tree(user=user, filters=ResultFilters(q="invoice 1")),
        )
        measure(
            "tree selector, tag filter",
            args.repeat,
            lambda: selectors.results_tree(user=user, filters=ResultFilters(tag="finance")),
        )
        first = selectors.results_tree(user=user, filters=ResultFilters())
        second = selectors.results_tree(
            user=user, filters=ResultFilters(), before=selectors.TreeCursor.parse(first.next_cursor)
        )
        older = selectors.TreeCursor.parse(second.next_cursor)
        deep = selectors.TreeCursor.parse(
            selectors.results_tree(user=user, filters=ResultFilters(), emails=600).emails[-1].cursor
        )
        measure(
            "tree selector, page 3 (before a cursor)",
            args.repeat,
            lambda: selectors.results_tree(user=user, filters=ResultFilters(), before=older),
        )
        measure(
            "tree selector, tag filter, page 3",
            args.repeat,
            lambda: selectors.results_tree(user=user, filters=ResultFilters(tag="finance"), before=older),
        )
        measure(
            "tree selector, refresh keeping 600 loaded emails",
            args.repeat,
            lambda: selectors.results_tree(user=user, filters=ResultFilters(), through=deep),
        )
        measure("GET /results/ (page, 50 emails)", args.repeat, lambda: get("/results/"))
        measure(
            "GET /results/tree/?before= (Show older emails)",
            args.repeat,
            lambda: get(f"/results/tree/?before={second.next_cursor}", **HX),
        )
        measure("GET /results/tree/", args.repeat, lambda: get("/results/tree/", **HX))
        measure(
            "GET /results/runs/<id>/ (pane)",
            args.repeat,
            lambda: get(f"/results/runs/{run.pk}/", **HX),
        )
        measure(
            "GET /results/events/?since= (poll)",
            args.repeat,
            lambda: client.get(f"/results/events/?since={since}", secure=True),
        )


if __name__ == "__main__":
    main()
