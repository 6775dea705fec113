"""Parser benchmark: stream the Enron inbox tarball and time parse_message() alone.

    .venv/bin/python bench/parse.py [--limit N] [--payloads] [--profile] [--archive PATH]

Messages are read straight from the .tar.gz (no unpacking to disk); only the parse_message() calls are
timed, decompression is not. --profile runs the same loop under cProfile and prints the top functions.
Target: >= 3,000 msg/s on one core.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
ENRON = REPO_ROOT.parent / "shared" / "data" / "enron" / "enron-inbox.tar.gz"


@dataclass(slots=True)
class ParseStats:
    count: int = 0
    seconds: float = 0.0  # wall time inside parse_message()
    cpu_seconds: float = 0.0  # this process's CPU time inside parse_message(): stable on a busy machine
    parse_errors: int = 0
    without_message_id: int = 0
    attachments: int = 0
    largest: int = 0
    slowest_seconds: float = 0.0
    slowest_name: str = ""

    @property
    def rate(self) -> float:
        return self.count / self.seconds if self.seconds else 0.0

    @property
    def cpu_rate(self) -> float:
        return self.count / self.cpu_seconds if self.cpu_seconds else 0.0


def iter_messages(archive: Path, limit: int | None) -> Iterator[tuple[str, bytes]]:
    with tarfile.open(archive, mode="r:gz") as tar:
        yielded = 0
        for member in tar:
            if limit is not None and yielded >= limit:
                return
            if not member.isfile():
                continue
            handle = tar.extractfile(member)
            if handle is None:
                continue
            yield member.name, handle.read()
            yielded += 1


def run(archive: Path, limit: int | None, keep_payloads: bool) -> ParseStats:
    sys.path.insert(0, str(REPO_ROOT))
    from apps.accounts.parsing import parse_message

    stats = ParseStats()
    clock, cpu_clock = time.perf_counter, time.process_time
    for name, raw in iter_messages(archive, limit):
        cpu_started = cpu_clock()
        started = clock()
        parsed = parse_message(raw, keep_attachment_payloads=keep_payloads)
        elapsed = clock() - started
        stats.cpu_seconds += cpu_clock() - cpu_started
        stats.seconds += elapsed
        stats.count += 1
        stats.parse_errors += bool(parsed.parse_error)
        stats.without_message_id += not parsed.message_id
        stats.attachments += len(parsed.attachments)
        stats.largest = max(stats.largest, len(raw))
        if elapsed > stats.slowest_seconds:
            stats.slowest_seconds, stats.slowest_name = elapsed, name
    return stats


def report(stats: ParseStats, wall: float) -> None:
    print(f"messages           {stats.count:,}")
    print(
        f"parse seconds      {stats.seconds:.2f} wall, {stats.cpu_seconds:.2f} CPU  (run incl. gunzip/untar {wall:.2f})"
    )
    print(f"parse msg/s        {stats.rate:,.0f} by wall time, {stats.cpu_rate:,.0f} by CPU time (one core)")
    print(f"with parse_error   {stats.parse_errors:,}")
    print(f"no Message-ID      {stats.without_message_id:,}")
    print(f"attachments        {stats.attachments:,}")
    print(f"largest message    {stats.largest:,} bytes")
    print(f"slowest message    {stats.slowest_seconds * 1000:.1f} ms  {stats.slowest_name}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=None, help="parse only the first N messages")
    parser.add_argument("--archive", type=Path, default=ENRON)
    parser.add_argument("--payloads", action="store_true", help="keep attachment payloads (default: drop)")
    parser.add_argument("--profile", action="store_true", help="run under cProfile and print the top 30")
    args = parser.parse_args(argv)
    if not args.archive.exists():
        print(f"{args.archive} not found (../shared/data is only present in the team's workspace)", file=sys.stderr)
        return 2

    started = time.perf_counter()
    if args.profile:
        profiler = cProfile.Profile()
        stats = profiler.runcall(run, args.archive, args.limit, args.payloads)
        report(stats, time.perf_counter() - started)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(30)
    else:
        stats = run(args.archive, args.limit, args.payloads)
        report(stats, time.perf_counter() - started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
