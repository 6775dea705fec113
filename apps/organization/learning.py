"""The owner's classifier as the app uses it: trained on the files already filed in library folders (which
include every accepted or chosen suggestion, since those files now live there) and on every rejection (a
rejected suggestion, or a suggestion the owner overrode by choosing another folder: "not folder X for this
file", kept in the classifier's rejection memory), stored as a file under DATA_DIR, reloaded in every process
when it changes, and asked for ranked folders for an inbox file."""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from apps.organization.classifier import FolderClassifier, Prediction
from apps.organization.filing_samples import Sample, embedding_text, make_sample
from apps.organization.models import (
    ClassifierState,
    FileEmbedding,
    FileStatus,
    Library,
    LibraryFile,
    Suggestion,
    SuggestionStatus,
)
from apps.search.embedders import get_embedder

logger = logging.getLogger(__name__)
# Files embedded per training at most: a large library's first training must not wait for the whole library
# (~30 ms a file on this machine's CPU); the rest is embedded by the following trainings, and a file without
# its embedding yet still has every other kind of evidence.
EMBED_PER_TRAINING = 256
EMBED_BATCH = 64

# path → ((mtime_ns, inode), model): a model file is replaced by a rename, so a new file is a new inode even
# when two saves land within the filesystem's timestamp resolution.
_cache: dict[Path, tuple[tuple[int, int], FolderClassifier]] = {}
_lock = threading.Lock()


def model_path(library: Library) -> Path:
    # The creation time is part of the name: a new library that reuses a deleted one's id never loads its model.
    stamp = int(library.created_at.timestamp() * 1_000_000)
    return Path(settings.DATA_DIR) / "organization" / "classifiers" / f"library-{library.pk}-{stamp}.joblib"


def sample_for(file: LibraryFile, *, folder: str = "") -> Sample:
    return make_sample(name=file.name, text=file.digest_text, metadata=file.metadata, folder=folder)


def attach_embeddings(pairs: Sequence[tuple[int, Sample]], *, limit: int | None = None) -> int:
    """Set each sample's embedding (pairs of LibraryFile id and its sample) from the files' stored
    embeddings, embedding and storing at most `limit` of the missing or outdated ones (all with None).
    Returns how many were embedded now. Without a working embedder the samples stay unembedded."""
    if not pairs:
        return 0
    try:
        embedder = get_embedder()
        key = embedder.key
    except Exception:  # a misconfigured or unreachable embedder must not stop filing suggestions
        logger.warning("organization: no embedder, suggesting without embedding evidence", exc_info=True)
        return 0
    texts = {file_id: embedding_text(sample) for file_id, sample in pairs}
    hashes = {
        file_id: hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest() for file_id, text in texts.items()
    }
    stored = {
        row.file_id: row
        for row in FileEmbedding.objects.filter(file_id__in=list(texts), embedder=key).only(
            "file_id", "text_sha256", "vector"
        )
    }
    vectors: dict[int, np.ndarray] = {
        file_id: np.frombuffer(bytes(row.vector), dtype=np.float32)
        for file_id, row in stored.items()
        if row.text_sha256 == hashes[file_id]
    }
    missing = [file_id for file_id in texts if file_id not in vectors]
    if limit is not None:
        missing = missing[:limit]
    for start in range(0, len(missing), EMBED_BATCH):
        batch = missing[start : start + EMBED_BATCH]
        try:
            rows = np.asarray(embedder.embed_documents([texts[i] for i in batch]), dtype=np.float32)
        except Exception:
            logger.warning("organization: embedding %d library files failed", len(batch), exc_info=True)
            break
        FileEmbedding.objects.bulk_create(
            [
                FileEmbedding(file_id=file_id, embedder=key, text_sha256=hashes[file_id], vector=row.tobytes())
                for file_id, row in zip(batch, rows, strict=True)
            ],
            update_conflicts=True,
            unique_fields=["file"],
            update_fields=["embedder", "text_sha256", "vector", "created_at"],
        )
        vectors.update(zip(batch, rows, strict=True))
    embedded_now = sum(1 for file_id in missing if file_id in vectors)
    for file_id, sample in pairs:
        sample.embedding = vectors.get(file_id)
    return embedded_now


def training_samples(library: Library, *, exclude: list[str]) -> list[Sample]:
    files = LibraryFile.objects.filter(library=library, status=FileStatus.FILED).only("path", "digest_text", "metadata")
    pairs = []
    for file in files.iterator(chunk_size=500):
        folder = file.folder
        if not folder or any(folder == ex or folder.startswith(ex + "/") for ex in exclude):
            continue
        pairs.append((file.pk, sample_for(file, folder=folder)))
    attach_embeddings(pairs, limit=EMBED_PER_TRAINING)
    return [sample for _, sample in pairs]


def rejection_samples(library: Library) -> list[Sample]:
    """One sample per (file, rejected folder): rejected suggestions and suggestions overridden by a choice of
    another folder. A decision withdrawn by undo is expired and no longer counts."""
    rejected = (
        Suggestion.objects.filter(file__library=library)
        .exclude(target_folder="")
        .filter(
            Q(status=SuggestionStatus.REJECTED)
            | (Q(status=SuggestionStatus.ACCEPTED, action="choose") & ~Q(final_folder=F("target_folder")))
        )
        .select_related("file")
        .only("target_folder", "file__path", "file__digest_text", "file__metadata")
        .order_by("pk")
    )
    seen: set[tuple[int, str]] = set()
    samples = []
    for suggestion in rejected.iterator(chunk_size=500):
        key = (suggestion.file_id, suggestion.target_folder)
        if key not in seen:
            seen.add(key)
            samples.append(sample_for(suggestion.file, folder=suggestion.target_folder))
    return samples


def train(library: Library, *, exclude: list[str]) -> ClassifierState:
    """Retrain on every filed file: an update from the current weights when there is a classifier with the same
    folders and the library has not grown much since its last full fit, otherwise a full fit."""
    samples = training_samples(library, exclude=exclude)
    previous = load(library)
    classifier = previous.update(samples) if previous is not None else FolderClassifier().fit(samples)
    classifier.set_rejections(rejection_samples(library))
    path = model_path(library)
    written = classifier.save(path)
    with _lock:
        _cache[path] = ((written.st_mtime_ns, written.st_ino), classifier)
    state, _ = ClassifierState.objects.get_or_create(library=library)
    state.trained_at = timezone.now()
    state.samples = classifier.trained_on
    state.folders = classifier.folders
    state.temperature = classifier.temperature
    state.train_seconds = round(classifier.train_seconds, 3)
    state.stale = False
    state.save(update_fields=["trained_at", "samples", "folders", "temperature", "train_seconds", "stale"])
    return state


def load(library: Library) -> FolderClassifier | None:
    path = model_path(library)
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    version = (info.st_mtime_ns, info.st_ino)
    with _lock:
        cached = _cache.get(path)
        if cached and cached[0] == version:
            return cached[1]
    classifier = FolderClassifier.load(path)
    if classifier is not None:
        with _lock:
            _cache[path] = (version, classifier)
    return classifier


def predict(library: Library, file: LibraryFile, *, exclude: list[str], only: list[str]) -> Prediction | None:
    """None when there is no usable classifier yet (no folder with files)."""
    classifier = load(library)
    if classifier is None or not classifier.ready:
        return None
    sample = sample_for(file)
    attach_embeddings([(file.pk, sample)])
    return classifier.predict(sample, exclude=exclude, only=only)


def folder_counts(library: Library) -> dict[str, int]:
    classifier = load(library)
    return dict(classifier.counts) if classifier else {}
