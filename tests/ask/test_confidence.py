"""The extractive answer's confidence (apps/ask/confidence.py): the shipped model file rates an answer from a
mail that stands out above one from a crowd of near-equal mails, a low rating makes the answer say it is
unsure, the page shows the level with the estimate, and without a usable model file a similarity rule
decides."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import Client

from apps.ask import confidence
from apps.ask.answer import EvidenceText
from apps.ask.extractive import extractive_answer
from apps.ask.planner import Plan
from apps.ask.textutil import Passage
from tests.ask.conftest import AskMailbox


@pytest.fixture(autouse=True)
def fresh_model() -> Iterator[None]:
    confidence._load.cache_clear()
    yield
    confidence._load.cache_clear()


def _plan() -> Plan:
    plan = Plan(question="what time do natural gas futures close on Friday?", intent="question")
    plan.answer_types, plan.keywords = ["time"], ["natural", "gas", "futures", "close", "friday"]
    return plan


def _item(number: int, subject: str, sentence: str, score: float) -> EvidenceText:
    return EvidenceText(
        number, subject, "exchange@example.com", "2001-10-01", "", sentence, [Passage(sentence, "body")], score=score
    )


ANSWER = "On Friday natural gas futures close at 2:30 PM."


def test_the_shipped_model_rates_a_standout_mail_above_one_among_equals() -> None:
    assert confidence.confidence_model() is not None, "apps/ask/data/confidence.json ships with the app"
    standout = extractive_answer(
        _plan(),
        [_item(1, "Early close", ANSWER, 7.0), _item(2, "Lunch", "The canteen opens at 11:30.", 2.0)],
    )
    among_equals = extractive_answer(
        _plan(),
        [_item(1, "Early close", ANSWER, 5.0)]
        + [_item(n, f"Schedule {n}", f"The desk meets at {n}:15.", 4.9) for n in range(2, 6)],
    )
    assert "**2:30 PM**" in standout.text and "**2:30 PM**" in among_equals.text
    assert standout.chance is not None and among_equals.chance is not None
    assert standout.chance > among_equals.chance
    assert standout.confidence == "high" and not standout.text.startswith("I'm not sure")


def test_a_weak_answer_among_equals_says_it_is_unsure() -> None:
    answer = extractive_answer(
        _plan(),
        [
            _item(n, f"Note {n}", f"Remember the parking garage closes at {n}:00 for cleaning.", 5.0)
            for n in range(1, 6)
        ],
    )
    assert answer.confidence == "low"
    assert answer.text.startswith("I'm not sure, but the closest answer is")


def test_without_a_model_file_the_similarity_rule_decides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "confidence.json"
    empty.write_text("{}")
    monkeypatch.setenv("MAILAGENT_ASK_CONFIDENCE", str(empty))
    answer = extractive_answer(_plan(), [_item(1, "Early close", ANSWER, 7.0)])
    assert confidence.confidence_model() is None
    assert answer.chance is None and answer.confidence in {"high", "medium"}


def test_a_model_fitted_for_other_features_is_reported_and_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    stale = tmp_path / "confidence.json"
    stale.write_text(json.dumps({"features": ["similarity", "top_score"], "coefficients": [1, 1], "intercept": 0}))
    monkeypatch.setenv("MAILAGENT_ASK_CONFIDENCE", str(stale))
    with caplog.at_level(logging.ERROR, logger="apps.ask.confidence"):
        answer = extractive_answer(_plan(), [_item(1, "Early close", ANSWER, 7.0)])
    assert answer.chance is None
    assert "bench/ask_confidence.py --write refits it" in caplog.text


@pytest.mark.django_db
def test_the_page_shows_the_level_and_the_estimate(ask_mailbox: AskMailbox) -> None:
    client = Client()
    client.force_login(ask_mailbox.user)
    response = client.post("/ask/runs/", {"question": "how much is the Schreiber invoice?"})
    page = client.get(response["Location"]).content.decode()
    label = page.split('data-testid="ask-confidence">', 1)[1].split("</span>", 1)[0]
    assert label.startswith("Confidence: ")
    assert "chance that [1] is the mail that answers" in label


@pytest.mark.parametrize(
    "content", ["{not json", '{"features": ["similarity", "top_over_mean_of_5"], "coefficients": [1]}']
)
def test_a_broken_model_file_is_reported_and_answers_still_come(
    content: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    broken = tmp_path / "confidence.json"
    broken.write_text(content)
    monkeypatch.setenv("MAILAGENT_ASK_CONFIDENCE", str(broken))
    with caplog.at_level(logging.ERROR, logger="apps.ask.confidence"):
        answer = extractive_answer(_plan(), [_item(1, "Early close", ANSWER, 7.0)])
    assert answer.chance is None and answer.confidence in {"high", "medium"}
    assert "is not a usable confidence model" in caplog.text
