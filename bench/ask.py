"""Ask Inbox benchmark over ../shared/data/enron: retrieval-to-answer latency without a language model
(plan → keyword variants → semantic → rerank → read evidence → extractive answer), p50/p95, and
recall@10 / MRR of the evidence list (next to search's own ranking) and the expected value in the answer,
per kind (fact / keyword / paraphrase), on the labelled questions of bench/data/ask_questions.json.
`--empty-vocabulary` runs without apps/ask/data/vocabulary.json.

    .venv/bin/python bench/ask.py                          # builds a fresh SQLite corpus (import, index, embed)
    .venv/bin/python bench/ask.py --workdir /tmp/askbench  # reuse a corpus built by bench/search.py --workdir
    bench/ask.py --postgres                                # an embedded PostgreSQL 18 + pgvector

Building embeds all ~45k messages with the local model (tens of minutes on 2 cores), then their gists (about
half an hour more); --workdir reuses a database in <workdir>/data (account "enron"), e.g. one left by
`bench/search.py --workdir DIR` (its missing gists are embedded first).
Prints numbers, asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.search import extract_enron, percentiles, rss_mb, setup_django  # noqa: E402

QUESTIONS_FILE = REPO / "bench" / "data" / "ask_questions.json"


def load_questions(path: Path = QUESTIONS_FILE) -> list[dict[str, Any]]:
    """[{kind, question, targets, expected?}]: see the file's "about"."""
    return list(json.loads(path.read_text(encoding="utf-8"))["questions"])


# (question, Message-IDs of the mails that answer it), as the debugging scripts and tests/ask use them.
QUESTIONS: list[tuple[str, tuple[str, ...]]] = [(q["question"], tuple(q["targets"])) for q in load_questions()]


def build(workdir: Path) -> None:
    from django.contrib.auth import get_user_model

    from apps.accounts.actions import create_local_account
    from apps.accounts.importers import import_path
    from apps.accounts.signals import messages_stored
    from apps.search import actions
    from apps.search.backends import get_search_backend
    from apps.search.embedders import get_embedder

    maildir, files = extract_enron(workdir, None)
    print(f"corpus: {files} files")
    user = get_user_model().objects.create_user(username="bench", email="bench@example.com", password="x" * 20)
    account = create_local_account(owner=user, name="enron")
    messages_stored.disconnect(dispatch_uid="search.index_stored_messages")
    started = time.perf_counter()
    summary = import_path(account, maildir)
    print(f"import: {summary.imported} messages in {time.perf_counter() - started:.0f}s")
    actions.reindex_all()
    started = time.perf_counter()
    embedded = get_search_backend().embed_pending(embedder=get_embedder())
    print(f"embedded {embedded} documents in {time.perf_counter() - started:.0f}s")
    started = time.perf_counter()
    gists = actions.embed_stale_gists()
    print(f"embedded {gists} gists (apps/search/gist.py) in {time.perf_counter() - started:.0f}s")


def run_question(question: str, account: Any) -> tuple[Any, float]:
    from django.utils import timezone

    from apps.ask.events import discard
    from apps.ask.pipeline import run_pipeline
    from apps.ask.steps import AskContext

    context = AskContext(
        run_id="bench",
        owner=account.owner,
        question=question,
        accounts=[account],
        now=timezone.now(),
        emit=discard,
    )
    started = time.perf_counter()
    outcome = run_pipeline(context)
    return outcome, time.perf_counter() - started


def content_key(subject: str, body: str) -> str:
    """Enron holds many copies of one mail (each recipient's inbox, forwards): a copy answers as well."""
    import re

    from apps.ask.textutil import normalize

    subject = re.sub(r"^((re|fw|fwd)\s*:\s*)+", "", normalize(subject))
    lines = [line for line in body.splitlines() if line.strip() and not line.lstrip().startswith(">")]
    return subject + "|" + normalize(" ".join(lines))[:200]


def relevant_keys(relevant: tuple[str, ...]) -> set[str]:
    from apps.accounts.models import Message

    return {content_key(m.subject, m.body_text) for m in Message.objects.filter(message_id__in=relevant)}


def is_relevant(message_id: str, relevant: tuple[str, ...], keys: set[str]) -> bool:
    from apps.accounts.models import Message

    if message_id in relevant:
        return True
    message = Message.objects.filter(message_id=message_id).only("subject", "body_text").first()
    if message is None:  # a row names a mail without a Message-ID header by its dedupe key (Ask's rows do)
        message = Message.objects.filter(message_id="", dedupe_key=message_id).only("subject", "body_text").first()
    return message is not None and content_key(message.subject, message.body_text) in keys


def value_in_answer(expected: str, answer: str) -> bool:
    """The expected value, as the mail writes it, in the answer (bold markers, spacing and the periods of
    "p.m." / "a.m." ignored: a copy of the mail may write "2:00 p.m." where the labelled one has "2:00 pm")."""
    import re

    def flat(text: str) -> str:
        text = re.sub(r"\b([ap])\.m\.?", r"\1m", text.replace("**", ""), flags=re.IGNORECASE)
        return " ".join(text.split()).lower()

    return flat(expected) in flat(answer)


def thread_of(message_ids: tuple[str, ...]) -> set[int]:
    from apps.accounts.models import Message

    return set(
        Message.objects.filter(message_id__in=message_ids, thread_id__isnull=False).values_list("thread_id", flat=True)
    )


def first_rank(
    rows: list[tuple[str, int | None]], relevant: tuple[str, ...], keys: set[str], threads: set[int]
) -> tuple[int | None, int | None]:
    """(strict, thread) rank of the first relevant row among (message id, thread id) rows: strict counts the
    labelled mail or a copy of it; thread also counts a row standing for the thread that holds it."""
    strict = thread = None
    for rank, (message_id, thread_id) in enumerate(rows[:10], start=1):
        hit = is_relevant(message_id, relevant, keys)
        if hit and strict is None:
            strict = rank
        if (hit or (thread_id is not None and thread_id in threads)) and thread is None:
            thread = rank
    return strict, thread


def recall_mrr(found: list[int | None]) -> tuple[float, float]:
    if not found:
        return 0.0, 0.0
    recall = sum(1 for r in found if r is not None and r <= 10) / len(found)
    mrr = sum(1.0 / r for r in found if r is not None and r <= 10) / len(found)
    return recall, mrr


def evaluate(account: Any, repeat: int, questions: list[dict[str, Any]]) -> None:
    from apps.ask.pipeline import EVIDENCE_ROWS
    from apps.search.backends.base import SearchFilters
    from apps.search.selectors import search_messages

    run_question("warm up the model and the vectors", account)
    # SQLite loads its in-process keyword index in a background thread (FTS5 ranks meanwhile), as a web process
    # does once after it starts: time the questions against the loaded index.
    started = time.perf_counter()
    for thread in threading.enumerate():
        if thread.name == "search-keyword-index":
            thread.join()
            print(f"keyword index loaded in the background in {time.perf_counter() - started:.1f}s more")
    # A web process warms dateparser's languages when the Ask page opens (apps/ask/warmup.py): done here too.
    from apps.ask.warmup import warm_up

    started = time.perf_counter()
    warm_up()
    print(f"Ask's per-process warm-up (dateparser's languages): {time.perf_counter() - started:.1f}s")
    results: list[dict[str, Any]] = []
    latencies: list[float] = []
    steps: dict[str, list[int]] = {}
    for item in questions:
        question, relevant = item["question"], tuple(item["targets"])
        keys = relevant_keys(relevant)
        threads = thread_of(relevant)
        outcome, seconds = run_question(question, account)
        latencies.append(seconds)
        for name, ms in outcome.timings.items():
            steps.setdefault(name, []).append(ms)
        rows = [(row["message_id"], row.get("thread_id")) for row in outcome.evidence]
        rank, thread_rank = first_rank(rows, relevant, keys, threads)
        hits = search_messages(question, limit=10, filters=SearchFilters(account_ids=(account.pk,)))
        base, base_thread = first_rank([(h.message_id, h.thread_id) for h in hits], relevant, keys, threads)
        value = value_in_answer(item["expected"], outcome.answer) if item.get("expected") else None
        results.append(
            {"kind": item["kind"], "rank": rank, "thread": thread_rank, "base": base, "base_thread": base_thread,
             "value": value, "tuned": "source" not in item, "confidence": outcome.scope.get("confidence", "-"),
             "file": item.get("file", "")}
        )  # fmt: skip
        top = (outcome.evidence[0]["subject"][:50] if outcome.evidence else "-") if rank != 1 else ""
        mark = "" if value is None else ("  value ✓" if value else "  value ✗")
        print(
            f"  {'✓' if rank == 1 else rank or '✗':>2} (search: {base or '✗'}) [{item['kind'][:4]}]"
            f" {question[:64]}  {top}{mark}"
        )
    for _ in range(max(0, repeat - 1)):
        for item in questions:
            latencies.append(run_question(item["question"], account)[1])

    print(f"\nlabelled questions: {len(questions)} (a copy of a labelled mail in another inbox counts as relevant;")
    print("'thread' also counts the row of the thread that holds the labelled mail;")
    print(f"Ask shows {EVIDENCE_ROWS} evidence rows; search's column counts its first 10 mails)")
    print(
        f"{'':24} {'n':>3}  {'ask r@10':>8} {'MRR':>6}  {'thread r@10':>11} {'MRR':>6}"
        f"  {'search r@10':>11} {'MRR':>6}  value"
    )
    groups: list[tuple[str, list[dict[str, Any]]]] = [("all", results)]
    groups += [(kind, [r for r in results if r["kind"] == kind]) for kind in ("fact", "keyword", "paraphrase")]
    groups += [
        ("used for tuning", [r for r in results if r["tuned"]]),
        ("never tuned on", [r for r in results if not r["tuned"]]),
    ]
    files = list(dict.fromkeys(r["file"] for r in results))
    if len(files) > 1:
        groups += [(name.removeprefix("ask_questions").removesuffix(".json").strip("_") or "ask_questions",
                    [r for r in results if r["file"] == name]) for name in files]  # fmt: skip
    for name, group in groups:
        if not group:
            continue
        recall, mrr = recall_mrr([r["rank"] for r in group])
        t_recall, t_mrr = recall_mrr([r["thread"] for r in group])
        b_recall, b_mrr = recall_mrr([r["base"] for r in group])
        valued = [bool(r["value"]) for r in group if r["value"] is not None]
        shown = f"{sum(valued)}/{len(valued)}" if valued else "-"
        print(
            f"{name:24} {len(group):>3}  {recall:>8.3f} {mrr:>6.3f}  {t_recall:>11.3f} {t_mrr:>6.3f}"
            f"  {b_recall:>11.3f} {b_mrr:>6.3f}  {shown}"
        )
    # Honest labels: how often the expected value is in an answer of each confidence the page shows.
    calibration = []
    for level in ("high", "medium", "low"):
        valued = [bool(r["value"]) for r in results if r["value"] is not None and r["confidence"] == level]
        if valued:
            calibration.append(f"{level} {sum(valued)}/{len(valued)}")
    print("expected value in the answer, by the answer's confidence: " + (", ".join(calibration) or "-"))
    first = latencies[: len(questions)]
    p50, p95 = percentiles(first)
    print(
        f"retrieval-to-answer latency without LLM, each question seen the first time ({len(first)} runs):"
        f" p50 {p50:.0f} ms   p95 {p95:.0f} ms   max {max(first) * 1000:.0f} ms"
    )
    if len(latencies) > len(first):
        # Asked again: the process's query and sentence vectors are cached (as for a repeated or rephrased
        # question over the same mails), so these are lower than first sight.
        p50, p95 = percentiles(latencies[len(first) :])
        print(
            f"the same questions asked again ({len(latencies) - len(first)} runs, cached vectors):"
            f" p50 {p50:.0f} ms   p95 {p95:.0f} ms"
        )
    print("median per step (ms): " + ", ".join(f"{name} {statistics.median(v):.0f}" for name, v in steps.items()))
    print(
        "p95 per step (ms): "
        + ", ".join(f"{name} {percentiles([ms / 1000 for ms in v])[1]:.0f}" for name, v in steps.items())
    )
    print(f"rss: {rss_mb():.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", help="Reuse (or build and keep) the corpus database here.")
    parser.add_argument("--postgres", action="store_true", help="Use an embedded PostgreSQL 18 + pgvector.")
    parser.add_argument("--repeat", type=int, default=3, help="Runs of the question set for the latency numbers.")
    parser.add_argument(
        "--questions",
        nargs="+",
        default=[str(QUESTIONS_FILE)],
        help="The labelled question file(s); with several, each file also gets its own row.",
    )
    parser.add_argument("--kind", choices=("fact", "keyword", "paraphrase"), help="Only questions of this kind.")
    parser.add_argument(
        "--empty-vocabulary",
        action="store_true",
        help="Run with apps/ask/data/vocabulary.json replaced by an empty one (MAILAGENT_ASK_VOCABULARY).",
    )
    args = parser.parse_args()
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="mailagent-bench-ask-"))
    workdir.mkdir(parents=True, exist_ok=True)
    if args.empty_vocabulary:
        empty = workdir / "empty-vocabulary.json"
        empty.write_text("{}", encoding="utf-8")
        os.environ["MAILAGENT_ASK_VOCABULARY"] = str(empty)
    existing = (workdir / "data" / "db.sqlite3").exists() and not args.postgres
    os.environ.setdefault("DATA_DIR", str(workdir / "data"))
    setup_django(workdir, args.postgres)

    from django.db import connection

    from apps.accounts.models import MailAccount
    from apps.search import actions as search_actions
    from apps.search.gist import has_stale_gists
    from apps.search.models import SearchChunk, SearchDocument, SearchGist

    if not existing or not MailAccount.objects.filter(name="enron").exists():
        build(workdir)
    account = MailAccount.objects.select_related("owner").get(name="enron")
    if has_stale_gists():  # a corpus built before gists, or by bench/search.py: as the backfill would
        started = time.perf_counter()
        print("embedding the missing gists (apps/search/gist.py; about half an hour for the whole corpus)")
        print(f"embedded {search_actions.embed_stale_gists()} gists in {time.perf_counter() - started:.0f}s")
    print(
        f"database: {connection.vendor}; {SearchDocument.objects.count()} documents,"
        f" {SearchChunk.objects.count()} vectors, {SearchGist.objects.count()} gists"
    )
    questions = [
        {**q, "file": Path(path).name}
        for path in args.questions
        for q in load_questions(Path(path))
        if not args.kind or q["kind"] == args.kind
    ]
    print("vocabulary: " + ("empty" if args.empty_vocabulary else "apps/ask/data/vocabulary.json"))
    evaluate(account, args.repeat, questions)


if __name__ == "__main__":
    main()
