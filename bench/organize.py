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
import hashlib
import itertools
import os
import statistics
import sys
import tarfile
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    top3: int = 0  # the true folder among the top three, whatever the confidence
    outcomes: list[tuple[float, bool]] = field(default_factory=list)  # (top confidence, top was right)


# Embeddings of the streams' files, kept between runs outside the repository (derived from the third-party mail,
# like the tarball they come from): the embedder is the slow part of a replay and gives the same rows each time.
EMBEDDING_CACHE = Path(tempfile.gettempdir()) / "mailagent-bench-embeddings"
EMBEDDING_TIMED = 40  # arrivals per stream embedded once more, uncached, for the latency


def embed_samples(samples: Sequence[Any], *, timings: list[float] | None = None) -> None:
    """Set each sample's embedding as the app does (classifier.embedding_text through the configured local
    embedder), from the on-disk cache where the same text was embedded before. With `timings`, the first
    EMBEDDING_TIMED samples are also embedded alone, uncached, and the seconds appended (per-file latency)."""
    import numpy as np

    from apps.organization.filing_samples import embedding_text
    from apps.search.embedders import get_embedder

    embedder = get_embedder()
    texts = [embedding_text(s) for s in samples]
    keys = [hashlib.blake2b(f"{embedder.key}\0{t}".encode(), digest_size=16).hexdigest() for t in texts]
    EMBEDDING_CACHE.mkdir(parents=True, exist_ok=True)
    rows: dict[str, np.ndarray] = {}
    for key in dict.fromkeys(keys):
        path = EMBEDDING_CACHE / f"{key}.npy"
        if path.is_file():
            rows[key] = np.load(path)
    missing = [i for i, key in enumerate(keys) if key not in rows]
    for start in range(0, len(missing), 64):
        batch = missing[start : start + 64]
        for i, row in zip(batch, embedder.embed_documents([texts[i] for i in batch]), strict=True):
            rows[keys[i]] = row
            np.save(EMBEDDING_CACHE / f"{keys[i]}.npy", row)
    for sample, key in zip(samples, keys, strict=True):
        sample.embedding = rows[key]
    if timings is not None:
        for text in texts[:EMBEDDING_TIMED]:
            started = time.perf_counter()
            embedder.embed_documents([text])
            timings.append(time.perf_counter() - started)


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
    embeddings: bool = True,
    embedding_latencies: list[float] | None = None,
) -> StreamResult:
    from apps.organization.classifier import FolderClassifier
    from apps.organization.digest import digest_file
    from apps.organization.filing_samples import Sample, make_sample

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
    if embeddings:
        embed_samples([sample for _, sample, _ in samples[:half]])
        embed_samples([sample for _, sample, _ in samples[half:]], timings=embedding_latencies)
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
        result.top3 += int(mail.folder in [f for f, _ in prediction.ranked[:3]])
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


def reliability_diagram(outcomes: list[tuple[float, bool]], *, width: int = 40) -> list[str]:
    """The calibration table as a text reliability diagram: per confidence band, a bar as long as the share of
    top suggestions that were right, with `|` where the mean confidence falls (a calibrated band's bar ends at
    its `|`; a bar short of it is overconfident), the count, and the gap (accuracy - confidence)."""
    lines = [f"{'confidence':>12} {'n':>5}  {'mean':>5} {'right':>5} {'gap':>6}  0{' ' * (width - 2)}1"]
    for label, count, mean, accuracy in calibration_table(outcomes):
        bar = ["#" if i < round(accuracy * width) else " " for i in range(width)]
        bar[min(width - 1, int(mean * width))] = "|"
        lines.append(f"{label:>12} {count:>5}  {mean:>5.3f} {accuracy:>5.3f} {accuracy - mean:>+6.3f}  {''.join(bar)}")
    return lines


def retrain_time(by_user: dict[str, list[Mail]], *, size: int, workdir: Path) -> tuple[int, int, float, float]:
    """Full fit time on `size` decisions (every non-held-out user's filed and unfiled mail, labelled user/folder)
    and the time of the update the app does after one more decision (warm start, vocabulary kept)."""
    from apps.organization.classifier import FolderClassifier
    from apps.organization.digest import digest_file
    from apps.organization.filing_samples import make_sample

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


def add_result(total: StreamResult, result: StreamResult) -> None:
    for name in ("decisions", "correct", "abstained", "confident_correct", "rejected", "top3"):
        setattr(total, name, getattr(total, name) + getattr(result, name))


def print_result(user: str, folders: int | str, result: StreamResult) -> None:
    answered = result.decisions - result.abstained
    accuracy = result.correct / max(1, result.decisions)
    abstention = result.abstained / max(1, result.decisions)
    precision = result.confident_correct / answered if answered else float("nan")
    top3 = result.top3 / max(1, result.decisions)
    print(
        f"{user:16} {folders:>7} {result.decisions:>9} "
        f"{accuracy:>10.3f} {abstention:>8.3f} {precision:>9.3f} {result.rejected:>8} {top3:>6.3f}"
    )


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
    parser.add_argument(
        "--no-embeddings", action="store_true", help="Replay without the local embedder's evidence (files unembedded)"
    )
    parser.add_argument(
        "--tuned",
        default="",
        help="Comma-separated users the weights were tuned on: totals are printed for them and for the others",
    )
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
    embedding_latencies: list[float] = []
    outcomes: list[tuple[float, bool]] = []
    tuned = {u.strip() for u in args.tuned.split(",") if u.strip()}
    total = StreamResult(user="all", folders={})
    groups = {
        "tuned on": StreamResult(user="tuned on", folders={}),
        "held out": StreamResult(user="held out", folders={}),
    }
    memory = "ignored" if args.ignore_rejections else "learned"
    print(
        f"\nthreshold {args.threshold}, retrain every {args.retrain_every} decisions, first half = library, "
        f"rejections of wrong suggestions {memory}\n"
    )
    print(
        f"{'user':16} {'folders':>7} {'decisions':>9} {'online acc':>10} {'abstain':>8} {'precision':>9} "
        f"{'rejected':>8} {'top3':>6}"
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
                embeddings=not args.no_embeddings,
                embedding_latencies=embedding_latencies,
            )
            outcomes += result.outcomes
            add_result(total, result)
            if tuned:
                add_result(groups["tuned on" if user in tuned else "held out"], result)
            print_result(user, len(result.folders), result)
        for name, group in groups.items():
            if group.decisions:
                print_result(name, "", group)
        print_result("all", "", total)
        print("\nreliability diagram (top suggestion, all streams)")
        print("\n".join(reliability_diagram(outcomes)))
        if latencies:
            ordered = sorted(latencies)
            p50 = ordered[len(ordered) // 2] * 1000
            p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] * 1000
            print(f"\nsuggestion latency (digest + classifier, no LLM): p50 {p50:.1f} ms, p95 {p95:.1f} ms")
        if embedding_latencies:
            ordered = sorted(embedding_latencies)
            p50 = ordered[len(ordered) // 2] * 1000
            p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] * 1000
            print(
                f"embedding one new file (once, when it arrives; {len(ordered)} files): "
                f"p50 {p50:.1f} ms, p95 {p95:.1f} ms"
            )
        if args.retrain_size:
            samples, folders, full, update = retrain_time(by_user, size=args.retrain_size, workdir=workdir)
            print(f"full fit on {samples - 1} decisions ({folders} folders): {full:.1f} s")
            print(f"update after decision {samples} (warm start, what the app does per decision): {update:.1f} s")


if __name__ == "__main__":
    main()
