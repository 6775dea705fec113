"""Ask over library files on real third-party files: Enron users' filed mail (maildir/<user>/inbox/<folder>/ in
/work/shared/data/enron/enron-inbox.tar.gz; taylor-m, motley-m and mccarty-d are never read) exported as .eml
files into one library (<user>/<folder>/<n>.eml), digested and indexed by the app's own scan.

For a sample of the files, a file request is written from the file itself ("find the file about <its
subject>") and run through the whole Ask pipeline (router, file search, answer) as the composer would. Prints
the router's latency on the request phrasings, the file query's latency p50/p95 with the index size, and how
often the file the request was written from (or a copy with the same subject) is the first card / among the
cards (recall@6, MRR). No embeddings are computed (keyword side of the hybrid search only).

    .venv/bin/python bench/ask_files.py [--workdir DIR] [--files 2000] [--questions 100] [--postgres]
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.organize import read_enron
from bench.search import percentiles, setup_django

PHRASINGS = (
    "find the file about {}",
    "show me the document {}",
    "where is the file {}",
    "find my PDF from QNB",
    "yes, move it",
    "no, don't move it",
    "organize my inbox files",
    "save this note: {}",
    "when is the {} meeting?",
    "did Tom send the {} numbers?",
)


def subject_of(raw: bytes) -> str:
    match = re.search(rb"^Subject:[ \t]*(.*)$", raw, re.MULTILINE)
    text = match.group(1).decode("utf-8", "replace").strip() if match else ""
    return re.sub(r"^((re|fw|fwd)\s*:\s*)+", "", text, flags=re.IGNORECASE).strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run(args, args.workdir or Path(tmp))


def run(args: argparse.Namespace, workdir: Path) -> None:
    setup_django(workdir, args.postgres)
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from apps.ask.events import discard
    from apps.ask.intent import RouterContext, route_request
    from apps.ask.pipeline import run_pipeline
    from apps.ask.steps import AskContext
    from apps.organization import actions
    from apps.organization.library import get_library
    from apps.organization.models import LibraryFile
    from apps.organization.roots import library_base

    rng = random.Random(args.seed)
    started = time.perf_counter()
    mails = [m for user_mails in read_enron().values() for m in user_mails if m.folder]
    rng.shuffle(mails)
    mails = mails[: args.files]
    owner, _ = get_user_model().objects.get_or_create(username="bench-files", defaults={"email": "f@example.com"})
    root = library_base(owner.pk) / "library"  # library roots live under the owner's base (roots.py)
    actions.update_settings(owner=owner, changes={"root": str(root)})
    library = get_library(owner=owner)
    if not LibraryFile.objects.filter(library=library).exists():
        for index, mail in enumerate(mails):
            path = root / mail.user / mail.folder / f"{index}.eml"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(mail.raw)
        actions.scan_library(library=library, suggest=False)
    files = list(LibraryFile.objects.filter(library=library).exclude(status="missing"))
    print(f"library: {len(files)} files (Enron filed mail as .eml) ready in {time.perf_counter() - started:.0f}s")

    router_times = []
    context = RouterContext(pending_suggestions=1, last_file_query=True, has_files=True)
    for _ in range(200):
        for phrasing in PHRASINGS:
            text = phrasing.format("quarterly gas storage report")
            t0 = time.perf_counter()
            route_request(text, context)
            router_times.append(time.perf_counter() - t0)
    p50, p95 = percentiles(router_times)
    # percentiles() returns milliseconds
    print(f"router (rules): {len(router_times)} requests, p50 {p50 * 1000:.0f} µs, p95 {p95 * 1000:.0f} µs")

    by_subject: dict[str, list[LibraryFile]] = {}
    for file in files:
        subject = subject_of((file.absolute_path).read_bytes()) if file.absolute_path.is_file() else ""
        if len(re.findall(r"\w+", subject)) >= 2:
            by_subject.setdefault(subject.lower(), []).append(file)
    subjects = sorted(by_subject)
    rng.shuffle(subjects)
    sample = subjects[: args.questions]

    def ask(question: str) -> tuple[object, float]:
        ctx = AskContext(run_id="bench", owner=owner, question=question, accounts=[], now=timezone.now(), emit=discard)
        t0 = time.perf_counter()
        outcome = run_pipeline(ctx)
        return outcome, time.perf_counter() - t0

    latencies: list[float] = []
    ranks: list[int | None] = []
    routed = 0
    for subject in sample:
        outcome, seconds = ask(f"find the file about {subject}")
        latencies.append(seconds)
        cards = outcome.scope.get("files") or []  # type: ignore[attr-defined]
        routed += outcome.intent == "query_files"  # type: ignore[attr-defined]
        wanted = {f.pk for f in by_subject[subject]}
        rank = next((n for n, card in enumerate(cards, start=1) if card["file_id"] in wanted), None)
        ranks.append(rank)
    found = [r for r in ranks if r is not None]
    p50, p95 = percentiles(latencies)
    total = len(sample)
    first = sum(1 for r in found if r == 1) / total
    mrr = sum(1 / r for r in found) / total
    print(
        f"file requests: {total} ('find the file about <subject>'), routed to files {routed}/{total}; "
        f"first card right {first:.2f}, recall@6 {len(found) / total:.2f}, MRR {mrr:.2f}; "
        f"latency p50 {p50:.0f} ms, p95 {p95:.0f} ms"
    )
    print(f"  mean {statistics.mean(latencies) * 1000:.0f} ms over a {len(files)}-file library, no embeddings")


if __name__ == "__main__":
    main()
