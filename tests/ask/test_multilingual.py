# ruff: noqa: RUF001 -- questions and values in Turkish, German, Spanish and Dutch are the point.
"""Ask over mail in English, Turkish, German, Spanish and Dutch (tests/ask/data/multilingual, written before
these questions and before the lexicon left the planner), with the vocabulary file emptied: no word list
helps. A floor on evidence rank and on the value in the extractive answer keeps quality from regressing
silently (the Enron numbers are in bench/ask.py)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from apps.accounts.actions import get_or_create_local_account
from apps.accounts.importers import import_path
from apps.ask import actions, vocabulary
from apps.ask.models import RunStatus
from apps.search import actions as search_actions
from apps.search.backends.sqlite import forget_vector_matrices
from apps.search.gist import forget_gist_matrix
from tests.ask.conftest import AskMailbox, build_ask_mailbox, remove_ask_mailbox

MAIL = Path(__file__).parent / "data" / "multilingual"

# (question, Message-ID of the answering mail, the value the answer must contain)
QUESTIONS = [
    ("what is the tracking number of my Hızlı Kargo parcel?", "hk-7730019245@hizlikargo.example", "HK7730019245"),
    ("what time is my dentist appointment with Dr. Demir?", "randevu-88214@modadis.example", "14:30"),
    (
        "how much do I have to pay Hausverwaltung Krämer for the service charges?",
        "bk-2025-lychener18@hv-kraemer.example",
        "312,45 EUR",
    ),
    (
        "what is the order number of my tyre change appointment at Autohaus Brandt?",
        "wk-20931@autohaus-brandt.example",
        "WK-20931",
    ),
    ("what is the booking code of the hostal in Sevilla?", "hlg-4471@lasgolondrinas.example", "HLG-4471"),
    ("how much is the new monthly fee at Club Deportivo Triana?", "cuota-2027@cdtriana.example", "39,90 €"),
    ("by when must I pay the Gemeente Dijkstad tax bill?", "aanslag-7710339218@dijkstad.example", "30-11-2026"),
    (
        "what is the track and trace code of my PakketDirect parcel?",
        "pd-3SPKD0048813@pakketdirect.example",
        "3SPKD0048813",
    ),
    ("how much is my Northbrook Utilities bill for October?", "nb-bill-2026-10@northbrook-utilities.example", "£84.20"),
]
EVIDENCE_TOP3_FLOOR = 8  # of 9, measured 9 (8 at rank 1)
VALUE_FLOOR = (
    6  # of 9, measured 6 with the vocabulary emptied (answer kind unknown: the two closest sentences are quoted)
)

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def mailbox(django_db_setup: Any, django_db_blocker: Any) -> Iterator[AskMailbox]:
    with django_db_blocker.unblock():
        forget_vector_matrices()
        forget_gist_matrix()
        built = build_ask_mailbox(embeddings=False)
        account = get_or_create_local_account(owner=built.user, name="Multilingual")
        import_path(account, MAIL)
        search_actions.backfill_embeddings(requeue=False, seconds=0)  # search vectors and gists, as the task does
    try:
        yield built
    finally:
        with django_db_blocker.unblock():
            remove_ask_mailbox(built)
            forget_vector_matrices()
            forget_gist_matrix()


@pytest.fixture(autouse=True)
def empty_vocabulary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({}))
    monkeypatch.setenv("MAILAGENT_ASK_VOCABULARY", str(empty))
    vocabulary._load.cache_clear()
    yield
    vocabulary._load.cache_clear()


def test_english_questions_find_answers_in_five_languages_without_a_lexicon(mailbox: AskMailbox) -> None:
    in_top3 = 0
    with_value = 0
    report = io.StringIO()
    for question, message_id, value in QUESTIONS:
        run = actions.create_ask_run(owner=mailbox.user, question=question)
        done = actions.execute_ask_run(run_id=run.pk)
        assert done is not None and done.status == RunStatus.DONE, done.error if done else ""
        ids = [row["message_id"] for row in done.evidence]
        rank = ids.index(message_id) + 1 if message_id in ids else None
        in_top3 += rank is not None and rank <= 3
        with_value += value in done.answer
        report.write(f"{rank} {value in done.answer} {question} → {done.answer[:120]!r}\n")
    print(report.getvalue())
    assert in_top3 >= EVIDENCE_TOP3_FLOOR, report.getvalue()
    assert with_value >= VALUE_FLOOR, report.getvalue()
