"""Filing streams: the app's folder suggestions against an online multinomial naive Bayes, in one run, on real
filing. For each eligible Enron user (inbox subfolders the user filed into themselves; bench/organize.py's
read_enron, so the independent evaluation's held-out users are never read) the mails are digested by the
app's digest and sorted by date; the earlier half is the library already filed in its folders, the later half
arrives one mail at a time. Each arriving mail gets the app's suggestion (FolderClassifier.predict, then the
suggesting rule: abstain below the threshold or when the file shares no evidence with the library), and the
simulated user answers like a person: accept when the suggestion is right, otherwise choose the true folder
(a wrong suggestion is thereby rejected, which the app remembers). The classifier then learns the decision as
the app does (update on the whole library + rejection memory) before the next mail.

The baseline sees the same stream: multinomial naive Bayes over word counts of the same text (the file's
name, sender, subject and body), refitted after every decision, never abstaining; its precision at
confidence >= 0.8 uses its posterior.

Printed per user and overall, for both: online accuracy (a suggestion at or above the threshold that was
right, over all decisions: abstentions count as misses), abstention, precision when suggesting, precision at
confidence >= 0.8, top-1 and top-3 recall regardless of threshold, expected calibration error; then a
reliability table and the suggestion latency (classifier only, digest excluded).

    .venv/bin/python bench/filing_streams.py [--users a,b] [--threshold 0.8] [--retrain-every 1]
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import os
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.organize import Mail, embed_samples, filing_streams, read_enron, reliability_diagram

CONFIDENT = 0.8
ECE_BINS = 10
SIZE_BANDS = ((0, 30, "library <30"), (30, 100, "library 30-99"), (100, 10**9, "library 100+"))


@dataclass(slots=True)
class Tally:
    decisions: int = 0
    suggested: int = 0
    suggested_right: int = 0
    confident: int = 0  # top confidence >= CONFIDENT
    confident_right: int = 0
    top1: int = 0
    top3: int = 0
    outcomes: list[tuple[float, bool]] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        for name in ("decisions", "suggested", "suggested_right", "confident", "confident_right", "top1", "top3"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.outcomes += other.outcomes
        self.latencies += other.latencies

    def row(self) -> dict[str, float]:
        n = max(1, self.decisions)
        return {
            "accuracy": self.suggested_right / n,
            "abstain": 1 - self.suggested / n,
            "precision": self.suggested_right / self.suggested if self.suggested else float("nan"),
            "prec@0.8": self.confident_right / self.confident if self.confident else float("nan"),
            "top1": self.top1 / n,
            "top3": self.top3 / n,
            "ece": expected_calibration_error(self.outcomes),
        }


def expected_calibration_error(outcomes: list[tuple[float, bool]]) -> float:
    if not outcomes:
        return float("nan")
    total = 0.0
    for b in range(ECE_BINS):
        low, high = b / ECE_BINS, (b + 1) / ECE_BINS
        inside = [(c, ok) for c, ok in outcomes if low <= c < high or (b == ECE_BINS - 1 and c == 1.0)]
        if inside:
            gap = abs(sum(c for c, _ in inside) / len(inside) - sum(ok for _, ok in inside) / len(inside))
            total += gap * len(inside) / len(outcomes)
    return total


@dataclass(slots=True)
class Arrival:
    mail: Mail
    sample: Any  # apps.organization.filing_samples.Sample


def digest_stream(
    user: str, mails: list[Mail], workdir: Path, *, embeddings: bool = True, timings: list[float] | None = None
) -> list[Arrival]:
    from apps.organization.digest import digest_file
    from apps.organization.filing_samples import make_sample

    arrivals = []
    for index, mail in enumerate(mails):
        path = workdir / f"{user}-{index}.eml"
        path.write_bytes(mail.raw)
        digest = digest_file(path)
        path.unlink()
        date = digest.metadata.get("date")
        mail.date = dt.datetime.fromisoformat(date) if date else None
        arrivals.append(Arrival(mail, make_sample(name=path.name, text=digest.text, metadata=digest.metadata)))
    arrivals.sort(key=lambda a: (a.mail.date is None, a.mail.date or dt.datetime.min.replace(tzinfo=dt.UTC)))
    if embeddings:
        half = len(arrivals) // 2
        embed_samples([a.sample for a in arrivals[:half]])
        embed_samples([a.sample for a in arrivals[half:]], timings=timings)
    return arrivals


def _score(tally: Tally, ranked: list[tuple[str, float]], suggested: str, truth: str) -> None:
    tally.decisions += 1
    top_folder, top_confidence = ranked[0] if ranked else ("", 0.0)
    if suggested:
        tally.suggested += 1
        tally.suggested_right += int(suggested == truth)
    if ranked:
        tally.outcomes.append((top_confidence, top_folder == truth))
        if top_confidence >= CONFIDENT:
            tally.confident += 1
            tally.confident_right += int(top_folder == truth)
    tally.top1 += int(top_folder == truth)
    tally.top3 += int(truth in [f for f, _ in ranked[:3]])


def library_band(size: int) -> str:
    """The library-size band a decision was made in (MIN_CALIBRATION_SAMPLES = 30 is where the app starts calling
    its confidence calibrated on the owner's own filing)."""
    return next(label for low, high, label in SIZE_BANDS if low <= size < high)


def stream_window(arrivals: list[Arrival], start: int | None, until: int | None) -> tuple[int, int]:
    """(library size at the start, index after the last arrival replayed): the earlier half and the rest by default;
    --start N begins with the first N files filed (a new user's first week), --until M stops at M."""
    first = len(arrivals) // 2 if start is None else min(start, len(arrivals))
    return first, len(arrivals) if until is None else max(first, min(until, len(arrivals)))


def replay_app(
    arrivals: list[Arrival],
    *,
    threshold: float,
    retrain_every: int,
    start: int | None = None,
    until: int | None = None,
    bands: dict[str, Tally] | None = None,
) -> Tally:
    """The app's classifier and suggesting rule, learning each decision as learning.train does. With `bands`, each
    decision is also tallied under the size of the library it was made with."""
    from apps.organization.classifier import FolderClassifier

    first, last = stream_window(arrivals, start, until)
    library = [dataclasses.replace(a.sample, folder=a.mail.folder) for a in arrivals[:first]]
    rejections: list[Any] = []
    classifier = FolderClassifier().fit(library)
    tally = Tally()
    pending = 0
    for arrival in arrivals[first:last]:
        truth = arrival.mail.folder
        started = time.perf_counter()
        prediction = classifier.predict(arrival.sample)
        tally.latencies.append(time.perf_counter() - started)
        top = prediction.top
        # suggesting.classifier_proposal: no folder below the threshold or without evidence in common.
        evidence = getattr(prediction, "has_evidence", bool(prediction.known_words))
        suggested = top[0] if top is not None and top[1] >= threshold and evidence else ""
        _score(tally, prediction.ranked, suggested, truth)
        if bands is not None:
            _score(bands.setdefault(library_band(len(library)), Tally()), prediction.ranked, suggested, truth)
        if suggested and suggested != truth:  # "choose another folder" rejects the suggested one
            rejections.append(dataclasses.replace(arrival.sample, folder=suggested))
        library.append(dataclasses.replace(arrival.sample, folder=truth))
        pending += 1
        if pending >= retrain_every:
            classifier = classifier.update(library)
            classifier.set_rejections(rejections)
            pending = 0
    return tally


def replay_naive_bayes(
    arrivals: list[Arrival],
    *,
    alpha: float,
    start: int | None = None,
    until: int | None = None,
    bands: dict[str, Tally] | None = None,
) -> Tally:
    """Multinomial naive Bayes on word counts, refitted after every decision; always suggests its top folder."""
    import numpy as np
    from sklearn.feature_extraction.text import HashingVectorizer
    from sklearn.naive_bayes import MultinomialNB

    from apps.organization.classifier import WORD_PATTERN

    vectorizer = HashingVectorizer(n_features=2**20, alternate_sign=False, norm=None, token_pattern=WORD_PATTERN)
    texts = [f"{a.sample.header}\n{a.sample.body}" for a in arrivals]
    features = vectorizer.transform(texts)
    labels = np.array([a.mail.folder for a in arrivals])
    first, last = stream_window(arrivals, start, until)
    tally = Tally()
    for i in range(first, last):
        started = time.perf_counter()
        model = MultinomialNB(alpha=alpha).fit(features[:i], labels[:i])
        probabilities = model.predict_proba(features[i])[0]
        tally.latencies.append(time.perf_counter() - started)
        order = np.argsort(-probabilities)
        ranked = [(str(model.classes_[j]), float(probabilities[j])) for j in order]
        _score(tally, ranked, ranked[0][0], str(labels[i]))
        if bands is not None:
            _score(bands.setdefault(library_band(i), Tally()), ranked, ranked[0][0], str(labels[i]))
    return tally


def fit_prior(streams: dict[str, list[Mail]]) -> None:
    """The combiner's weights on every user's library (the earlier half of their filing, never the replayed
    later half), leave-one-out evidence pooled, pulled gently (strength 1) towards the hand-set starting weights."""
    import numpy as np

    from apps.organization.classifier import FolderClassifier
    from apps.organization.filing_combiner import PRIOR_WEIGHTS, fit_weights
    from apps.organization.filing_samples import FEATURES

    pooled: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for user, mails in streams.items():
            arrivals = digest_stream(user, mails, Path(tmp))
            library = [dataclasses.replace(a.sample, folder=a.mail.folder) for a in arrivals[: len(arrivals) // 2]]
            classifier = FolderClassifier().fit(library)
            features, mask, labels = classifier.leave_one_out_evidence()
            print(f"{user}: {len(labels)} leave-one-out rows, {len(classifier.folders)} folders")
            pooled.append((features, mask, labels))
    prior = np.array([PRIOR_WEIGHTS[name] for name in FEATURES])
    # Users differ in folder counts: fit per user and add the log likelihoods by stacking padded folders.
    width = max(f.shape[1] for f, _, _ in pooled)
    features = np.concatenate([np.pad(f, ((0, 0), (0, width - f.shape[1]), (0, 0))) for f, _, _ in pooled])
    mask = np.concatenate([np.pad(m, ((0, 0), (0, width - m.shape[1]))) for _, m, _ in pooled])
    labels = np.concatenate([lab for _, _, lab in pooled])
    weights = fit_weights(features, mask, labels, prior, strength=1.0)
    print("PRIOR_WEIGHTS = {")
    for name, value in zip(FEATURES, weights, strict=True):
        print(f'    "{name}": {value:.3f},')
    print("}")


COLUMNS = ("accuracy", "abstain", "precision", "prec@0.8", "top1", "top3", "ece")


def print_row(user: str, folders: str, decisions: str, system: str, row: dict[str, float]) -> None:
    values = " ".join(f"{row[c]:>9.3f}" for c in COLUMNS)
    print(f"{user:16} {folders:>7} {decisions:>9} {system:>6} {values}")


def band_order(label: str) -> int:
    return [band for _, _, band in SIZE_BANDS].index(label)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000 if ordered else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threshold", type=float, default=0.8, help="the owner's suggest threshold (default 0.8)")
    parser.add_argument("--retrain-every", type=int, default=1, help="decisions between updates (the app: 1)")
    parser.add_argument("--users", default="", help="comma-separated users (default: every eligible one)")
    parser.add_argument("--nb-alpha", type=float, default=0.1, help="naive Bayes smoothing")
    parser.add_argument("--no-embeddings", action="store_true", help="without the local embedder's evidence")
    parser.add_argument(
        "--start",
        type=int,
        default=None,
        help="start with each user's first N filed files as the library (a new user's first week) instead of half",
    )
    parser.add_argument("--until", type=int, default=None, help="stop once the library holds M files")
    parser.add_argument(
        "--tuned", default="", help="comma-separated users the weights were tuned on: totals for them and the others"
    )
    parser.add_argument(
        "--fit-prior",
        action="store_true",
        help="print the combiner's weights fitted on the pooled libraries (earlier halves only): PRIOR_WEIGHTS",
    )
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mailagent.settings")
    import django

    django.setup()

    wanted = {u.strip() for u in args.users.split(",") if u.strip()} or None
    started = time.perf_counter()
    streams = filing_streams(read_enron(users=wanted))
    print(
        f"read {sum(len(v) for v in streams.values())} filed messages of {len(streams)} users in "
        f"{time.perf_counter() - started:.1f}s; threshold {args.threshold}, update every {args.retrain_every}; "
        f"library from {'the earlier half' if args.start is None else f'the first {args.start} files'}"
        f"{'' if args.until is None else f' until {args.until} files'}"
    )
    if args.fit_prior:
        fit_prior(streams)
        return
    header = " ".join(f"{c:>9}" for c in COLUMNS)
    print(f"\n{'user':16} {'folders':>7} {'decisions':>9} {'system':>6} {header}")
    totals = {"app": Tally(), "nb": Tally()}
    tuned = {u.strip() for u in args.tuned.split(",") if u.strip()}
    groups = {(g, s): Tally() for g in ("tuned on", "held out") for s in ("app", "nb")}
    bands: dict[tuple[str, str], Tally] = {}
    embedding_timings: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for user, mails in streams.items():
            arrivals = digest_stream(
                user, mails, Path(tmp), embeddings=not args.no_embeddings, timings=embedding_timings
            )
            folders = Counter(a.mail.folder for a in arrivals)
            sizes = f"{len(folders)}"
            window = {"start": args.start, "until": args.until}
            app_bands: dict[str, Tally] = {}
            nb_bands: dict[str, Tally] = {}
            tallies = {
                "app": replay_app(
                    arrivals, threshold=args.threshold, retrain_every=args.retrain_every, bands=app_bands, **window
                ),
                "nb": replay_naive_bayes(arrivals, alpha=args.nb_alpha, bands=nb_bands, **window),
            }
            for system, found in (("app", app_bands), ("nb", nb_bands)):
                for band, tally in found.items():
                    bands.setdefault((band, system), Tally()).add(tally)
            for system, tally in tallies.items():
                print_row(user, sizes, str(tally.decisions), system, tally.row())
                totals[system].add(tally)
                if tuned:
                    groups["tuned on" if user in tuned else "held out", system].add(tally)
    print()
    for (group, system), tally in groups.items():
        if tally.decisions:
            print_row(group, "", str(tally.decisions), system, tally.row())
    for system, tally in totals.items():
        print_row("all", "", str(tally.decisions), system, tally.row())
    print("\nby the size of the library each decision was made with")
    for (band, system), tally in sorted(bands.items(), key=lambda item: (band_order(item[0][0]), item[0][1])):
        print_row(band, "", str(tally.decisions), system, tally.row())
    for system, tally in totals.items():
        print(f"\nreliability ({system}, top suggestion, all streams)")
        print("\n".join(reliability_diagram(tally.outcomes)))
    for (band, system), tally in sorted(bands.items(), key=lambda item: band_order(item[0][0])):
        if system == "app" and band != SIZE_BANDS[-1][2]:
            print(f"\nreliability (app, {band})")
            print("\n".join(reliability_diagram(tally.outcomes)))
    app = totals["app"].latencies
    print(
        f"\napp suggestion latency (classifier only): p50 {percentile(app, 0.5):.1f} ms, "
        f"p95 {percentile(app, 0.95):.1f} ms"
    )
    if embedding_timings:
        print(
            f"embedding one new file (once, when it arrives; {len(embedding_timings)} files): "
            f"p50 {percentile(embedding_timings, 0.5):.1f} ms, p95 {percentile(embedding_timings, 0.95):.1f} ms"
        )


if __name__ == "__main__":
    main()
