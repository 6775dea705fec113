"""The folder classifier's evidence: for each (file, folder) the value of every kind of evidence in FEATURES
(naive Bayes, TF-IDF and embedding similarities, metadata key lifts, recent filing), for a new file or for a
filed file left out of everything it contributed."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from apps.organization.filing_index import LibraryIndex
from apps.organization.filing_samples import (
    EMBEDDING_FEATURES,
    FEATURES,
    IDENTIFYING_SOURCES,
    RECENT_FEATURES,
    RECENT_SOURCES,
    SOURCES,
    Sample,
    _lookup_keys,
    _stored_keys,
)

NEIGHBOURS = 7  # the nearest filed files that vote
NB_ALPHA = 0.1
LIFT_SMOOTHING = 1.0
NB_FLOOR = -30.0
SIMILARITY_CHUNK = 256
RECENT_KEY_NEIGHBOURS = 5  # the filed files sharing the key, closest in date, that vote
EMBEDDING_KERNEL = 0.05  # the embedding vote's softmax temperature over cosine similarities
TIME_NEIGHBOURS = 10  # the filed files closest in date that vote for the "period" evidence


def _log_softmax(scores: np.ndarray, mask: np.ndarray) -> np.ndarray:
    masked = np.where(mask, scores, -np.inf)
    top = masked.max(axis=-1, keepdims=True)
    log_norm = top + np.log(np.exp(masked - top).sum(axis=-1, keepdims=True))
    return masked - log_norm


class FolderEvidence(LibraryIndex):
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
