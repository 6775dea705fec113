"""The folder classifier's combiner: one weight per kind of evidence (a conditional logit), fitted on the
library's leave-one-out evidence and pulled towards PRIOR_WEIGHTS; that fit is the calibration."""

from __future__ import annotations

import numpy as np

from apps.organization.filing_evidence import FolderEvidence, _log_softmax
from apps.organization.filing_samples import FEATURES

MIN_CALIBRATION_SAMPLES = 30
# The combiner's weights are refitted (vocabulary kept) once the library has grown by this much since they were
# last fitted: filing drifts (a sender's mail moves to a new folder), and ~1.5 s for 700 files is affordable
# every few dozen decisions, not after each one.
WEIGHT_REFIT_GROWTH = 1.05
# Leave-one-out rows used to fit the weights: enough for ~12 numbers, bounded so a 10,000-file refit stays fast.
MAX_CALIBRATION_ROWS = 2500
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


class CombinerFitting(FolderEvidence):
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
