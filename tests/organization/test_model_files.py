"""Classifier model files: a background retrain and an upload (or two retrains) saving the same library's
model at once never collide (issue 32, item 6: both wrote `library-<id>-….tmp`, and the second rename found
the temporary file gone)."""

from __future__ import annotations

import threading
from pathlib import Path

from apps.organization.classifier import FolderClassifier
from apps.organization.filing_samples import make_sample

THREADS = 4
SAVES_PER_THREAD = 8


def _classifier() -> FolderClassifier:
    samples = [
        make_sample(name=f"s{n}.txt", text=f"bank statement balance {n}", metadata={}, folder="finance")
        for n in range(3)
    ] + [
        make_sample(name=f"t{n}.txt", text=f"flight boarding seat {n}", metadata={}, folder="travel") for n in range(3)
    ]
    return FolderClassifier().fit(samples)


def test_concurrent_saves_of_one_model_never_fail_and_leave_a_loadable_model(tmp_path: Path) -> None:
    classifier = _classifier()
    path = tmp_path / "classifiers" / "library-1-123.joblib"
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def save_repeatedly() -> None:
        start.wait()
        for _ in range(SAVES_PER_THREAD):
            try:
                classifier.save(path)
            except BaseException as exc:
                errors.append(exc)

    threads = [threading.Thread(target=save_repeatedly) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    loaded = FolderClassifier.load(path)
    assert loaded is not None and loaded.folders == ["finance", "travel"]
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left behind
