"""Fit (or only evaluate) the weights of Ask's rerank (apps/ask/rerank.py) on labelled Enron questions.

Each question is run once through the whole pipeline without a language model; every shortlisted candidate
is recorded with its rerank signals (the features score_candidates computes) and whether it is a labelled
mail (or a copy of it). The ranking a set of weights gives is then replayed exactly as the pipeline builds it
(weighted sum → one row per thread → search's first rows kept), so weights are compared on Ask's own
evidence list: recall@10 and MRR of the first labelled row.

The fit is coordinate descent on MRR over a grid per weight, from the current weights. It is judged by
leaving one question file out: fit on the others, measure on the one left out (its questions were never
seen by the fit), then by the questions of --holdout files, never fitted. The weights in rerank.WEIGHTS
are not written from here: measured on 2026-11-27, the refit left out of a file scored below them on two of
the four (ask_questions.json MRR 0.796 -> 0.753, fresh 0.702 -> 0.678), above on one (search 0.751 -> 0.776)
and the same on one, so they stay as they are.

    .venv/bin/python bench/ask_weights.py --workdir /work/askbench
    bench/ask_weights.py --workdir DIR --shortlist 80      # rerank 80 candidates instead of retrieval.SHORTLIST
    bench/ask_weights.py --workdir DIR --holdout bench/data/ask_questions_third.json  # measured, never fitted
    bench/ask_weights.py --workdir DIR --sweep gist --set retrieval.GIST_LIMIT=40  # one weight, per file

Needs a corpus built by bench/search.py or bench/ask.py (--workdir). Prints numbers, asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.ask import is_relevant, load_questions, relevant_keys, run_question  # noqa: E402
from bench.search import setup_django  # noqa: E402

DATA = REPO / "bench" / "data"
TRAINING = [
    DATA / "ask_questions.json",
    DATA / "search_questions.json",
    DATA / "ask_questions_fresh.json",
    DATA / "ask_questions_final.json",
]
GRID = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
ROUNDS = 4


@dataclass(slots=True)
class Recorded:
    """One question: its candidates (signals already computed) and which of them answer it."""

    file: str
    question: str
    candidates: list[Any]
    relevant: set[int]  # message_pk of the labelled mails (and their copies) among the candidates


def collect(account: Any, files: list[Path]) -> list[Recorded]:
    from apps.ask import pipeline
    from apps.ask.warmup import warm_up

    run_question("warm up the model and the vectors", account)
    warm_up()
    captured: list[list[Any]] = []
    original = pipeline.score_candidates

    def recording(*args: Any, **kwargs: Any) -> list[Any]:
        ranked = original(*args, **kwargs)
        captured.append(ranked)
        return ranked

    pipeline.score_candidates = recording
    recorded: list[Recorded] = []
    try:
        for path in files:
            for item in load_questions(path):
                captured.clear()
                relevant_ids = tuple(item["targets"])
                keys = relevant_keys(relevant_ids)
                run_question(item["question"], account)
                candidates = captured[-1] if captured else []
                relevant = {c.message_pk for c in candidates if is_relevant(c.rfc_message_id, relevant_ids, keys)}
                recorded.append(Recorded(path.name, item["question"], candidates, relevant))
    finally:
        pipeline.score_candidates = original
    return recorded


def rank_of(record: Recorded, weights: dict[str, float]) -> int | None:
    """The rank (1-10) of the first evidence row whose mail is labelled, as the pipeline would list them."""
    from apps.ask.rerank import keep_search_hits, merge_threads, weighted_score

    for candidate in record.candidates:
        candidate.score = weighted_score(candidate, weights)
    ranked = sorted(
        record.candidates,
        key=lambda c: (-c.score, -(c.date.timestamp() if c.date else 0), -c.message_pk),
    )
    threads = keep_search_hits(merge_threads(ranked))
    for rank, thread in enumerate(threads[:10], start=1):
        if thread.best.message_pk in record.relevant:
            return rank
    return None


def measure(records: list[Recorded], weights: dict[str, float]) -> tuple[float, float]:
    ranks = [rank_of(r, weights) for r in records]
    if not ranks:
        return 0.0, 0.0
    return (
        sum(1 for r in ranks if r is not None) / len(ranks),
        sum(1.0 / r for r in ranks if r is not None) / len(ranks),
    )


def objective(records: list[Recorded], weights: dict[str, float]) -> float:
    recall, mrr = measure(records, weights)
    return mrr + 0.25 * recall  # MRR first; recall@10 breaks near-ties (a mail on the page at all)


def fit(records: list[Recorded], start: dict[str, float]) -> dict[str, float]:
    weights = dict(start)
    best = objective(records, weights)
    for _round in range(ROUNDS):
        improved = False
        for name in sorted(weights):
            for value in GRID:
                if value == weights[name]:
                    continue
                trial = {**weights, name: value}
                score = objective(records, trial)
                if score > best + 1e-9:
                    best, weights, improved = score, trial, True
        if not improved:
            break
    return weights


def table_row(name: str, records: list[Recorded], weights: dict[str, float]) -> str:
    recall, mrr = measure(records, weights)
    return f"{name:34} {len(records):>4}  r@10 {recall:.3f}  MRR {mrr:.3f}"


def sweep(name: str, records: list[Recorded], current: dict[str, float]) -> None:
    """r@10 / MRR per question file with one weight set to each GRID value, every other weight as it is."""
    files = sorted({r.file for r in records})
    print(f"\nweight of {name!r} (now {current.get(name, 0.0)}), per file r@10 / MRR, then all:")
    print(f"{'':>6}  " + "  ".join(f"{f[:22]:>22}" for f in files) + f"  {'all':>13}")
    for value in GRID:
        weights = {**current, name: value}
        cells = []
        for file in [*files, None]:
            group = [r for r in records if file is None or r.file == file]
            recall, mrr = measure(group, weights)
            cells.append(f"{recall:.3f} / {mrr:.3f}".rjust(22 if file else 13))
        print(f"{value:>6}  " + "  ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", required=True, help="A corpus database built by bench/search.py or ask.py.")
    parser.add_argument("--shortlist", type=int, help="Rerank this many candidates instead of retrieval.SHORTLIST.")
    parser.add_argument("--holdout", action="append", default=[], help="A question file measured, never fitted.")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="MODULE.NAME=NUMBER",
        help="Set a constant of apps.ask.retrieval or apps.ask.rerank for the run, e.g. retrieval.GIST_LIMIT=40.",
    )
    parser.add_argument("--sweep", help="Only measure each file under GRID values of this one weight, the rest as is.")
    args = parser.parse_args()
    workdir = Path(args.workdir)
    os.environ.setdefault("DATA_DIR", str(workdir / "data"))
    setup_django(workdir, False)

    from apps.accounts.models import MailAccount
    from apps.ask import retrieval
    from apps.ask.rerank import WEIGHTS

    if args.shortlist:
        retrieval.SHORTLIST = args.shortlist
    from apps.ask import rerank

    for assignment in args.set:
        target, value = assignment.split("=", 1)
        module_name, name = target.split(".", 1)
        module = {"retrieval": retrieval, "rerank": rerank}[module_name]
        if not hasattr(module, name):
            parser.error(f"apps.ask.{module_name} has no {name}")
        setattr(module, name, type(getattr(module, name))(float(value)))
        print(f"apps.ask.{module_name}.{name} = {getattr(module, name)}")

    account = MailAccount.objects.select_related("owner").get(name="enron")
    holdout_files = [Path(p) for p in args.holdout]
    records = collect(account, TRAINING + holdout_files)
    training = [r for r in records if r.file in {p.name for p in TRAINING}]
    held_out = [r for r in records if r.file in {p.name for p in holdout_files}]
    current = dict(WEIGHTS)
    print(f"questions: {len(training)} for fitting, {len(held_out)} held out; current weights: {current}")
    # No weighting can rank a mail the candidate search never found: the ceiling of any fit.
    for name, group in (("training", training), ("held out", held_out)):
        if group:
            pooled = sum(1 for r in group if r.relevant)
            print(f"{name}: a labelled mail among the reranked candidates for {pooled}/{len(group)} questions")

    if args.sweep:
        sweep(args.sweep, records, current)
        return
    print("\nleave one file out (fit on the others, measure on the file left out):")
    for path in TRAINING:
        inside = [r for r in training if r.file != path.name]
        outside = [r for r in training if r.file == path.name]
        fitted = fit(inside, current)
        print(table_row(f"  {path.name} current", outside, current))
        print(table_row(f"  {path.name} fitted without it", outside, fitted))
    fitted = fit(training, current)
    print(f"\nfitted on all {len(training)}: {fitted}")
    print(table_row("all training, current", training, current))
    print(table_row("all training, fitted", training, fitted))
    if held_out:
        print(table_row("held out, current", held_out, current))
        print(table_row("held out, fitted", held_out, fitted))


if __name__ == "__main__":
    main()
