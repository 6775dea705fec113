"""Issue 11's trial questions on the demo mailbox, without a language model and with the vocabulary file
emptied (no word list helps): each is answered from one cited message, with the asked-for value in it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from apps.ask import vocabulary
from tests.ask.conftest import KEY_QUESTION, AskMailbox
from tests.ask.test_pipeline import ask

pytestmark = pytest.mark.django_db

TRIALS = [
    (
        "did Ergoform ship my replacement desk, and what is the tracking number?",
        ["PP-5521-0938-DE"],
        "Re: Complaint: standing desk delivered damaged (order ER-48213) [Ticket #77104]",
    ),
    ("what time does my return flight from Istanbul leave?", ["19:25"], None),
    ("when is the Schreiber invoice due and how much is it?", ["05.12.2026", "1.428,00 EUR"], None),
    (KEY_QUESTION, ["11/05/2026"], "QNB E-Ekstre - Nisan 2026"),
]


@pytest.fixture(params=["vocabulary", "empty vocabulary"])
def vocabulary_mode(request: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "empty vocabulary":
        empty = tmp_path / "empty.json"
        empty.write_text(json.dumps({}))
        monkeypatch.setenv("MAILAGENT_ASK_VOCABULARY", str(empty))
    vocabulary._load.cache_clear()
    yield request.param
    vocabulary._load.cache_clear()


def cited_numbers(answer: str) -> set[str]:
    return set(re.findall(r"\[(\d+)\]", answer))


@pytest.mark.parametrize(("question", "values", "subject"), TRIALS)
def test_trial_question_answers_from_one_cited_message(
    ask_mailbox: AskMailbox, question: str, values: list[str], subject: str | None
) -> None:
    run, _events = ask(ask_mailbox, question)
    assert run.answer_mode == "extractive"
    for value in values:
        assert value in run.answer, run.answer
    assert len(cited_numbers(run.answer)) == 1, run.answer
    assert run.scope["citation_check"]["ok"], run.scope["citation_check"]
    assert run.scope["extractive"]["kinds_missing"] == []
    if subject:
        cited = int(next(iter(cited_numbers(run.answer))))
        assert run.evidence[cited - 1]["subject"].startswith(subject.split(" [")[0][:30]) or subject in run.answer


@pytest.mark.parametrize(("question", "values", "subject"), TRIALS)
def test_trial_question_answers_without_embeddings(
    ask_mailbox_text: AskMailbox, question: str, values: list[str], subject: str | None
) -> None:
    """Before the embedding backfill has run, the words alone find each answer. The flight's answering mail
    (a reply about a schedule change) never names Istanbul; its thread's booking confirmation does."""
    run, _events = ask(ask_mailbox_text, question)
    assert run.scope["sources"]["local_vector"]["hits"] == 0
    assert run.answer_mode == "extractive", run.answer
    for value in values:
        assert value in run.answer, run.answer
    assert len(cited_numbers(run.answer)) == 1, run.answer


def test_entity_no_candidate_mentions_is_reported_as_such(ask_mailbox_text: AskMailbox) -> None:
    run, _events = ask(ask_mailbox_text, "when does my flight to Reykjavik leave?")
    assert run.answer_mode == "no_evidence"
    assert f"none of the {run.scope['shortlist']} best-matching mails mentions Reykjavik" in run.answer
    assert all(row["related"] for row in run.evidence)


def test_a_reply_is_about_what_its_conversation_names(ask_mailbox: AskMailbox) -> None:
    """The schedule change is a reply that never names Istanbul; its conversation (the booking to Istanbul)
    does, so it is not outranked by a dinner invitation that names the city."""
    run, _events = ask(ask_mailbox, "what time does my return flight from Istanbul leave?")
    top = run.evidence[0]
    assert top["subject"] == "Re: Booking confirmation K7Q2MA \u2013 schedule change on your return flight"
    assert top["features"]["entity"] > 0
    assert "19:25" in run.answer and "[1]" in run.answer
