"""Fit (or only evaluate) Ask's answer-confidence model (apps/ask/confidence.py) on labelled Enron questions.

Each question of bench/data/ask_questions.json, search_questions.json and ask_questions_fresh.json is
answered without a language model; the label is whether the mail the answer cites is a labelled one (or a
copy of it), the features are the ones the answer step records (scope["extractive"]["features"]). Prints the
cross-validated ranking quality (AUC) of the model and of the similarity rule used without a model, and how
often the cited mail is right at each level, then (with --write) refits on all questions and writes
apps/ask/data/confidence.json. Refit whenever the ranking changes (the features are its scores).

    .venv/bin/python bench/ask_confidence.py --workdir /work/tmp-search-full          # evaluate only
    .venv/bin/python bench/ask_confidence.py --workdir /work/tmp-search-full --write  # and refit the file

Needs a corpus built by bench/search.py or bench/ask.py (--workdir). Prints numbers, asserts nothing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.ask import is_relevant, load_questions, relevant_keys, run_question  # noqa: E402
from bench.search import setup_django  # noqa: E402

SEARCH_QUESTIONS = REPO / "bench" / "data" / "search_questions.json"
FRESH_QUESTIONS = REPO / "bench" / "data" / "ask_questions_fresh.json"
HIGH, LOW = 0.8, 0.6  # high: an estimated ≥ 80% chance the cited mail answers; low: under 60%
FOLDS = 10


def collect(account: Any) -> tuple[list[list[float]], list[int], list[str]]:
    from apps.ask.warmup import warm_up

    run_question("warm up the model and the vectors", account)
    warm_up()
    questions = load_questions() + load_questions(SEARCH_QUESTIONS) + load_questions(FRESH_QUESTIONS)
    features: list[list[float]] = []
    labels: list[int] = []
    levels: list[str] = []
    for item in questions:
        relevant = tuple(item["targets"])
        outcome, _seconds = run_question(item["question"], account)
        extractive = outcome.scope.get("extractive") or {}
        cited = int(extractive.get("cited") or 0)
        if not extractive.get("features") or not cited:
            continue  # no answer was quoted (nothing matched): the page says so, there is nothing to rate
        row = outcome.evidence[cited - 1]
        features.append([float(x) for x in extractive["features"]])
        labels.append(int(is_relevant(row["message_id"], relevant, relevant_keys(relevant))))
        levels.append(str(outcome.scope.get("confidence")))
    return features, labels, levels


def bands(chances: list[float], labels: list[int]) -> str:
    parts = []
    for name, inside in (
        ("high", lambda c: c >= HIGH),
        ("medium", lambda c: LOW <= c < HIGH),
        ("low", lambda c: c < LOW),
    ):
        picked = [label for chance, label in zip(chances, labels, strict=True) if inside(chance)]
        if picked:
            parts.append(f"{name} {sum(picked)}/{len(picked)} right")
    return ", ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", required=True, help="A corpus database built by bench/search.py or ask.py.")
    parser.add_argument("--write", action="store_true", help="Refit on all questions and write the model file.")
    args = parser.parse_args()
    workdir = Path(args.workdir)
    os.environ.setdefault("DATA_DIR", str(workdir / "data"))
    setup_django(workdir, False)

    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    from apps.accounts.models import MailAccount
    from apps.ask.confidence import FEATURES, model_path

    account = MailAccount.objects.select_related("owner").get(name="enron")
    features, labels, levels = collect(account)
    x, y = np.array(features), np.array(labels)
    print(f"answers rated: {len(y)}, citing a labelled mail: {int(y.sum())}")
    shown = {level: [lab for lev, lab in zip(levels, labels, strict=True) if lev == level] for level in set(levels)}
    print("levels the page showed in this run: " + ", ".join(f"{k} {sum(v)}/{len(v)} right" for k, v in shown.items()))
    print(f"similarity alone (the rule without a model): AUC {roc_auc_score(y, x[:, 0]):.3f}")
    model = LogisticRegression(C=1.0, max_iter=1000)
    folds = StratifiedKFold(FOLDS, shuffle=True, random_state=0)
    held_out = cross_val_predict(model, x, y, cv=folds, method="predict_proba")[:, 1]
    auc = roc_auc_score(y, held_out)
    print(f"model, {FOLDS}-fold cross-validated: AUC {auc:.3f}; {bands(list(held_out), labels)}")
    if not args.write:
        return
    model.fit(x, y)
    data = {
        "about": (
            "Ask's answer-confidence model (apps/ask/confidence.py), written by bench/ask_confidence.py: a"
            " logistic regression estimating the chance that the mail an extractive answer cites answers the"
            " question. Refit it when the ranking changes."
        ),
        "features": list(FEATURES),
        "coefficients": [round(float(c), 6) for c in model.coef_[0]],
        "intercept": round(float(model.intercept_[0]), 6),
        "high": HIGH,
        "low": LOW,
        "fitted": {
            "on": "bench/data/ask_questions.json + search_questions.json over the Enron corpus",
            "date": dt.date.today().isoformat(),
            "answers": len(y),
            "citing_a_labelled_mail": int(y.sum()),
            "cross_validated_auc": round(float(auc), 3),
            "cross_validated_levels": bands(list(held_out), labels),
        },
    }
    path = model_path()
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
