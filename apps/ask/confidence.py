"""How sure the extractive answer is: the estimated chance that the mail it cites answers the question.

A logistic model over two numbers the answer step already has: the cited sentence's similarity to the
question and how far the best evidence thread's ranking score stands above the mean of the best five.
Its coefficients are data, fitted by `bench/ask_confidence.py` on labelled questions over real mail
(data/confidence.json records where, and the cross-validated result), and must be refitted when the ranking
changes. The levels read as: high = an estimated ≥ HIGH chance the cited mail answers, low = below LOW
(the answer says it is unsure). Without the file (or with an empty one), or for evidence without ranking
scores, a similarity rule decides.
"""

from __future__ import annotations

import json
import logging
import math
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

DEFAULT_PATH = Path(__file__).resolve().parent / "data" / "confidence.json"
FEATURES = ("similarity", "top_over_mean_of_5")
TOP = 5
# The rule without a model: the cited sentence's similarity to the question (USE cosine).
UNSURE_SIMILARITY = 0.12


@dataclass(frozen=True, slots=True)
class ConfidenceModel:
    coefficients: tuple[float, ...]
    intercept: float
    high: float
    low: float

    def probability(self, features: list[float]) -> float:
        z = self.intercept + sum(c * x for c, x in zip(self.coefficients, features, strict=True))
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


def model_path() -> Path:
    return Path(os.environ.get("MAILAGENT_ASK_CONFIDENCE") or DEFAULT_PATH)


@cache
def _load(path: str) -> ConfidenceModel | None:
    file = Path(path)
    if not file.exists():
        return None
    try:
        data: dict[str, Any] = json.loads(file.read_text(encoding="utf-8") or "{}")
        if not data.get("coefficients"):
            return None
        if tuple(data.get("features") or ()) != FEATURES or len(data["coefficients"]) != len(FEATURES):
            # A file fitted for other features would rate every answer wrongly.
            raise ValueError(f"fitted on features {data.get('features')}, not {list(FEATURES)}")
        return ConfidenceModel(
            coefficients=tuple(float(c) for c in data["coefficients"]),
            intercept=float(data["intercept"]),
            high=float(data["high"]),
            low=float(data["low"]),
        )
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        # A stale or broken file must not break answers: rate by similarity instead, loudly.
        logger.error(
            "ask: %s is not a usable confidence model (%s): confidence falls back to the similarity rule until"
            " bench/ask_confidence.py --write refits it",
            file,
            exc,
        )
        return None


def confidence_model() -> ConfidenceModel | None:
    return _load(str(model_path()))


def answer_features(similarity: float, scores: list[float]) -> list[float]:
    """FEATURES for an answer quoting a sentence of `similarity`, over evidence scored `scores` (best first):
    the similarity and how far the best score stands above the mean of the best TOP (missing ones count 0, so
    a single match stands far above). 0 when the ranking gave no scores."""
    best = [float(s) for s in scores[:TOP]]
    mean = sum(best) / TOP
    return [float(similarity), best[0] / mean if best and mean > 0 else 0.0]


def confidence_level(features: list[float]) -> tuple[str, float | None]:
    """(high | medium | low, the estimated chance the cited mail answers; None without a model)."""
    model = confidence_model()
    if model is None or features[1] <= 0:  # no model, or evidence the ranking did not score
        similarity = features[0]
        if similarity < UNSURE_SIMILARITY:
            return "low", None
        return ("high" if similarity >= 2 * UNSURE_SIMILARITY else "medium"), None
    chance = model.probability(features)
    if chance < model.low:
        return "low", chance
    return ("high" if chance >= model.high else "medium"), chance
