"""The folder classifier's library index: the vocabulary's word counts and TF-IDF rows of the filed files, the
per-folder sums, the metadata key tables and the filed files' embeddings, built from scratch or extended.
The base of the classifier's parts: it declares the state they share."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from apps.organization.filing_samples import RECENT_SOURCES, SOURCES, Sample, _light, _stored_keys, sample_key


class LibraryIndex:
    """The state every part of FolderClassifier reads (set in FolderClassifier.__init__), and the index."""

    seed: int
    prior_weights: dict[str, float]
    words: Any
    names: Any
    idf: Any
    folders: list[str]
    counts: dict[str, int]
    weights: np.ndarray
    calibrated: bool
    trained_on: int
    weights_fit_size: int
    rejected_features: Any
    rejected_folders: list[str]
    rejection_penalty: float
    keys: list[str]
    labels: np.ndarray
    dates: np.ndarray
    row_samples: list[Sample]
    vectors: Any
    term_counts: Any
    folder_terms: Any
    folder_lengths: np.ndarray
    folder_sums: Any
    key_counts: dict[str, dict[str, Counter[int]]]
    key_rows: dict[str, dict[str, list[int]]]
    embedding_dimension: int
    embeddings: np.ndarray
    embedded: np.ndarray
    folder_embedding_sums: np.ndarray

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
