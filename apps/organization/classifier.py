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
import datetime as dt
import hashlib
import math
import os
import re
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import joblib
import numpy as np

MAX_BODY_CHARS = 6000
MIN_CALIBRATION_SAMPLES = 30
REJECTION_PENALTY = 4.0
REJECTION_NEIGHBOURS = 3
FULL_REFIT_GROWTH = 1.25
# The combiner's weights are refitted (vocabulary kept) once the library has grown by this much since they were
# last fitted: filing drifts (a sender's mail moves to a new folder), and ~1.5 s for 700 files is affordable
# every few dozen decisions, not after each one.
WEIGHT_REFIT_GROWTH = 1.05
FORMAT_VERSION = 6
WORD_PATTERN = r"(?u)\b\w\w+\b"
NEIGHBOURS = 7  # the nearest filed files that vote
NB_ALPHA = 0.1
LIFT_SMOOTHING = 1.0
NB_FLOOR = -30.0
# Leave-one-out rows used to fit the weights: enough for ~12 numbers, bounded so a 10,000-file refit stays fast.
MAX_CALIBRATION_ROWS = 2500
SIMILARITY_CHUNK = 256
SOURCES = ("sender", "domain", "recipients", "thread", "shape", "types")
# Sources whose shared keys count as evidence on their own (a shared file type or subject shape does not).
IDENTIFYING_SOURCES = ("sender", "domain", "recipients", "thread")
# The same three similarities in the local embedder's space (apps.search.embedders): meaning rather than shared
# words, so a file worded unlike anything filed still finds the files it is about.
EMBEDDING_FEATURES = ("embedding_nearest", "embedding_vote", "embedding_centroid")
# Sources whose most recent filings get their own evidence: a sender's mail (or a thread) that moved to another
# folder at some date goes on going there, whatever its older filings say.
RECENT_SOURCES = ("sender", "thread")
RECENT_FEATURES = tuple(f"{source}_recent" for source in RECENT_SOURCES)
RECENT_KEY_NEIGHBOURS = 5  # the filed files sharing the key, closest in date, that vote
FEATURES = (
    "prior",
    "naive_bayes",
    "nearest",
    "vote",
    "centroid",
    "period",
    *SOURCES,
    *EMBEDDING_FEATURES,
    *RECENT_FEATURES,
)
EMBEDDING_TEXT_CHARS = 1000  # header + the start of the body: what the embedder reads of a file
EMBEDDING_KERNEL = 0.05  # the embedding vote's softmax temperature over cosine similarities
TIME_NEIGHBOURS = 10  # the filed files closest in date that vote for the "period" evidence
EXPLAINED_FOLDERS = 3  # the ranked folders whose evidence a prediction spells out (the alternatives shown)
# Pooled weights: fitted with `bench/filing_streams.py --fit-prior --users corman-s,schoolcraft-d,davis-d` on
# those three Enron users' libraries only (the earlier halves, never the replayed later mail); crandell-s,
# stepenovitch-j and sturm-f were not used to fit or choose anything and are reported as held out.
PRIOR_WEIGHTS = {
    "prior": 0.676,
    "naive_bayes": -0.019,
    "nearest": -0.886,
    "vote": -0.160,
    "centroid": 6.817,
    "period": 0.855,
    "sender": 0.042,
    "domain": -0.333,
    "recipients": 0.325,
    "thread": 0.295,
    "shape": 0.149,
    "types": -0.875,
    "embedding_nearest": 0.434,
    "embedding_vote": 0.493,
    "embedding_centroid": 3.680,
    "sender_recent": 0.764,
    "thread_recent": 0.409,
}
# How strongly the fitted weights are pulled towards PRIOR_WEIGHTS (a Gaussian prior's precision, in units of
# one filed file's log likelihood).
PRIOR_STRENGTH = 5.0

# A reply or forward prefix: one to four letters and a colon ("Re:", "FW:", "AW:", "SV:"), repeated; any script.
_REPLY_PREFIX = re.compile(r"^(?:\s*(?:[^\W\d_]{1,4})(?:\[\d+\])?\s*[:\uff1a]\s*)+")
_SPACES = re.compile(r"\s+")
_DIGITS = re.compile(r"\d+")


@dataclass(slots=True)
class Sample:
    header: str  # file name, sender, subject: short, identifying
    body: str
    folder: str = ""
    sender: str = ""
    recipients: tuple[str, ...] = ()
    subject: str = ""  # the subject (mail) or the name's stem (other files)
    message_id: str = ""
    references: tuple[str, ...] = ()  # In-Reply-To and References
    types: tuple[str, ...] = ()  # the file's suffix and its attachments' suffixes
    date: float = math.nan  # POSIX seconds of the mail's or document's own date, NaN when unknown
    # The file's embedding_text through the local embedder (L2-normalised), None when not embedded: the
    # embedding evidence is then absent for this file, the rest still counts.
    embedding: np.ndarray | None = None


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


def thread_subject(subject: str) -> str:
    return _SPACES.sub(" ", _REPLY_PREFIX.sub("", subject)).strip().lower()


def _suffix(name: str) -> str:
    suffix = Path(name).suffix.lower()
    return suffix if 1 < len(suffix) <= 8 else ""


def make_sample(*, name: str, text: str, metadata: dict[str, Any], folder: str = "") -> Sample:
    sender_address = str(metadata.get("sender") or "").lower()
    sender = " ".join(str(metadata.get(key) or "") for key in ("sender", "sender_name")).strip()
    title = str(metadata.get("title") or "")
    stem = Path(name).stem.replace("_", " ").replace("-", " ")
    header = " | ".join(part for part in (stem, Path(name).suffix.lower(), sender, title) if part)
    is_mail = bool(sender_address or title)
    attachments = [str(a) for a in metadata.get("attachments") or []]
    references = [str(r) for r in metadata.get("references") or []]
    if metadata.get("in_reply_to"):
        references.append(str(metadata["in_reply_to"]))
    return Sample(
        date=_timestamp(metadata.get("date")),
        header=header,
        body=text[:MAX_BODY_CHARS],
        folder=folder,
        sender=sender_address,
        recipients=tuple(sorted({str(r).lower() for r in metadata.get("recipients") or [] if r})),
        subject=title if is_mail else Path(name).stem,
        message_id=str(metadata.get("message_id") or ""),
        references=tuple(dict.fromkeys(r for r in references if r)),
        types=tuple(sorted({t for t in (_suffix(name), *(_suffix(a) for a in attachments)) if t})),
    )


def _timestamp(value: Any) -> float:
    try:
        parsed = dt.datetime.fromisoformat(str(value))
    except ValueError:
        return math.nan
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.timestamp()


def _stored_keys(sample: Sample, source: str) -> list[str]:
    """The keys a filed file contributes to a source's counts."""
    if source == "thread":
        keys = [f"m:{sample.message_id}"] if sample.message_id else []
        subject = thread_subject(sample.subject) if sample.sender else ""
        return [f"s:{subject}", *keys] if subject else keys
    return _lookup_keys(sample, source)


def _lookup_keys(sample: Sample, source: str) -> list[str]:
    """The keys a new file is looked up by (for the thread: its subject and the Message-IDs it refers to)."""
    if source == "sender":
        return [sample.sender] if sample.sender else []
    if source == "domain":
        domain = sample.sender.rpartition("@")[2]
        return [domain] if domain else []
    if source == "recipients":
        return list(sample.recipients)
    if source == "thread":
        subject = thread_subject(sample.subject) if sample.sender else ""
        return ([f"s:{subject}"] if subject else []) + [f"m:{r}" for r in sample.references]
    if source == "shape":
        shape = _DIGITS.sub("#", thread_subject(sample.subject))
        return [shape] if shape else []
    if source == "types":
        return list(sample.types)
    raise ValueError(source)


def sample_key(sample: Sample) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for part in (sample.folder, sample.header, sample.body, sample.message_id):
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    # A file embedded since it was learned is a changed row: its embedding evidence must enter the tables.
    digest.update(b"e" if sample.embedding is not None else b"-")
    return digest.hexdigest()


def _light(sample: Sample) -> Sample:
    return replace(sample, body="", embedding=None)


def embedding_text(sample: Sample) -> str:
    """What the embedder reads of a file: its header (name, sender, subject) and the start of its body."""
    return f"{sample.header}\n{sample.body}"[:EMBEDDING_TEXT_CHARS]


def _log_softmax(scores: np.ndarray, mask: np.ndarray) -> np.ndarray:
    masked = np.where(mask, scores, -np.inf)
    top = masked.max(axis=-1, keepdims=True)
    log_norm = top + np.log(np.exp(masked - top).sum(axis=-1, keepdims=True))
    return masked - log_norm


def fit_weights(
    features: np.ndarray, mask: np.ndarray, labels: np.ndarray, prior: np.ndarray, strength: float
) -> np.ndarray:
    """Conditional logit: P(folder) = softmax over allowed folders of features @ w; maximum likelihood with a
    Gaussian prior N(prior, 1/strength) on w. features: (rows, folders, dims), mask: (rows, folders)."""
    from scipy.optimize import minimize

    rows = np.arange(len(labels))

    def objective(w: np.ndarray) -> tuple[float, np.ndarray]:
        scores = features @ w
        log_p = _log_softmax(scores, mask)
        p = np.where(mask, np.exp(log_p), 0.0)
        nll = -float(log_p[rows, labels].sum())
        expected = np.einsum("rf,rfd->d", p, features)
        gradient = expected - features[rows, labels].sum(axis=0)
        difference = w - prior
        return nll + strength * float(difference @ difference), gradient + 2 * strength * difference

    if len(labels) == 0:
        return prior.copy()
    found = minimize(objective, prior.copy(), jac=True, method="L-BFGS-B")
    return np.asarray(found.x, dtype=np.float64)


class FolderClassifier:
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

    @property
    def ready(self) -> bool:
        return self.words is not None and len(self.folders) >= 1

    # ---- vectors ------------------------------------------------------------------------------------------

    @staticmethod
    def _text(sample: Sample) -> str:
        return f"{sample.header}\n{sample.body}"

    def _vectorize(self, samples: Sequence[Sample]) -> tuple[Any, Any]:
        from sklearn.preprocessing import normalize

        counts = self.words.transform([self._text(s) for s in samples]).astype(np.float64)
        return counts, normalize(self.idf.transform(counts))

    def _features(self, samples: Sequence[Sample]) -> Any:
        """TF-IDF rows (the space of the rejection memory)."""
        return self._vectorize(samples)[1]

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

    def _index(self, labelled: Sequence[Sample]) -> None:
        """Every count, vector and table the evidence reads, from scratch (vocabulary already fitted)."""
        from scipy.sparse import csr_matrix

        position = {folder: i for i, folder in enumerate(self.folders)}
        self.keys = [sample_key(s) for s in labelled]
        self.labels = np.array([position[s.folder] for s in labelled], dtype=np.int64)
        self.row_samples = [_light(s) for s in labelled]
        self.dates = np.array([s.date for s in labelled], dtype=np.float64)
        self.term_counts, self.vectors = self._vectorize(labelled)
        membership = csr_matrix(
            (np.ones(len(labelled)), (self.labels, np.arange(len(labelled)))), shape=(len(self.folders), len(labelled))
        )
        self.folder_terms = (membership @ self.term_counts).tocsr()
        self.folder_lengths = np.asarray(self.folder_terms.sum(axis=1)).ravel()
        self.folder_sums = (membership @ self.vectors).tocsr()
        self.key_counts = {source: defaultdict(Counter) for source in SOURCES}
        self.key_rows = {source: defaultdict(list) for source in RECENT_SOURCES}
        for row, (sample, label) in enumerate(zip(labelled, self.labels, strict=True)):
            self._count_keys(sample, int(label), +1)
            self._add_key_rows(sample, row)
        dimensions = Counter(len(s.embedding) for s in labelled if s.embedding is not None)
        self.embedding_dimension = dimensions.most_common(1)[0][0] if dimensions else 0
        self.embeddings, self.embedded = self._stack_embeddings(labelled)
        self.folder_embedding_sums = np.zeros((len(self.folders), self.embedding_dimension))
        np.add.at(self.folder_embedding_sums, self.labels, self.embeddings)

    def _stack_embeddings(self, samples: Sequence[Sample]) -> tuple[np.ndarray, np.ndarray]:
        """The samples' embeddings as rows (zeros where a sample has none or one of another dimension, i.e. from
        another embedder) and which rows are present."""
        matrix = np.zeros((len(samples), self.embedding_dimension), dtype=np.float32)
        present = np.zeros(len(samples), dtype=bool)
        for r, sample in enumerate(samples):
            if sample.embedding is not None and self.embedding_dimension and len(sample.embedding) == len(matrix[r]):
                matrix[r] = sample.embedding
                present[r] = True
        return matrix, present

    def _add_key_rows(self, sample: Sample, row: int) -> None:
        for source in RECENT_SOURCES:
            for key in set(_stored_keys(sample, source)):
                self.key_rows[source][key].append(row)

    def _count_keys(self, sample: Sample, label: int, sign: int) -> None:
        for source in SOURCES:
            table = self.key_counts[source]
            for key in set(_stored_keys(sample, source)):
                table[key][label] += sign

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

    def _refit_weights_if_grown(self) -> None:
        if self.trained_on > max(1, self.weights_fit_size) * WEIGHT_REFIT_GROWTH:
            self.weights = self._fit_weights()
            self.weights_fit_size = self.trained_on
            self.calibrated = self.trained_on >= MIN_CALIBRATION_SAMPLES

    def _fit_weights(self) -> np.ndarray:
        """Leave-one-out evidence for (a sample of) the filed files → the combiner's weights."""
        prior = np.array([self.prior_weights[name] for name in FEATURES])
        features, mask, labels = self.leave_one_out_evidence()
        return fit_weights(features, mask, labels, prior, PRIOR_STRENGTH)

    def leave_one_out_evidence(self, limit: int = MAX_CALIBRATION_ROWS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rows, folders, features) evidence for filed files scored as if new, with the mask of folders that
        still have files once the file is left out, and the true folder of each row. Files alone in their
        folder are skipped (left out, their folder would not exist)."""
        sizes = np.bincount(self.labels, minlength=len(self.folders))
        rows = np.flatnonzero(sizes[self.labels] > 1)
        if len(rows) > limit:
            rows = np.sort(np.random.default_rng(self.seed).choice(rows, size=limit, replace=False))
        if len(rows) == 0:
            return np.zeros((0, len(self.folders), len(FEATURES))), np.zeros((0, len(self.folders)), bool), rows
        samples = [self.row_samples[int(i)] for i in rows]
        features, mask = self._evidence_matrix(
            self.term_counts[rows],
            self.vectors[rows],
            samples,
            (self.embeddings[rows], self.embedded[rows]),
            leave_out=rows,
        )
        return features, mask, self.labels[rows]

    # ---- evidence -----------------------------------------------------------------------------------------

    def _evidence_matrix(
        self,
        counts: Any,
        vectors: Any,
        samples: Sequence[Sample],
        embeddings: tuple[np.ndarray, np.ndarray],
        *,
        leave_out: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Evidence (rows, folders, features) for files given as word counts, TF-IDF rows, samples and
        embeddings (rows, present). With leave_out, row r is the filed file leave_out[r] and everything it
        contributed is taken out first."""
        n_rows, n_folders = len(samples), len(self.folders)
        out = np.zeros((n_rows, n_folders, len(FEATURES)))
        own = self.labels[leave_out] if leave_out is not None else None
        sizes = np.bincount(self.labels, minlength=n_folders).astype(np.float64)
        folder_size = np.tile(sizes, (n_rows, 1))
        if own is not None:
            folder_size[np.arange(n_rows), own] -= 1
        mask = folder_size > 0
        total = folder_size.sum(axis=1, keepdims=True)
        prior = (folder_size + 0.5) / (total + 0.5 * n_folders)
        out[..., FEATURES.index("prior")] = np.log(prior)
        out[..., FEATURES.index("naive_bayes")] = self._naive_bayes(counts, own, mask)
        nearest, vote, centroid = self._similarities(vectors, leave_out, mask)
        out[..., FEATURES.index("nearest")] = nearest
        out[..., FEATURES.index("vote")] = vote
        out[..., FEATURES.index("centroid")] = centroid
        out[..., FEATURES.index("period")] = self._period(samples, leave_out, prior)
        for source in SOURCES:
            out[..., FEATURES.index(source)] = self._lifts(source, samples, own, prior)
        for name, values in zip(EMBEDDING_FEATURES, self._embedding_similarities(*embeddings, leave_out), strict=True):
            out[..., FEATURES.index(name)] = values
        for source, name in zip(RECENT_SOURCES, RECENT_FEATURES, strict=True):
            out[..., FEATURES.index(name)] = self._recent_lifts(source, samples, leave_out, prior)
        out[~mask] = 0.0
        return out, mask

    def _naive_bayes(self, counts: Any, own: np.ndarray | None, mask: np.ndarray) -> np.ndarray:
        """Log posterior of multinomial naive Bayes over words (no folder prior: that is its own feature),
        normalised over the allowed folders and floored."""
        vocabulary = counts.shape[1]
        smoothed = self.folder_terms.copy()
        smoothed.data = np.log1p(smoothed.data / NB_ALPHA)
        lengths = np.asarray(counts.sum(axis=1)).ravel()
        scores = np.asarray((counts @ smoothed.T).todense())  # sum_w x_w log(1 + N_fw / alpha)
        folder_lengths = np.tile(self.folder_lengths, (counts.shape[0], 1))
        if own is not None:
            # Take the file's own words out of its folder's counts.
            for r in range(counts.shape[0]):
                row = counts.getrow(r)
                if row.nnz == 0:
                    continue
                folder_row = self.folder_terms[int(own[r]), row.indices].toarray().ravel()
                before = np.log1p(folder_row / NB_ALPHA)
                after = np.log1p(np.maximum(folder_row - row.data, 0.0) / NB_ALPHA)
                scores[r, own[r]] += float(row.data @ (after - before))
                folder_lengths[r, own[r]] -= lengths[r]
        scores = scores - lengths[:, None] * np.log(folder_lengths + NB_ALPHA * vocabulary)
        normalised = _log_softmax(scores, mask)
        return np.where(mask, np.maximum(normalised, NB_FLOOR), 0.0)

    def _similarities(
        self, vectors: Any, leave_out: np.ndarray | None, mask: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per folder: cosine to its nearest filed file, its share of the NEIGHBOURS nearest files' similarity,
        and cosine to its centroid (the file itself left out of all three when it is a filed file)."""
        n_rows, n_folders = vectors.shape[0], len(self.folders)
        nearest = np.zeros((n_rows, n_folders))
        vote = np.zeros((n_rows, n_folders))
        sums_dot = np.asarray((vectors @ self.folder_sums.T).todense())
        sums_norm2 = np.asarray(self.folder_sums.multiply(self.folder_sums).sum(axis=1)).ravel()
        norm2 = np.tile(sums_norm2, (n_rows, 1))
        if leave_out is not None:
            rows = np.arange(n_rows)
            own = self.labels[leave_out]
            self_norm2 = np.asarray(vectors.multiply(vectors).sum(axis=1)).ravel()
            norm2[rows, own] += self_norm2 - 2.0 * sums_dot[rows, own]
            sums_dot[rows, own] -= self_norm2
        order = np.argsort(self.labels, kind="stable")
        present, starts = np.unique(self.labels[order], return_index=True)
        centroid = sums_dot / np.sqrt(np.maximum(norm2, 1e-12))
        centroid[norm2 <= 1e-9] = 0.0
        for start in range(0, n_rows, SIMILARITY_CHUNK):
            stop = min(n_rows, start + SIMILARITY_CHUNK)
            block = np.asarray((vectors[start:stop] @ self.vectors.T).todense())
            if leave_out is not None:
                block[np.arange(stop - start), leave_out[start:stop]] = -1.0
            nearest[start:stop, present] = np.maximum.reduceat(block[:, order], starts, axis=1)
            k = min(NEIGHBOURS, block.shape[1])
            top = np.argpartition(-block, k - 1, axis=1)[:, :k]
            sims = np.maximum(np.take_along_axis(block, top, axis=1), 0.0)
            labels = self.labels[top]
            for j in range(k):
                np.add.at(vote, (np.arange(start, stop), labels[:, j]), sims[:, j])
            vote[start:stop] /= np.maximum(sims.sum(axis=1, keepdims=True), 1e-9)
        nearest = np.maximum(nearest, 0.0)
        return np.where(mask, nearest, 0.0), np.where(mask, vote, 0.0), np.where(mask, centroid, 0.0)

    def _embedding_similarities(
        self, embeddings: np.ndarray, present: np.ndarray, leave_out: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """In the embedder's space, per folder: cosine to its nearest filed file, its share of the NEIGHBOURS
        nearest files' similarity (the vote a folder of two files can win), cosine to its centroid. Zero for a
        file without an embedding and for folders with no embedded file (left out: the file itself)."""
        n_rows, n_folders = len(embeddings), len(self.folders)
        nearest, vote, centroid = (np.zeros((n_rows, n_folders)) for _ in range(3))
        library = np.flatnonzero(self.embedded)
        rows = np.flatnonzero(present)
        if len(library) == 0 or len(rows) == 0:
            return nearest, vote, centroid
        queries = embeddings[rows].astype(np.float64)
        sums = self.folder_embedding_sums
        dots = queries @ sums.T  # (rows, folders)
        norm2 = np.tile((sums * sums).sum(axis=1), (len(rows), 1))
        own_position: dict[int, int] = {}
        if leave_out is not None:
            # The file is its folder's member: take it out of the sum (its own cosine with itself is 1).
            index = np.arange(len(rows))
            own_rows = leave_out[rows]
            own = self.labels[own_rows]
            self_dot = (queries * queries).sum(axis=1)
            norm2[index, own] += self_dot - 2.0 * dots[index, own]
            dots[index, own] -= self_dot
            own_position = {int(i): j for j, i in enumerate(library)}
        centroid[rows] = np.where(norm2 > 1e-9, dots / np.sqrt(np.maximum(norm2, 1e-9)), 0.0)
        library_vectors = self.embeddings[library].astype(np.float64)
        labels = self.labels[library]
        order = np.argsort(labels, kind="stable")
        present_folders, starts = np.unique(labels[order], return_index=True)
        k = min(NEIGHBOURS, len(library))
        for start in range(0, len(rows), SIMILARITY_CHUNK):
            stop = min(len(rows), start + SIMILARITY_CHUNK)
            block = queries[start:stop] @ library_vectors.T  # (chunk, embedded library files)
            if leave_out is not None:
                for r in range(start, stop):
                    column = own_position.get(int(leave_out[rows[r]]))
                    if column is not None:
                        block[r - start, column] = -np.inf
            best = np.maximum.reduceat(block[:, order], starts, axis=1)
            chunk_rows = rows[start:stop]
            nearest[np.ix_(chunk_rows, present_folders)] = np.where(np.isfinite(best), np.maximum(best, 0.0), 0.0)
            top = np.argpartition(-block, k - 1, axis=1)[:, :k]
            sims = np.take_along_axis(block, top, axis=1)
            # Embedding cosines of unrelated texts are far from zero: weigh the neighbours by a softmax kernel
            # relative to the nearest one, so the vote is decided by the files that are actually close.
            finite = np.isfinite(sims)
            closest = np.max(np.where(finite, sims, -np.inf), axis=1, keepdims=True)
            sims = np.where(finite, np.exp((np.where(finite, sims, 0.0) - closest) / EMBEDDING_KERNEL), 0.0)
            shares = np.zeros((stop - start, n_folders))
            for j in range(k):
                np.add.at(shares, (np.arange(stop - start), labels[top[:, j]]), sims[:, j])
            vote[chunk_rows] = shares / np.maximum(sims.sum(axis=1, keepdims=True), 1e-9)
        return nearest, vote, centroid

    def _period(self, samples: Sequence[Sample], leave_out: np.ndarray | None, prior: np.ndarray) -> np.ndarray:
        """Log-lift of the folder among the TIME_NEIGHBOURS filed files closest in date: which folders the owner
        was filing into around the file's date (folders split by period, projects that start and end)."""
        out = np.zeros((len(samples), len(self.folders)))
        known = np.flatnonzero(~np.isnan(self.dates))
        if len(known) < 2:
            return out
        for r, sample in enumerate(samples):
            if math.isnan(sample.date):
                continue
            candidates = known if leave_out is None else known[known != leave_out[r]]
            k = min(TIME_NEIGHBOURS, len(candidates))
            distance = np.abs(self.dates[candidates] - sample.date)
            closest = candidates[np.argpartition(distance, k - 1)[:k]]
            counts = np.bincount(self.labels[closest], minlength=len(self.folders)).astype(np.float64)
            posterior = (counts + LIFT_SMOOTHING * prior[r]) / (k + LIFT_SMOOTHING)
            out[r] = np.log(posterior) - np.log(prior[r])
        return out

    def _recent_lifts(
        self, source: str, samples: Sequence[Sample], leave_out: np.ndarray | None, prior: np.ndarray
    ) -> np.ndarray:
        """Log-lift of the folder among the RECENT_KEY_NEIGHBOURS filed files that share one of the file's keys
        of this source and are closest to it in date: where that sender's (or thread's) mail went lately."""
        out = np.zeros((len(samples), len(self.folders)))
        table = self.key_rows.get(source, {})
        for r, sample in enumerate(samples):
            if math.isnan(sample.date):
                continue
            rows = {row for key in _lookup_keys(sample, source) for row in table.get(key, ())}
            if leave_out is not None:
                rows.discard(int(leave_out[r]))
            candidates = np.array(sorted(rows), dtype=np.int64)
            if len(candidates):
                candidates = candidates[~np.isnan(self.dates[candidates])]
            if len(candidates) == 0:
                continue
            k = min(RECENT_KEY_NEIGHBOURS, len(candidates))
            distance = np.abs(self.dates[candidates] - sample.date)
            closest = candidates[np.argpartition(distance, k - 1)[:k]]
            counts = np.bincount(self.labels[closest], minlength=len(self.folders)).astype(np.float64)
            posterior = (counts + LIFT_SMOOTHING * prior[r]) / (k + LIFT_SMOOTHING)
            out[r] = np.log(posterior) - np.log(prior[r])
        return out

    def _lifts(self, source: str, samples: Sequence[Sample], own: np.ndarray | None, prior: np.ndarray) -> np.ndarray:
        """Mean over the file's known keys of log(P(folder | key) / P(folder)), smoothed towards the prior."""
        table = self.key_counts[source]
        out = np.zeros((len(samples), len(self.folders)))
        for r, sample in enumerate(samples):
            stored = set(_stored_keys(sample, source)) if own is not None else set()
            lifts = []
            for key in dict.fromkeys(_lookup_keys(sample, source)):
                per_folder = table.get(key)
                if not per_folder:
                    continue
                counts = np.zeros(len(self.folders))
                for label, n in per_folder.items():
                    counts[label] = n
                if own is not None and key in stored:
                    counts[own[r]] -= 1
                total = counts.sum()
                if total <= 0:
                    continue
                posterior = (counts + LIFT_SMOOTHING * prior[r]) / (total + LIFT_SMOOTHING)
                lifts.append(np.log(posterior) - np.log(prior[r]))
            if lifts:
                out[r] = np.mean(lifts, axis=0)
        return out

    def known_keys(self, sample: Sample) -> int:
        return sum(
            1
            for source in IDENTIFYING_SOURCES
            for key in _lookup_keys(sample, source)
            if sum(self.key_counts[source].get(key, Counter()).values()) > 0
        )

    # ---- rejections ---------------------------------------------------------------------------------------

    def set_rejections(self, rejections: Sequence[Sample]) -> FolderClassifier:
        """Remember rejected (file, folder) pairs (`Sample.folder` = the rejected folder) in this classifier's
        TF-IDF space; replaces the previous memory. Called after every (re)training."""
        kept = [s for s in rejections if s.folder in self.folders] if self.ready else []
        self.rejected_folders = [s.folder for s in kept]
        self.rejected_features = self._features(kept) if kept else None
        return self

    def add_rejection(self, rejection: Sample) -> None:
        """One more rejected (file, folder) pair, without re-vectorising the others."""
        from scipy.sparse import vstack

        if not self.ready or rejection.folder not in self.folders:
            return
        row = self._features([rejection])
        current = self.rejected_features
        self.rejected_features = row if current is None else vstack([current, row]).tocsr()
        self.rejected_folders = [*self.rejected_folders, rejection.folder]

    def rejection_pressure(self, vector: Any) -> np.ndarray:
        """Per folder: the summed cosine similarity of the file to its nearest files rejected for that folder."""
        pressure = np.zeros(len(self.folders))
        if self.rejected_features is None:
            return pressure
        similarities = np.asarray((self.rejected_features @ vector.T).todense()).ravel()
        by_folder: dict[str, list[float]] = {}
        for folder, similarity in zip(self.rejected_folders, similarities, strict=True):
            if similarity > 0:
                by_folder.setdefault(folder, []).append(float(similarity))
        index = {folder: i for i, folder in enumerate(self.folders)}
        for folder, values in by_folder.items():
            pressure[index[folder]] = sum(sorted(values, reverse=True)[:REJECTION_NEIGHBOURS])
        return pressure

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

    def _explain(
        self, sample: Sample, vector: Any, contributions: np.ndarray, folder: int, limit: int = 5
    ) -> tuple[list[str], list[str]]:
        """Short reasons for `folder`, strongest first (shared metadata, the filed file it is most like), and the
        words it shares with the folder."""
        reasons: list[tuple[float, str]] = []
        # Contribution relative to the average folder: what sets this folder apart.
        relative = contributions[folder] - contributions.mean(axis=0)
        for source in SOURCES:
            index = FEATURES.index(source)
            strength = float(relative[index])
            # Only a key over-represented in the folder, counted for it by a positive weight, points there.
            if strength <= 0.05 or self.weights[index] <= 0 or contributions[folder, index] <= 0:
                continue
            for key in _lookup_keys(sample, source):
                per_folder = self.key_counts[source].get(key)
                if per_folder and per_folder.get(folder, 0) > 0:
                    shown = key.split(":", 1)[1] if source == "thread" else key
                    if source == "thread" and key.startswith("m:"):
                        text = "a reply to a mail filed there"
                    else:
                        label = {"types": "file type", "shape": "subject pattern"}.get(source, source)
                        text = f"{label} “{shown}” ({per_folder[folder]} of {sum(per_folder.values())} filed there)"
                    reasons.append((strength, text))
                    break
        text_strength = float(
            relative[[FEATURES.index(n) for n in ("naive_bayes", "nearest", "vote", "centroid")]].sum()
        )
        meaning_strength = float(relative[[FEATURES.index(n) for n in EMBEDDING_FEATURES]].sum())
        if text_strength > 0 or meaning_strength > 0:
            like = self._nearest_filed(sample, vector, folder, by_meaning=meaning_strength > text_strength)
            if like:
                reasons.append((max(text_strength, meaning_strength), f"most like “{like}” filed there"))
        words: list[str] = []
        if text_strength > 0 and vector.nnz:
            centroid = self.folder_sums.getrow(folder)
            shared = vector.multiply(centroid)
            if shared.nnz:
                names = self.names
                shared = shared.tocoo()
                for position in np.argsort(-shared.data)[:limit]:
                    words.append(str(names[shared.col[position]]))
        return [text for _, text in sorted(reasons, key=lambda item: -item[0])], words[:limit]

    def _nearest_filed(self, sample: Sample, vector: Any, folder: int, *, by_meaning: bool) -> str:
        """The subject (or name) of the folder's filed file closest to `sample`: by embedding when asked and both
        have one, else by TF-IDF. Empty when nothing in the folder is similar at all."""
        rows = np.flatnonzero(self.labels == folder)
        if len(rows) == 0:
            return ""
        embedding = self._stack_embeddings([sample])
        embedded = rows[self.embedded[rows]] if len(self.embedded) else rows[:0]
        if by_meaning and embedding[1][0] and len(embedded):
            similarity = self.embeddings[embedded] @ embedding[0][0]
            best = int(embedded[int(np.argmax(similarity))])
        else:
            similarity = np.asarray((self.vectors[rows] @ vector.T).todense()).ravel()
            if not len(similarity) or similarity.max() <= 0:
                return ""
            best = int(rows[int(np.argmax(similarity))])
        filed = self.row_samples[best]
        title = _SPACES.sub(" ", filed.subject or filed.header).strip()
        return title[:77] + "…" if len(title) > 80 else title

    # ---- persistence --------------------------------------------------------------------------------------

    def save(self, path: Path) -> os.stat_result:
        """Write the model to `path` atomically: a temporary file of its own (a retrain and an upload may save
        the same library's model at once), then one rename over the old model. Returns the new file's stat."""
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-", suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as stream:
                joblib.dump(self, stream)
                stream.flush()
                written = os.fstat(stream.fileno())
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        return written

    @classmethod
    def load(cls, path: Path) -> FolderClassifier | None:
        try:
            loaded = joblib.load(path)
        except (OSError, EOFError, ValueError, AttributeError, ModuleNotFoundError):
            return None
        if not isinstance(loaded, cls) or getattr(loaded, "version", 0) != FORMAT_VERSION:
            return None
        return loaded
