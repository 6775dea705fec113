"""Ask Inbox benchmark over ../shared/data/enron: retrieval-to-answer latency without a language model
(plan → keyword variants → semantic → rerank → read evidence → extractive answer), p50/p95, and
recall@10 / MRR of the evidence list on our own labelled questions (paraphrased, not the mails' words).

    .venv/bin/python bench/ask.py                          # builds a fresh SQLite corpus (import, index, embed)
    .venv/bin/python bench/ask.py --workdir /tmp/askbench  # reuse a corpus built by bench/search.py --workdir
    bench/ask.py --postgres                                # an embedded PostgreSQL 18 + pgvector

Building embeds all ~45k messages with the local model (tens of minutes on 2 cores); --workdir reuses a
database in <workdir>/data (account "enron"), e.g. one left by `bench/search.py --workdir DIR`.
Prints numbers, asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.search import extract_enron, percentiles, rss_mb, setup_django  # noqa: E402

# (question, Message-IDs of the mails that answer it). Written for this benchmark from reading the mails.
QUESTIONS: list[tuple[str, tuple[str, ...]]] = [
    (
        "are the free monthly bus passes for January available at the parking office?",
        ("1152760.1075860843920.JavaMail.evans@thyme", "21471145.1075860844070.JavaMail.evans@thyme"),
    ),
    (
        "a laid-off employee blames the chairman and fears losing his home",
        ("10503566.1075860844379.JavaMail.evans@thyme",),
    ),
    (
        "reminder that an unresolved invoice in the payables inbox is overdue",
        ("32430719.1075845192540.JavaMail.evans@thyme", "10631077.1075852673267.JavaMail.evans@thyme"),
    ),
    ("who should they contact about our internal e-learning plans?", ("4917360.1075845192564.JavaMail.evans@thyme",)),
    ("when did my TSC order ship to Kay Mann?", ("3041534.1075855245606.JavaMail.evans@thyme",)),
    (
        "how much did ENA pay General Electric under the letter agreement?",
        ("6817705.1075861736211.JavaMail.evans@thyme",),
    ),
    ("when is the basics of risk management class I signed up for?", ("3742379.1075861737052.JavaMail.evans@thyme",)),
    ("which lawyer is handling the Jode contract?", ("15662747.1075861737939.JavaMail.evans@thyme",)),
    (
        "how large will our trading line with Fimat become after the guarantee?",
        ("26056216.1075863203328.JavaMail.evans@thyme",),
    ),
    ("what bid did we get for the MLMG shares at Bear Stearns?", ("26806487.1075855401196.JavaMail.evans@thyme",)),
    (
        "when is payment due on financial power trades shorter than a month?",
        ("2431604.1075858815693.JavaMail.evans@thyme",),
    ),
    ("who is our credit contact for master netting agreements?", ("7760751.1075863200198.JavaMail.evans@thyme",)),
    ("we must list every contract that is still being performed", ("18778021.1075861060450.JavaMail.evans@thyme",)),
    ("settling the open deals with Kern Oil", ("2263820.1075861061975.JavaMail.evans@thyme",)),
    (
        "Great Lakes Chemical wants monthly mark-to-market reports and to end the contract",
        ("22257974.1075861059649.JavaMail.evans@thyme",),
    ),
    ("when does open enrollment for the 2002 health benefits start?", ("21193179.1075851663810.JavaMail.evans@thyme",)),
    (
        "deadline for comments on El Paso's plan to allocate receipt point rights",
        ("9844515.1075851647683.JavaMail.evans@thyme",),
    ),
    ("energy committee meeting hosted by AMD in Sunnyvale", ("18828962.1075851636503.JavaMail.evans@thyme",)),
    (
        "a customer asks whether we must hand over contracts signed after July 1",
        ("22721694.1075859209929.JavaMail.evans@thyme",),
    ),
    ("imbalances left on the park and loan contracts", ("10222970.1075852113740.JavaMail.evans@thyme",)),
    ("no interruptible transport capacity on Dominion's PL-1 line", ("3040832.1075840505107.JavaMail.evans@thyme",)),
    ("someone wants a copy of my talk from the SIAM workshop", ("31513908.1075858458602.JavaMail.evans@thyme",)),
    ("Vince cannot send his Paris presentation in time", ("11537139.1075863446251.JavaMail.evans@thyme",)),
    ("register to vote before the November elections", ("21446155.1075852671316.JavaMail.evans@thyme",)),
    ("two places left on the Navy fly away trip in December", ("12199176.1075861577060.JavaMail.evans@thyme",)),
    ("night-time bicycle ride supporting Houston cyclists", ("12744676.1075852664568.JavaMail.evans@thyme",)),
    (
        "the bank asks if my brother may discuss my accounts",
        ("13767726.1075852683810.JavaMail.evans@thyme",),
    ),
    (
        "life insurance premium payment and congratulations on the marriage",
        ("1848812.1075840160615.JavaMail.evans@thyme",),
    ),
    ("an employee thanks Skilling and wishes him well after he left", ("20775094.1075852680949.JavaMail.evans@thyme",)),
    (
        "big companies don't trust us to still be around in five years for bandwidth",
        ("25031794.1075840152137.JavaMail.evans@thyme",),
    ),
]


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


def run_question(question: str, account: Any) -> tuple[Any, float]:
    from django.utils import timezone

    from apps.ask.events import discard
    from apps.ask.pipeline import AskContext, run_pipeline

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
    return message is not None and content_key(message.subject, message.body_text) in keys


def evaluate(account: Any, repeat: int) -> None:
    from apps.search.backends.base import SearchFilters
    from apps.search.selectors import search_messages

    run_question("warm up the model and the vectors", account)
    ranks: list[int | None] = []
    baseline: list[int | None] = []
    latencies: list[float] = []
    steps: dict[str, list[int]] = {}
    for question, relevant in QUESTIONS:
        keys = relevant_keys(relevant)
        outcome, seconds = run_question(question, account)
        latencies.append(seconds)
        for name, ms in outcome.timings.items():
            steps.setdefault(name, []).append(ms)
        ids = [row["message_id"] for row in outcome.evidence]
        rank = next((i for i, mid in enumerate(ids, start=1) if is_relevant(mid, relevant, keys)), None)
        ranks.append(rank)
        hits = search_messages(question, limit=10, filters=SearchFilters(account_ids=(account.pk,)))
        base = next((i for i, hit in enumerate(hits, start=1) if is_relevant(hit.message_id, relevant, keys)), None)
        baseline.append(base)
        top = (outcome.evidence[0]["subject"][:50] if outcome.evidence else "-") if rank != 1 else ""
        print(f"  {'✓' if rank == 1 else rank or '✗':>2} (search: {base or '✗'})  {question[:70]}  {top}")
    for _ in range(max(0, repeat - 1)):
        for question, _relevant in QUESTIONS:
            latencies.append(run_question(question, account)[1])

    def recall_mrr(found: list[int | None]) -> tuple[float, float]:
        recall = sum(1 for r in found if r is not None and r <= 10) / len(found)
        mrr = sum(1.0 / r for r in found if r is not None and r <= 10) / len(found)
        return recall, mrr

    recall, mrr = recall_mrr(ranks)
    base_recall, base_mrr = recall_mrr(baseline)
    p50, p95 = percentiles(latencies)
    print(f"\nlabelled questions: {len(QUESTIONS)} (a copy of a labelled mail in another inbox counts as relevant)")
    print(f"ask evidence:        recall@10 {recall:.3f}   MRR {mrr:.3f}   (top-1 {ranks.count(1)}/{len(ranks)})")
    print(f"hybrid search alone: recall@10 {base_recall:.3f}   MRR {base_mrr:.3f}")
    print(
        f"retrieval-to-answer latency without LLM ({len(latencies)} runs): p50 {p50:.0f} ms   p95 {p95:.0f} ms"
        f"   max {max(latencies) * 1000:.0f} ms"
    )
    print("median per step (ms): " + ", ".join(f"{name} {statistics.median(v):.0f}" for name, v in steps.items()))
    print(f"rss: {rss_mb():.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", help="Reuse (or build and keep) the corpus database here.")
    parser.add_argument("--postgres", action="store_true", help="Use an embedded PostgreSQL 18 + pgvector.")
    parser.add_argument("--repeat", type=int, default=3, help="Runs of the question set for the latency numbers.")
    args = parser.parse_args()
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="mailagent-bench-ask-"))
    workdir.mkdir(parents=True, exist_ok=True)
    existing = (workdir / "data" / "db.sqlite3").exists() and not args.postgres
    os.environ.setdefault("DATA_DIR", str(workdir / "data"))
    setup_django(workdir, args.postgres)

    from django.db import connection

    from apps.accounts.models import MailAccount
    from apps.search.models import SearchChunk, SearchDocument

    if not existing or not MailAccount.objects.filter(name="enron").exists():
        build(workdir)
    account = MailAccount.objects.select_related("owner").get(name="enron")
    print(
        f"database: {connection.vendor}; {SearchDocument.objects.count()} documents,"
        f" {SearchChunk.objects.count()} vectors"
    )
    evaluate(account, args.repeat)


if __name__ == "__main__":
    main()
