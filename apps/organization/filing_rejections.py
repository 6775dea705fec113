"""The folder classifier's rejection memory: files rejected for a folder, as TF-IDF rows, and how much a new
file is like them (the pressure that lowers that folder's logit)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import numpy as np

from apps.organization.filing_index import LibraryIndex
from apps.organization.filing_samples import Sample

REJECTION_PENALTY = 4.0
REJECTION_NEIGHBOURS = 3


class RejectionMemory(LibraryIndex):
    def set_rejections(self, rejections: Sequence[Sample]) -> Self:
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
