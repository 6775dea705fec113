"""The folder classifier's explanations: what points to a folder (shared metadata, the filed file the new one
is most like, shared words), as the short texts a suggestion shows."""

from __future__ import annotations

from typing import Any

import numpy as np

from apps.organization.filing_evidence import FolderEvidence
from apps.organization.filing_samples import _SPACES, EMBEDDING_FEATURES, FEATURES, SOURCES, Sample, _lookup_keys

EXPLAINED_FOLDERS = 3  # the ranked folders whose evidence a prediction spells out (the alternatives shown)


class Explanations(FolderEvidence):
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
