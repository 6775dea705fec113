"""Gist backfill over the Enron corpus (apps/search/gist.py): embeds every message's missing gist (opening and
continuation passages) through actions.embed_stale_gists, as the background backfill does, and prints mails
per second; then the cost of one gist at the lengths GIST_CHARS could take, on a sample of the corpus's mail.

    .venv/bin/python bench/gist.py --workdir /work/askbench      # a corpus built by bench/ask.py or search.py
    bench/gist.py --workdir DIR --sample-only                   # only the per-length cost

Prints numbers, asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.search import setup_django  # noqa: E402


def backfill() -> None:
    from apps.search import actions
    from apps.search.gist import get_gist_embedder, gist_progress

    embedder = get_gist_embedder()
    if embedder is None:
        print("SEARCH_GIST_EMBEDDER is none: nothing to do")
        return
    done, total = gist_progress(embedder)
    print(f"gists: {done}/{total} current before the backfill")
    started = time.perf_counter()
    last = started
    count = 0

    def step(n: int) -> None:
        nonlocal count, last
        count += n
        if time.perf_counter() - last >= 30:
            last = time.perf_counter()
            print(f"  {count} embedded, {count / (last - started):.1f} mails/s", flush=True)

    actions.embed_stale_gists(embedder=embedder, progress=step)
    seconds = time.perf_counter() - started
    print(f"embedded {count} gists in {seconds:.0f}s ({count / seconds if seconds else 0:.1f} mails/s)")


def sample_cost(size: int) -> None:
    from apps.search import gist
    from apps.search.models import DocumentKind, SearchDocument

    embedder = gist.get_gist_embedder()
    if embedder is None:
        return
    rows = list(SearchDocument.objects.filter(kind=DocumentKind.MESSAGE).order_by("?").values("title", "body")[:size])
    original = gist.GIST_CHARS
    try:
        for chars in (150, 250, 400, 800):
            gist.GIST_CHARS = chars
            texts = [gist.gist_text(row["title"], row["body"]) for row in rows]
            started = time.perf_counter()
            embedder.embed_documents(texts)
            seconds = time.perf_counter() - started
            print(f"GIST_CHARS {chars}: {len(texts) / seconds:.1f} mails/s ({len(texts)} sampled mails)")
    finally:
        gist.GIST_CHARS = original


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", required=True, help="A corpus built by bench/ask.py or bench/search.py.")
    parser.add_argument("--sample-only", action="store_true", help="Only the per-length cost.")
    parser.add_argument("--sample", type=int, default=64, help="Mails sampled for the per-length cost.")
    args = parser.parse_args()
    setup_django(Path(args.workdir), postgres=False)
    if not args.sample_only:
        backfill()
    sample_cost(args.sample)


if __name__ == "__main__":
    main()
