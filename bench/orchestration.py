"""Orchestration benchmark: director runs against a zero-latency local model, 3 tool calls per run.

    .venv/bin/python bench/orchestration.py [--runs 200] [--workers 2]

The model is the project's scripted OpenAI-compatible server on loopback, answering instantly: three
tool-calling turns (workspace_add_item, memory_search, workspace_list_items), then a final answer. The
overhead per run is wall time minus the time spent waiting for model responses (the client-measured
latency of every call, which includes loopback HTTP). Then the same number of runs on `--workers` threads
for runs/s. A fresh SQLite database in a temp dir; prints numbers, asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def setup_django(workdir: Path) -> None:
    os.environ["DATA_DIR"] = str(workdir / "data")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mailagent.settings")
    os.environ.setdefault("VX_MAILAGENT_KEY", "5a" * 32)
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    import logging

    from django.core.management import call_command

    logging.getLogger("httpx2").setLevel(logging.WARNING)  # one INFO line per model call drowns the numbers

    call_command("migrate", verbosity=0)


def make_server() -> Any:
    from tests.fakes.openai_server import FakeOpenAI, Reply

    steps = [
        ("workspace_add_item", {"label": "Summary", "mimeType": "text/markdown", "data": "**ok**", "tags": ["b"]}),
        ("memory_search", {"query": "client"}),
        ("workspace_list_items", {}),
    ]

    class ThreeStepModel(FakeOpenAI):
        def _next_reply(self, body: dict[str, Any]) -> Reply:
            done = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
            if done < len(steps):
                return Reply.calls(steps[done])
            return Reply.text("done")

    return ThreeStepModel().start()


def create_runs(count: int, api_config: Any, director: Any, account: Any, offset: int) -> list[int]:
    from apps.accounts.models import Message
    from apps.orchestration.models import Run

    messages = Message.objects.bulk_create(
        [
            Message(
                account=account,
                provider_id=f"bench:{offset + n}",
                dedupe_key=f"bench:{offset + n}",
                subject=f"Order {offset + n} is late",
                from_address=f"client{n}@domain.com",
                body_text="Where is my order? " * 20,
            )
            for n in range(count)
        ]
    )
    runs = Run.objects.bulk_create([Run(message=m, director=director) for m in messages])
    return [r.pk for r in runs]


def model_seconds(run_ids: list[int]) -> float:
    from django.db.models import Sum

    from apps.orchestration.models import ProviderEvent

    total = ProviderEvent.objects.filter(run_id__in=run_ids, kind="response").aggregate(s=Sum("latency_ms"))["s"]
    return (total or 0) / 1000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mailagent-orch-bench-") as tmp:
        setup_django(Path(tmp))
        from django.contrib.auth import get_user_model
        from django.db import close_old_connections

        from apps.accounts.actions import create_local_account
        from apps.llm.models import ApiConfig
        from apps.orchestration.actions import process_run
        from apps.orchestration.models import Director, Run

        server = make_server()
        owner = get_user_model().objects.create_user(username="bench", email="bench@example.com")
        account = create_local_account(owner=owner, name="bench")
        api_config = ApiConfig.objects.create(
            owner=owner, name="zero", base_url=server.base_url, api_key="k", model="zero", max_concurrency=8
        )
        director = Director.objects.create(owner=owner, name="Bench", api_config=api_config)

        # Warm-up (imports, client pool) outside the measurement.
        for run_id in create_runs(5, api_config, director, account, offset=10_000_000):
            process_run(run_id=run_id)

        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        probe = create_runs(1, api_config, director, account, offset=20_000_000)[0]  # its setup is not the run's
        with CaptureQueriesContext(connection) as captured:
            process_run(run_id=probe)
        statements = [q["sql"] for q in captured.captured_queries]
        # Outside a transaction every write is its own implicit commit (SQLite autocommit).
        writes_alone, depth = 0, 0
        for sql in statements:
            head = sql.lstrip().split(" ", 1)[0].upper()
            if head in ("BEGIN", "SAVEPOINT"):
                depth += 1
            elif head in ("COMMIT", "RELEASE", "ROLLBACK"):
                depth = max(0, depth - 1)
            elif head in ("INSERT", "UPDATE", "DELETE") and depth == 0:
                writes_alone += 1
        commits = writes_alone + sum(1 for sql in statements if sql.strip().upper() == "COMMIT")
        print(f"per run: {len(statements)} SQL statements, {commits} commits (load-independent)")

        run_ids = create_runs(args.runs, api_config, director, account, offset=0)
        per_run: list[float] = []
        started = time.perf_counter()
        for run_id in run_ids:
            t0 = time.perf_counter()
            process_run(run_id=run_id)
            per_run.append(time.perf_counter() - t0)
        wall = time.perf_counter() - started
        model = model_seconds(run_ids)
        completed = Run.objects.filter(pk__in=run_ids, status="completed").count()
        overhead_ms = (wall - model) / len(run_ids) * 1000
        print(f"{len(run_ids)} runs sequentially: {completed} completed, 4 model calls and 3 tool calls each")
        print(f"wall {wall:.2f}s, model wait {model:.2f}s, run p50 {statistics.median(per_run) * 1000:.1f} ms")
        print(f"overhead {overhead_ms:.1f} ms/run")

        parallel_ids = create_runs(args.runs, api_config, director, account, offset=1_000_000)
        chunks = [parallel_ids[i :: args.workers] for i in range(args.workers)]

        def work(ids: list[int]) -> None:
            try:
                for run_id in ids:
                    process_run(run_id=run_id)
            finally:
                close_old_connections()

        started = time.perf_counter()
        threads = [threading.Thread(target=work, args=(chunk,)) for chunk in chunks]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - started
        done = Run.objects.filter(pk__in=parallel_ids, status="completed").count()
        print(f"{args.workers} workers: {done}/{len(parallel_ids)} completed in {wall:.2f}s = {done / wall:.1f} runs/s")
        server.stop()


if __name__ == "__main__":
    main()
