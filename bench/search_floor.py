"""Where to put the semantic relevance floor (SEMANTIC_FLOOR): cosine similarities of the answers the semantic
side finds for the labelled questions of bench/data/search_questions.json, against the best similarities that
misspelt and meaningless queries reach on the same corpus. Prints numbers, asserts nothing.

    bench/search_floor.py --workdir /work/tmp-search-bench     # a corpus bench/search.py built there
"""

from __future__ import annotations

import argparse
import random
import statistics
import string
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

FLOORS = (0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)


def misspell(text: str, rng: random.Random) -> str:
    """Every word of four letters or more gets one typing slip: two letters swapped or one replaced."""
    words = []
    for word in text.split():
        if len(word) >= 4 and word.isalpha():
            i = rng.randrange(1, len(word) - 1)
            if rng.random() < 0.5:
                word = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
            else:
                word = word[:i] + rng.choice(string.ascii_lowercase) + word[i + 1 :]
        words.append(word)
    return " ".join(words)


def gibberish(rng: random.Random) -> str:
    return " ".join("".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 9))) for _ in range(2))


def quantiles(values: list[float]) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]  # noqa: E731
    middle = statistics.median(ordered)
    return f"min {ordered[0]:.3f} p10 {pick(0.1):.3f} p50 {middle:.3f} p90 {pick(0.9):.3f} max {ordered[-1]:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", required=True, help="A directory bench/search.py built the corpus in.")
    args = parser.parse_args()
    from bench.search import setup_django

    setup_django(Path(args.workdir), postgres=False, migrate=True)
    from apps.accounts.models import MailAccount
    from apps.search.backends import get_search_backend
    from apps.search.backends.base import SearchFilters
    from bench import search_eval

    account = MailAccount.objects.get(name="enron")
    questions = search_eval.load_questions()
    search_eval.resolve_relevant(questions, account.pk)
    backend = get_search_backend()
    filters = SearchFilters(account_ids=(account.pk,), kinds=("message", "attachment"))
    rng = random.Random(7)
    answers: list[float] = []  # similarity of the answer when the semantic side ranks it in its top 10
    answers_semantic_only: list[float] = []  # ... and the keyword side does not find it in its top 100
    noise_top: dict[str, list[float]] = {"misspelt": [], "gibberish": []}
    for question in questions:
        semantic = backend.semantic(question.text, filters=filters, limit=10, snippets=False)
        keyword = {h.message_id for h in backend.keyword(question.text, filters=filters, limit=100, snippets=False)}
        for hit in semantic:
            if hit.message_id in question.relevant:
                answers.append(hit.score)
                if hit.message_id not in keyword:
                    answers_semantic_only.append(hit.score)
                break
        for label, text in (("misspelt", misspell(question.text, rng)), ("gibberish", gibberish(rng))):
            hits = backend.semantic(text, filters=filters, limit=1, snippets=False)
            if hits:
                noise_top[label].append(hits[0].score)
    # What ships: semantic-only rows among the first 20 of a hybrid search (search_page, with the floor).
    from apps.search.selectors import search_page

    rng = random.Random(7)
    padding: dict[str, list[int]] = {"question": [], "misspelt": [], "gibberish": []}
    for question in questions:
        for label, text in (
            ("question", question.text),
            ("misspelt", misspell(question.text, rng)),
            ("gibberish", gibberish(rng)),
        ):
            rows = search_page(text, per_page=20, group=False, base=filters).rows
            padding[label].append(sum(1 for row in rows if row.sources == ["vector"]))
    print(f"questions: {len(questions)}; semantic top-10 finds the answer for {len(answers)}")
    for label, counts in padding.items():
        print(
            f"  meaning-only rows in the first 20 of a hybrid search, {label:<9}: mean {statistics.mean(counts):.1f}"
            f" max {max(counts)}, queries with any {sum(1 for c in counts if c)}/{len(counts)}"
        )
    print(f"  answer similarity:                      {quantiles(answers)}")
    print(
        f"  answers only the semantic side finds:   {quantiles(answers_semantic_only)} (n={len(answers_semantic_only)})"
    )
    for label, values in noise_top.items():
        print(f"  best hit of a {label:<10} query:        {quantiles(values)}")
    print("\n  floor  answers kept  semantic-only answers kept  misspelt queries padded  gibberish padded")
    for floor in FLOORS:
        kept = sum(1 for s in answers if s >= floor)
        only = sum(1 for s in answers_semantic_only if s >= floor)
        mis = sum(1 for s in noise_top["misspelt"] if s >= floor)
        gib = sum(1 for s in noise_top["gibberish"] if s >= floor)
        print(
            f"  {floor:.2f}   {kept:>3}/{len(answers):<3}        {only:>3}/{len(answers_semantic_only):<3}"
            f"                     {mis:>3}/{len(noise_top['misspelt']):<3}                  "
            f"{gib:>3}/{len(noise_top['gibberish'])}"
        )


if __name__ == "__main__":
    main()
