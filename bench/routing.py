"""Routing benchmark: 1,000 filters x 10,000 Enron messages through the real rule set.

    .venv/bin/python bench/routing.py [--filters 1000] [--messages 10000] [--directors 100]

Messages are parsed from ../shared/data/enron with the project's parser; filters are generated from the
same corpus (sender addresses, subject and body words, recipients, dates) across `--directors` directors,
so some match and most do not, like a real rule list. Prints evaluations per second, where an evaluation
is one (filter, message) pair decided, and the pattern searches actually executed (a director already
routed skips its remaining filters). Asserts nothing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import re
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
ENRON = REPO.parent / "shared" / "data" / "enron" / "enron-inbox.tar.gz"


def setup_django(workdir: Path) -> None:
    os.environ["DATA_DIR"] = str(workdir / "data")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mailagent.settings")
    sys.path.insert(0, str(REPO))
    import django

    django.setup()


def read_messages(limit: int) -> list[bytes]:
    raws: list[bytes] = []
    with tarfile.open(ENRON, "r:gz") as archive:
        for member in archive:
            if not member.isfile():
                continue
            handle = archive.extractfile(member)
            if handle is not None:
                raws.append(handle.read())
            if len(raws) >= limit:
                break
    return raws


def to_rows(raws: list[bytes]) -> list[dict[str, Any]]:
    from apps.accounts.parsing import parse_message

    rows = []
    for number, raw in enumerate(raws, start=1):
        parsed = parse_message(raw, keep_attachment_payloads=False)

        def people(items: Any) -> list[dict[str, str]]:
            return [{"name": p.name, "address": p.address} for p in items]

        rows.append(
            {
                "id": number,
                "account__owner_id": 1,
                "date": parsed.date,
                "stored_at": parsed.date,
                "from_name": parsed.from_.name if parsed.from_ else "",
                "from_address": parsed.from_.address if parsed.from_ else "",
                "to": people(parsed.to),
                "cc": people(parsed.cc),
                "bcc": people(parsed.bcc),
                "subject": parsed.subject,
                "body_text": parsed.body_text,
            }
        )
    return rows


WORD = re.compile(r"[A-Za-z]{5,}")


def make_filters(rows: list[dict[str, Any]], count: int, directors: int, seed: int = 7) -> list[Any]:
    import regex

    from apps.routing.matching import CompiledFilter

    rng = random.Random(seed)
    senders = sorted({r["from_address"] for r in rows if r["from_address"]})
    recipients = sorted({p["address"] for r in rows for p in r["to"] if p["address"]})
    subject_words = sorted({w.lower() for r in rows for w in WORD.findall(r["subject"])})
    body_words = sorted({w.lower() for r in rows[:2000] for w in WORD.findall(r["body_text"][:2000])})
    created = dt.datetime(1990, 1, 1, tzinfo=dt.UTC)
    filters = []
    for number in range(count):
        kind = rng.random()
        if kind < 0.35:
            field, pattern = "from", re.escape(rng.choice(senders)) + "$"
        elif kind < 0.45:
            user = rng.choice(senders).split("@")[0]
            field, pattern = "from", rf"^{re.escape(user[:4])}\w*.*@enron\.com"
        elif kind < 0.60:
            field, pattern = "to", re.escape(rng.choice(recipients))
        elif kind < 0.65:
            field, pattern = "cc", re.escape(rng.choice(recipients))
        elif kind < 0.85:
            a, b = rng.choice(subject_words), rng.choice(subject_words)
            field, pattern = "subject", rf"\b({a}|{b})\b"
        elif kind < 0.97:
            field, pattern = "body", rf"\b{rng.choice(body_words)}\s+{rng.choice(body_words)}\b"
        else:
            field, pattern = "date", rf"^200{rng.randint(0, 2)}-{rng.randint(1, 12):02d}-0{rng.randint(1, 9)}T"
        filters.append(
            CompiledFilter(
                id=number + 1,
                director_id=number % directors + 1,
                director_name=f"director-{number % directors + 1}",
                owner_id=1,
                field=field,
                regex=pattern,
                description="",
                created_at=created,
                pattern=regex.compile(pattern, regex.V0 | regex.IGNORECASE),
            )
        )
    return filters


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--filters", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--directors", type=int, default=100)
    args = parser.parse_args()
    if not ENRON.exists():
        sys.exit(f"{ENRON} not found: this benchmark reads the team's shared Enron corpus")
    with tempfile.TemporaryDirectory(prefix="mailagent-routing-bench-") as tmp:
        setup_django(Path(tmp))
        from apps.routing.matching import RoutableMessage, RuleSet

        started = time.perf_counter()
        rows = to_rows(read_messages(args.messages))
        print(f"parsed {len(rows)} Enron messages in {time.perf_counter() - started:.1f}s (not timed below)")
        filters = make_filters(rows, args.filters, args.directors)
        rules = RuleSet(filters)
        started = time.perf_counter()
        messages = [RoutableMessage.from_row(row) for row in rows]
        prepare = time.perf_counter() - started
        started = time.perf_counter()
        searches = routes = errors = 0
        for message in messages:
            result = rules.route(message, respect_creation=True)
            searches += result.evaluations
            routes += len(result.matches)
            errors += len(result.errors)
        seconds = time.perf_counter() - started
        pairs = len(filters) * len(messages)
        print(
            f"{len(filters)} filters ({args.directors} directors) x {len(messages)} messages: "
            f"{routes} routes, {errors} filter errors, {searches} pattern searches"
        )
        print(f"message preparation: {len(messages) / prepare:,.0f} msg/s")
        print(
            f"routing: {pairs / seconds:,.0f} evaluations/s ({searches / seconds:,.0f} pattern searches/s, "
            f"{len(messages) / seconds:,.0f} msg/s, {seconds:.1f}s)"
        )


if __name__ == "__main__":
    main()
