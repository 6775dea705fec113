"""Organization benchmark on real filing: Enron users whose inbox has filed subfolders
(maildir/<user>/inbox/<folder>/ in /work/shared/data/enron/enron-inbox.tar.gz), each message exported as an
.eml file and digested by the app's digest, replayed in date order. The first half of a user's filed mail is
the existing library; each later message arrives in the inbox, gets a suggestion (or an abstention below the
threshold), and is then filed where the user filed it, which teaches the classifier (retrained every
--retrain-every decisions here (default 20); the app retrains after each decision in the background).
When a confident suggestion is wrong, the simulated user first rejects it (as the app's Reject, or Choose
another folder): the rejection is remembered at once and lowers that folder for similar files
(--ignore-rejections replays the same stream without that memory, for a before/after comparison).

taylor-m, motley-m and mccarty-d are never read: their filing is kept for an independent evaluation.

Prints per stream: online accuracy (top folder = final folder, abstentions count as wrong), abstention rate,
precision when not abstaining; a calibration table over all streams; suggestion latency p50/p95 (digest of
the .eml + classifier, no LLM); and the time to retrain on 10,000 decisions.

    .venv/bin/python bench/organize.py [--threshold 0.8] [--users a,b] [--retrain-every 10]
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import itertools
import os
import statistics
import sys
import tarfile
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TARBALL = Path("/work/shared/data/enron/enron-inbox.tar.gz")
HELD_OUT = frozenset({"taylor-m", "motley-m", "mccarty-d"})
MIN_FOLDERS = 2
MIN_MESSAGES = 20


@dataclass(slots=True)
class Mail:
    user: str
    folder: str  # "" = left in the inbox (not filed)
    raw: bytes
    date: dt.datetime | None = None


@dataclass(slots=True)
class StreamResult:
    user: str
    folders: dict[str, int]
    decisions: int = 0
    correct: int = 0
    abstained: int = 0
    confident_correct: int = 0
    rejected: int = 0  # confident suggestions the simulated user rejected (wrong folder)
    outcomes: list[tuple[float, bool]] = field(default_factory=list)  # (top confidence, top was right)


def read_enron(*, include_unfiled: bool = False, users: set[str] | None = None) -> dict[str, list[Mail]]:
    """Filed messages per user (and, with include_unfiled, the messages left at the top of the inbox)."""
    by_user: dict[str, list[Mail]] = defaultdict(list)
    with tarfile.open(TARBALL) as archive:
        for member in archive:
            parts = member.name.split("/")
            if not member.isfile() or len(parts) < 4 or parts[0] != "maildir" or parts[2] != "inbox":
                continue
            user = parts[1]
            if user in HELD_OUT or (users is not None and user not in users):
                continue
            folder = "/".join(parts[3:-1])
            if not folder and not include_unfiled:
                continue
            handle = archive.extractfile(member)
            if handle is not None:
                by_user[user].append(Mail(user=user, folder=folder, raw=handle.read()))
    return by_user


def filing_streams(by_user: dict[str, list[Mail]]) -> dict[str, list[Mail]]:
    streams = {}
    for user, mails in sorted(by_user.items()):
        filed = [m for m in mails if m.folder]
        if len(filed) >= MIN_MESSAGES and len({m.folder for m in filed}) >= MIN_FOLDERS:
            streams[user] = filed
    return streams


def replay(
    user: str,
    mails: list[Mail],
    *,
    threshold: float,
    retrain_every: int,
    workdir: Path,
    latencies: list[float],
    learn_rejections: bool = True,
    rejection_penalty: float | None = None,
) -> StreamResult:
    from apps.organization.classifier import FolderClassifier, Sample, make_sample
    from apps.organization.digest import digest_file

    samples = []
    for index, mail in enumerate(mails):
        path = workdir / f"{user}-{index}.eml"
        path.write_bytes(mail.raw)
        started = time.perf_counter()
        digest = digest_file(path)
        digest_seconds = time.perf_counter() - started
        date = digest.metadata.get("date")
        mail.date = dt.datetime.fromisoformat(date) if date else None
        samples.append((mail, make_sample(name=path.name, text=digest.text, metadata=digest.metadata), digest_seconds))
        path.unlink()
    samples.sort(key=lambda item: (item[0].date is None, item[0].date or dt.datetime.min.replace(tzinfo=dt.UTC)))
    half = len(samples) // 2
    library = []
    for mail, sample, _ in samples[:half]:
        sample.folder = mail.folder
        library.append(sample)
    result = StreamResult(user=user, folders=dict(Counter(m.folder for m in mails)))
    classifier = FolderClassifier().fit(library)
    if rejection_penalty is not None:
        classifier.rejection_penalty = rejection_penalty
    rejections: list[Sample] = []
    since_training = 0
    for mail, sample, digest_seconds in samples[half:]:
        if since_training >= retrain_every:
            classifier = classifier.update(library)
            if rejection_penalty is not None:
                classifier.rejection_penalty = rejection_penalty
            if learn_rejections:
                classifier.set_rejections(rejections)
            since_training = 0
        started = time.perf_counter()
        prediction = classifier.predict(sample)
        latencies.append(digest_seconds + time.perf_counter() - started)
        result.decisions += 1
        top = prediction.top
        if top is None or top[1] < threshold:
            result.abstained += 1
        elif top[0] == mail.folder:
            result.confident_correct += 1
        else:
            result.rejected += 1
            if learn_rejections:
                rejected = dataclasses.replace(sample, folder=top[0])
                rejections.append(rejected)
                classifier.add_rejection(rejected)
        if top is not None:
            result.outcomes.append((top[1], top[0] == mail.folder))
            result.correct += int(top[1] >= threshold and top[0] == mail.folder)
        sample.folder = mail.folder
        library.append(sample)
        since_training += 1
    return result


def calibration_table(outcomes: list[tuple[float, bool]]) -> list[tuple[str, int, float, float]]:
    edges = [0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0001]
    rows = []
    for low, high in itertools.pairwise(edges):
        inside = [(c, ok) for c, ok in outcomes if low <= c < high]
        if inside:
            rows.append(
                (
                    f"{low:.2f}-{min(high, 1.0):.2f}",
                    len(inside),
                    statistics.fmean(c for c, _ in inside),
                    sum(ok for _, ok in inside) / len(inside),
                )
            )
    return rows


def retrain_time(by_user: dict[str, list[Mail]], *, size: int, workdir: Path) -> tuple[int, int, float, float]:
    """Full fit time on `size` decisions (every non-held-out user's filed and unfiled mail, labelled user/folder)
    and the time of the update the app does after one more decision (warm start, vocabulary kept)."""
    from apps.organization.classifier import FolderClassifier, make_sample
    from apps.organization.digest import digest_file

    mails = [m for user in sorted(by_user) for m in by_user[user]][:size]
    samples = []
    for index, mail in enumerate(mails):
        path = workdir / f"r{index}.eml"
        path.write_bytes(mail.raw)
        digest = digest_file(path)
        path.unlink()
        samples.append(
            make_sample(
                name=path.name,
                text=digest.text,
                metadata=digest.metadata,
                folder=f"{mail.user}/{mail.folder or 'inbox'}",
            )
        )
    counts = Counter(s.folder for s in samples)
    last = samples.pop(max(i for i, s in enumerate(samples) if counts[s.folder] > 1))  # a decision in a known folder
    started = time.perf_counter()
    classifier = FolderClassifier().fit(samples)
    full = time.perf_counter() - started
    samples.append(last)
    started = time.perf_counter()
    updated = classifier.update(samples)
    update = time.perf_counter() - started
    if not updated.incremental:
        raise SystemExit("one more decision in a known folder should have been an update, not a full fit")
    return len(samples), len(classifier.folders), full, update


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--retrain-every", type=int, default=20)
    parser.add_argument("--users", default="", help="Comma-separated users (default: every eligible one)")
    parser.add_argument("--retrain-size", type=int, default=10_000, help="0 skips the retrain timing")
    parser.add_argument("--no-streams", action="store_true", help="Only time the retrain")
    parser.add_argument(
        "--ignore-rejections", action="store_true", help="Replay without the rejection memory (the 'before' numbers)"
    )
    parser.add_argument("--rejection-penalty", type=float, default=None, help="Override REJECTION_PENALTY")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mailagent.settings")
    import django

    django.setup()

    wanted = {u.strip() for u in args.users.split(",") if u.strip()} or None
    if wanted and wanted & HELD_OUT:
        parser.error(f"{', '.join(sorted(wanted & HELD_OUT))} are held out for the independent evaluation")
    started = time.perf_counter()
    by_user = read_enron(include_unfiled=args.retrain_size > 0, users=wanted)
    streams = {} if args.no_streams else filing_streams(by_user)
    print(f"read {sum(len(v) for v in by_user.values())} messages in {time.perf_counter() - started:.1f}s")
    latencies: list[float] = []
    outcomes: list[tuple[float, bool]] = []
    total = StreamResult(user="all", folders={})
    memory = "ignored" if args.ignore_rejections else "learned"
    print(
        f"\nthreshold {args.threshold}, retrain every {args.retrain_every} decisions, first half = library, "
        f"rejections of wrong suggestions {memory}\n"
    )
    print(
        f"{'user':16} {'folders':>7} {'decisions':>9} {'online acc':>10} {'abstain':>8} {'precision':>9} "
        f"{'rejected':>8}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for user, mails in streams.items():
            result = replay(
                user,
                mails,
                threshold=args.threshold,
                retrain_every=args.retrain_every,
                workdir=workdir,
                latencies=latencies,
                learn_rejections=not args.ignore_rejections,
                rejection_penalty=args.rejection_penalty,
            )
            outcomes += result.outcomes
            total.decisions += result.decisions
            total.correct += result.correct
            total.abstained += result.abstained
            total.rejected += result.rejected
            answered = result.decisions - result.abstained
            accuracy = result.correct / max(1, result.decisions)
            abstention = result.abstained / max(1, result.decisions)
            precision = result.confident_correct / answered if answered else float("nan")
            print(
                f"{user:16} {len(result.folders):>7} {result.decisions:>9} "
                f"{accuracy:>10.3f} {abstention:>8.3f} {precision:>9.3f} {result.rejected:>8}"
            )
        answered = total.decisions - total.abstained
        print(
            f"{'all':16} {'':>7} {total.decisions:>9} {total.correct / max(1, total.decisions):>10.3f} "
            f"{total.abstained / max(1, total.decisions):>8.3f} {total.correct / max(1, answered):>9.3f} "
            f"{total.rejected:>8}"
        )
        print("\ncalibration (top suggestion, all streams)")
        print(f"{'confidence':>12} {'n':>6} {'mean conf':>10} {'accuracy':>9}")
        for label, count, mean, accuracy in calibration_table(outcomes):
            print(f"{label:>12} {count:>6} {mean:>10.3f} {accuracy:>9.3f}")
        if latencies:
            ordered = sorted(latencies)
            p50 = ordered[len(ordered) // 2] * 1000
            p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] * 1000
            print(f"\nsuggestion latency (digest + classifier, no LLM): p50 {p50:.1f} ms, p95 {p95:.1f} ms")
        if args.retrain_size:
            samples, folders, full, update = retrain_time(by_user, size=args.retrain_size, workdir=workdir)
            print(f"full fit on {samples - 1} decisions ({folders} folders): {full:.1f} s")
            print(f"update after decision {samples} (warm start, what the app does per decision): {update:.1f} s")


if __name__ == "__main__":
    main()
