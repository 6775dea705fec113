"""The learned folder classifier (one per library): several kinds of evidence per (file, folder), combined by one
small calibrated model.

Evidence, none of it from word lists:
- text: word counts of the file's name, sender, subject and body, as a multinomial naive Bayes posterior, as
  TF-IDF cosine similarity to the folder's centroid, to its nearest filed file, and as the folder's share of
  the file's nearest filed neighbours (a vote that works for a folder holding two files);
- metadata, each as a smoothed log-lift log P(folder | key) / P(folder) over the keys the file shares with
  filed files: the sender, the sender's domain, the recipients, the thread (the subject without reply/forward
  prefixes, and Message-ID links: a reply to a filed mail finds that mail's folder), the subject's or name's
  shape (digits folded), attachment and file types;
- recent filing: the folder's log-lift among the few filed files closest in date (the "period"), and among
  the few closest in date that share the file's sender or thread (where that sender's mail went lately, when
  its older mail went elsewhere);
- meaning: the file's header and opening through the local embedder (apps.search.embedders; the app keeps
  the vectors in FileEmbedding), as cosine to the folder's centroid and nearest filed file and as a
  nearest-neighbour vote with a softmax kernel; absent for a file without an embedding;
- the folder's size (a prior).

The combiner is a conditional logit: one weight per kind of evidence, shared by all folders, softmax over the
folders. It is fitted on leave-one-out evidence of the library's own files (each filed file scored as if it
were new, itself left out of every count, centroid and neighbour list), by penalised maximum likelihood pulled
towards PRIOR_WEIGHTS, the weights pooled over other people's filing (see below). A handful of weights fitted
by likelihood is what calibration is, and the pull towards the pooled prior keeps the confidence meaningful
from the first few filed files on, when a per-folder model or a temperature could not be estimated.

Rejections ("not folder X for this file") are a memory next to the model: each rejected file is kept as its
TF-IDF vector with the folder it was rejected for, and a new file's logit for X is lowered by
REJECTION_PENALTY times the summed cosine similarity of its REJECTION_NEIGHBOURS nearest files rejected for X.
The penalty (4) is set for this combiner's logit scale so that a few rejections of one kind of file stop the
suggestion (tests/organization/test_learning.py); it was not tuned on the filing streams.

A library with a single folder suggests it for files that share evidence with it, at Laplace's N/(N+1): the
doubt is only whether the file opens a new folder.

Learning a decision is incremental: the new file's counts, vector and neighbours are added and the vocabulary
is kept (the weights are refitted once the library has grown by WEIGHT_REFIT_GROWTH since their last fit),
until the library has grown by a quarter since the last full fit (or a folder appeared or went away); then the
next training is a full fit.

Pure scikit-learn + numpy + scipy: no Django here, so the benchmarks and the app share exactly this code."""

from __future__ import annotations

import copy
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from apps.organization.filing_combiner import MIN_CALIBRATION_SAMPLES, PRIOR_WEIGHTS, CombinerFitting
from apps.organization.filing_evidence import _log_softmax
from apps.organization.filing_explain import EXPLAINED_FOLDERS, Explanations
from apps.organization.filing_persistence import FORMAT_VERSION, ModelFile
from apps.organization.filing_rejections import REJECTION_PENALTY, RejectionMemory

# Sample is pickled with the model (FolderClassifier.row_samples): model files saved before the split name it
# apps.organization.classifier.Sample, so it must stay importable from here.
from apps.organization.filing_samples import FEATURES, Sample, _light, sample_key

FULL_REFIT_GROWTH = 1.25
WORD_PATTERN = r"(?u)\b\w\w+\b"


@dataclass(slots=True)
class Prediction:
    ranked: list[tuple[str, float]]  # every allowed folder, most likely first, calibrated probabilities
    evidence: list[str] = field(default_factory=list)  # what pointed to the top folder, strongest first
    known_words: int = 0  # distinct words of the file that occur in the filed files' vocabulary
    known_keys: int = 0  # sender, domain, recipients or thread keys the file shares with filed files
    calibrated: bool = False  # the weights were fitted on at least MIN_CALIBRATION_SAMPLES of the owner's files
    # What points to each of the EXPLAINED_FOLDERS best folders, strongest first (the top one's is `evidence`):
    # the alternatives shown when the suggestion abstains say why each is a candidate.
    evidence_by_folder: dict[str, list[str]] = field(default_factory=dict)
    # Folders lowered because similar files were rejected for them: {folder: summed similarity}.
    rejected_like: dict[str, float] = field(default_factory=dict)

    @property
    def top(self) -> tuple[str, float] | None:
        return self.ranked[0] if self.ranked else None

    @property
    def has_evidence(self) -> bool:
        """The file shares words or an identifying key (sender, thread...) with the filed files."""
        return bool(self.known_words or self.known_keys)


class FolderClassifier(CombinerFitting, RejectionMemory, Explanations, ModelFile):
    def __init__(self, *, seed: int = 0, prior_weights: dict[str, float] | None = None) -> None:
        self.seed = seed
        self.prior_weights = dict(prior_weights or PRIOR_WEIGHTS)
        self.words: Any = None  # CountVectorizer: the vocabulary
        self.names: Any = None  # the vocabulary's words by column
        self.idf: Any = None  # TfidfTransformer
        self.folders: list[str] = []
        self.counts: dict[str, int] = {}
        self.weights = np.array([self.prior_weights[name] for name in FEATURES])
        self.temperature = 1.0  # kept for ClassifierState; the weights carry the calibration
        self.calibrated = False
        self.trained_on = 0
        self.full_fit_size = 0
        self.weights_fit_size = 0  # library size when the weights were last fitted
        self.train_seconds = 0.0
        self.incremental = False
        self.version = FORMAT_VERSION
        self.rejected_features: Any = None  # TF-IDF rows (L2-normalised), one per rejection
        self.rejected_folders: list[str] = []
        self.rejection_penalty = REJECTION_PENALTY
        # The library as the evidence sees it.
        self.keys: list[str] = []  # sample_key per row
        self.labels = np.zeros(0, dtype=np.int64)  # folder index per row
        self.dates = np.zeros(0)  # the filed files' own dates (NaN: unknown)
        self.row_samples: list[Sample] = []  # the filed files without their bodies: their metadata keys
        self.vectors: Any = None  # TF-IDF rows, L2-normalised (rows x vocabulary, CSR)
        self.term_counts: Any = None  # word counts per row (CSR), for naive Bayes
        self.folder_terms: Any = None  # word counts per folder (folders x vocabulary, CSR)
        self.folder_lengths = np.zeros(0)
        self.folder_sums: Any = None  # summed TF-IDF rows per folder (folders x vocabulary, CSR)
        self.key_counts: dict[str, dict[str, Counter[int]]] = {}  # source -> key -> folder index -> files
        self.key_rows: dict[str, dict[str, list[int]]] = {}  # RECENT_SOURCES: source -> key -> filed rows
        self.embedding_dimension = 0
        self.embeddings = np.zeros((0, 0), dtype=np.float32)  # the filed files' embeddings (zero rows: none)
        self.embedded = np.zeros(0, dtype=bool)  # which filed files have an embedding
        self.folder_embedding_sums = np.zeros((0, 0))  # summed embeddings per folder

    # ---- fitting ------------------------------------------------------------------------------------------

    def fit(self, samples: Sequence[Sample]) -> FolderClassifier:
        from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer

        started = time.perf_counter()
        labelled = [s for s in samples if s.folder]
        self.counts = dict(Counter(s.folder for s in labelled))
        self.folders = sorted(self.counts)
        self.trained_on = len(labelled)
        self.calibrated = False
        self.weights = np.array([self.prior_weights[name] for name in FEATURES])
        self.words = None
        if not self.folders:
            self.train_seconds = time.perf_counter() - started
            return self
        self.words = CountVectorizer(
            token_pattern=WORD_PATTERN,
            max_df=0.9 if len(labelled) >= 10 else 1.0,
            max_features=100_000,
            dtype=np.float64,
        )
        counts = self.words.fit_transform([self._text(s) for s in labelled])
        self.idf = TfidfTransformer(sublinear_tf=True).fit(counts)
        self.names = self.words.get_feature_names_out()
        self._index(labelled)
        self.weights = self._fit_weights()
        self.calibrated = len(labelled) >= MIN_CALIBRATION_SAMPLES
        self.full_fit_size = len(labelled)
        self.weights_fit_size = len(labelled)
        self.incremental = False
        self.train_seconds = time.perf_counter() - started
        return self

    def needs_full_fit(self, samples: Sequence[Sample]) -> bool:
        labelled = [s for s in samples if s.folder]
        return (
            not self.ready
            or sorted({s.folder for s in labelled}) != self.folders
            or len(labelled) > self.full_fit_size * FULL_REFIT_GROWTH
        )

    def update(self, samples: Sequence[Sample]) -> FolderClassifier:
        """A classifier that knows `samples` (every filed file, the new decisions included), built from this one
        by adding the files it has not seen: the vocabulary and the weights are kept. A full fit instead when
        the folders changed, the library grew by a quarter since the last full fit, or a file went away.
        This classifier is left untouched (other threads may be predicting with it)."""
        from scipy.sparse import csr_matrix, vstack

        if self.needs_full_fit(samples):
            return FolderClassifier(seed=self.seed, prior_weights=self.prior_weights).fit(samples)
        started = time.perf_counter()
        labelled = [s for s in samples if s.folder]
        known = Counter(self.keys)
        wanted = Counter(sample_key(s) for s in labelled)
        if known - wanted:  # a filed file left or moved: rebuild the tables (the vocabulary and weights stay)
            updated = copy.copy(self)
            updated.counts = dict(Counter(s.folder for s in labelled))
            updated.trained_on = len(labelled)
            updated._index(labelled)
            updated.incremental = True
            updated._refit_weights_if_grown()
            updated.train_seconds = time.perf_counter() - started
            return updated
        new: list[Sample] = []
        for sample in labelled:
            key = sample_key(sample)
            if known[key] > 0:
                known[key] -= 1
            else:
                new.append(sample)
        updated = copy.copy(self)
        updated.key_rows = {
            source: defaultdict(list, {k: list(v) for k, v in table.items()}) for source, table in self.key_rows.items()
        }
        updated.key_counts = {
            source: defaultdict(Counter, {k: Counter(v) for k, v in table.items()})
            for source, table in self.key_counts.items()
        }
        updated.counts = dict(Counter(s.folder for s in labelled))
        updated.trained_on = len(labelled)
        updated.incremental = True
        if new:
            position = {folder: i for i, folder in enumerate(self.folders)}
            labels = np.array([position[s.folder] for s in new], dtype=np.int64)
            counts, vectors = self._vectorize(new)
            membership = csr_matrix(
                (np.ones(len(new)), (labels, np.arange(len(new)))), shape=(len(self.folders), len(new))
            )
            updated.keys = [*self.keys, *(sample_key(s) for s in new)]
            updated.labels = np.concatenate([self.labels, labels])
            updated.row_samples = [*self.row_samples, *(_light(s) for s in new)]
            updated.dates = np.concatenate([self.dates, [s.date for s in new]])
            updated.term_counts = vstack([self.term_counts, counts]).tocsr()
            updated.vectors = vstack([self.vectors, vectors]).tocsr()
            updated.folder_terms = (self.folder_terms + membership @ counts).tocsr()
            updated.folder_lengths = np.asarray(updated.folder_terms.sum(axis=1)).ravel()
            updated.folder_sums = (self.folder_sums + membership @ vectors).tocsr()
            for row, (sample, label) in enumerate(zip(new, labels, strict=True), start=len(self.keys)):
                updated._count_keys(sample, int(label), +1)
                updated._add_key_rows(sample, row)
            embeddings, embedded = self._stack_embeddings(new)
            updated.embeddings = np.concatenate([self.embeddings, embeddings])
            updated.embedded = np.concatenate([self.embedded, embedded])
            updated.folder_embedding_sums = self.folder_embedding_sums.copy()
            np.add.at(updated.folder_embedding_sums, labels, embeddings)
        updated._refit_weights_if_grown()
        updated.train_seconds = time.perf_counter() - started
        return updated

    # ---- prediction ---------------------------------------------------------------------------------------

    def predict(self, sample: Sample, *, exclude: Sequence[str] = (), only: Sequence[str] = ()) -> Prediction:
        if not self.ready:
            return Prediction(ranked=[])
        counts, vector = self._vectorize([sample])
        evidence, mask = self._evidence_matrix(counts, vector, [sample], self._stack_embeddings([sample]))
        contributions = evidence[0] * self.weights
        logits = contributions.sum(axis=1)
        pressure = self.rejection_pressure(vector)
        logits = logits - self.rejection_penalty * pressure
        allowed = mask[0].copy()
        for i, folder in enumerate(self.folders):
            if folder in exclude or (only and not any(folder == o or folder.startswith(o + "/") for o in only)):
                allowed[i] = False
        if not allowed.any():
            return Prediction(ranked=[])
        # Folders that may not be suggested drop out and the rest is renormalised.
        probabilities = np.exp(_log_softmax(logits[None, :], allowed[None, :])[0])
        if len(self.folders) == 1:
            # One folder: the only doubt is whether the file opens a new one. Laplace's rule of succession over
            # the filed files (each went into a folder that existed, but for the first).
            probabilities = probabilities * self.trained_on / (self.trained_on + 1)
        order = [int(i) for i in np.argsort(-probabilities) if allowed[i]]
        ranked = [(self.folders[i], float(probabilities[i])) for i in order]
        rejected_like = {
            self.folders[i]: round(float(pressure[i]), 3) for i in np.flatnonzero(pressure > 0) if allowed[i]
        }
        explained = {i: self._explain(sample, vector, contributions, i) for i in order[:EXPLAINED_FOLDERS]}
        reasons, words = explained[order[0]]
        return Prediction(
            ranked=ranked,
            evidence=[*reasons, *words],
            evidence_by_folder={
                self.folders[i]: [*reasons, *([f"shared words: {', '.join(words[:4])}"] if words else [])]
                for i, (reasons, words) in explained.items()
            },
            known_words=int(counts.nnz),
            known_keys=self.known_keys(sample),
            calibrated=self.calibrated,
            rejected_like=rejected_like,
        )
