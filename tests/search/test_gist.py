"""Gist vectors (apps/search/gist.py): what is embedded, the background backfill that stores them (the same
entry point the django-q2 task runs), staleness after a re-index, and that the bundled model compares a
paraphrased question with mail written in other words (and another language) by meaning."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from apps.search import actions, gist
from apps.search.gist import (
    GIST_CHARS,
    MIN_CONTINUATION,
    continuation_text,
    forget_gist_matrix,
    get_gist_embedder,
    gist_progress,
    gist_text,
    has_stale_gists,
    message_documents,
    message_similarities,
    nearest_messages,
    similarity,
    stored_gists,
    without_continuation,
)
from apps.search.models import SearchGist

pytestmark = pytest.mark.django_db


def gists_stored(index_all: Callable[..., None]) -> Any:
    """Index the mail made so far and embed its gists as the backfill does; the gist model."""
    index_all(embeddings=False)
    actions.embed_stale_gists()
    embedder = get_gist_embedder()
    assert embedder is not None
    return embedder


def unrelated_mail(make_message: Callable[..., Any]) -> list[Any]:
    """Two mails about nothing any question of this module asks."""
    return [
        make_message("Gas storage report", "Injections at the Sorrento cavern were below plan last week."),
        make_message("Q3 budget review", "Please send your department's spending forecast before the meeting."),
    ]


def test_the_gist_is_the_subject_and_the_senders_own_opening_words() -> None:
    body = (
        "Please send the signed lease to the landlord by Friday, otherwise we lose the deposit.\n"
        + "More words follow here. " * 40
        + "\n-----Original Message-----\nFrom: landlord\n> the quoted request about keys"
    )
    text = gist_text("Lease for the new office", body)
    assert text.startswith("Lease for the new office Please send the signed lease")
    assert "Original Message" not in text and "quoted request" not in text
    assert len(text) <= GIST_CHARS
    assert not text.endswith(" ")
    # A forward with no words of its own is about what it forwards.
    forwarded = gist_text("FW: rota", "-----Original Message-----\nThe night shift rota for March is attached.")
    assert "night shift rota" in forwarded


def test_the_backfill_stores_one_gist_per_message_and_refreshes_a_changed_one(
    make_message: Callable[..., Any], index_all: Callable[..., None]
) -> None:
    first = make_message("Boiler service", "The engineer comes on Tuesday morning to service the boiler.")
    second = make_message(
        "Invoice 2291",
        "Your invoice 2291 over 120 EUR is due on 3 May.",
        attachments=[
            ("invoice.pdf", "Invoice 2291, amount due 120 EUR"),
        ],
    )
    index_all(embeddings=False)
    assert has_stale_gists()
    assert actions.backfill_embeddings(requeue=False) > 0  # search vectors and gists, as the task does
    assert not has_stale_gists()
    documents = message_documents([first.pk, second.pk])
    assert SearchGist.objects.count() == 2  # messages only: the attachment's text has no gist of its own
    assert gist_progress() == (2, 2)
    stored = stored_gists(list(documents.values()), get_gist_embedder().key)  # type: ignore[union-attr]
    assert set(stored) == {row["id"] for row in documents.values()}
    assert all(abs(float(np.linalg.norm(vector)) - 1.0) < 1e-3 for vector in stored.values())

    first.body_text = "The engineer cancelled; the boiler service moves to Thursday."
    first.save()
    index_all(first, embeddings=False)
    assert has_stale_gists()
    changed = message_documents([first.pk])[first.pk]
    assert stored_gists([changed], get_gist_embedder().key) == {}  # type: ignore[union-attr]
    assert actions.embed_stale_gists() == 1
    assert SearchGist.objects.count() == 2


def test_an_interrupted_backfill_resumes_without_duplicates(
    make_message: Callable[..., Any], index_all: Callable[..., None]
) -> None:
    for number in range(5):
        make_message(f"Note {number}", f"Reminder number {number} about the quarterly report.")
    index_all(embeddings=False)
    assert actions.embed_stale_gists(max_documents=2) == 2
    assert gist_progress() == (2, 5)
    assert actions.embed_stale_gists() == 3
    assert actions.embed_stale_gists() == 0
    assert SearchGist.objects.count() == 5


def test_switched_off_nothing_is_embedded(
    settings: Any, make_message: Callable[..., Any], index_all: Callable[..., None]
) -> None:
    settings.SEARCH_GIST_EMBEDDER = "none"
    make_message("Boiler service", "The engineer comes on Tuesday.")
    index_all(embeddings=False)
    assert get_gist_embedder() is None
    assert actions.embed_stale_gists() == 0
    assert not has_stale_gists()
    settings.SEARCH_GIST_EMBEDDER = "word2vec"
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured, match="SEARCH_GIST_EMBEDDER"):
        get_gist_embedder()


def test_a_paraphrased_question_is_closest_to_the_mail_it_describes(
    make_message: Callable[..., Any], index_all: Callable[..., None]
) -> None:
    """None of the question's content words is in the answering mail; the model has to know what it means."""
    raffle = make_message(
        "Blazers seats giveaway",
        "We are drawing names on Friday for two pairs of courtside tickets to next week's Trail Blazers home "
        "game. Reply to this mail to enter; everyone in the Portland office can take part.",
    )
    german = make_message(
        "Kündigung Mietvertrag",
        "Hiermit kündige ich den Mietvertrag für die Wohnung in der Gartenstraße fristgerecht zum 31. März.",
    )
    others = [*unrelated_mail(make_message), make_message("Server maintenance", "The mail servers are offline.")]
    embedder = gists_stored(index_all)
    documents = message_documents([m.pk for m in (raffle, german, *others)])
    vectors = stored_gists(list(documents.values()), embedder.key)
    by_document = {row["id"]: pk for pk, row in documents.items()}

    def best(question: str) -> int:
        scores = similarity(embedder, question, vectors)
        return by_document[max(scores, key=lambda key: scores[key])]

    assert best("lottery for free NBA basketball game tickets for staff") == raffle.pk
    assert best("when does my apartment rental contract end?") == german.pk


def test_nearest_gists_stay_in_the_users_accounts_and_period_and_see_new_mail(
    make_message: Callable[..., Any], index_all: Callable[..., None], django_user_model: Any, monkeypatch: Any
) -> None:
    from apps.accounts.actions import create_local_account

    forget_gist_matrix()
    raffle = make_message(
        "Blazers seats giveaway",
        "We draw names on Friday for two pairs of Trail Blazers tickets; everyone in the office can enter.",
        date=dt.datetime(2024, 3, 4, 9, 0, tzinfo=dt.UTC),
    )
    make_message("Server maintenance", "The mail servers are offline on Sunday from 2 to 4 am.")
    stranger = django_user_model.objects.create_user(username="stranger", email="s@example.com", password="x" * 20)
    other_account = create_local_account(owner=stranger, name="theirs", address="s@example.com")
    theirs = make_message(
        "Basketball ticket lottery",
        "A lottery for free NBA game tickets for all staff, enter by replying.",
        owner_account=other_account,
    )
    embedder = gists_stored(index_all)
    question = "lottery for free NBA basketball game tickets for staff"
    mine = [pk for pk, _score in nearest_messages(embedder, question, account_ids=[raffle.account_id], limit=5)]
    assert mine[0] == raffle.pk and theirs.pk not in mine and len(mine) == 2
    both = nearest_messages(embedder, question, account_ids=[raffle.account_id, other_account.pk], limit=1)
    assert [pk for pk, _ in both] == [theirs.pk]  # its own words are nearer still
    later = nearest_messages(
        embedder, question, account_ids=[raffle.account_id], date_from=dt.datetime(2024, 6, 1, tzinfo=dt.UTC)
    )
    assert raffle.pk not in [pk for pk, _ in later]

    # Mail whose gist is stored after the matrix was loaded is found once RELOAD_SECONDS have passed.
    newer = make_message("Courtside seats draw", "Reminder: the draw for the basketball tickets closes today.")
    index_all(newer, embeddings=False)
    actions.embed_stale_gists()
    soon = [pk for pk, _ in nearest_messages(embedder, question, account_ids=[raffle.account_id], limit=5)]
    assert newer.pk not in soon
    monkeypatch.setattr(gist, "RELOAD_SECONDS", 0.0)
    again = [pk for pk, _ in nearest_messages(embedder, question, account_ids=[raffle.account_id], limit=5)]
    assert newer.pk in again and len(again) == 3


# A mail whose opening is context and whose point comes after the first GIST_CHARS characters.
LATE_POINT = (
    "Hi all, thanks again to everyone who joined the offsite last week in Galveston and for all the feedback "
    "on the agenda, the hotel and the catering; we will send the photos around once the agency has them and "
    "the survey results after the board meeting. One more thing: the parking garage under the building "
    "closes for repaving from Monday, so please use the lot on Louisiana Street and keep your badge visible."
)


def test_the_continuation_is_the_subject_and_the_text_after_the_opening() -> None:
    opening = gist_text("Offsite follow-up", LATE_POINT)
    rest = continuation_text("Offsite follow-up", LATE_POINT)
    assert "parking garage" not in opening
    assert rest.startswith("Offsite follow-up ") and "parking garage under the building closes" in rest
    covered = opening.removeprefix("Offsite follow-up ")
    assert LATE_POINT.startswith(covered)
    assert LATE_POINT[len(covered) :].strip().startswith(rest.removeprefix("Offsite follow-up ")[:30])
    assert len(rest) <= len("Offsite follow-up ") + GIST_CHARS
    # Short mail, and a tail under MIN_CONTINUATION characters, has none.
    assert continuation_text("Lunch", "Pizza at noon?") == ""
    short_tail = "word " * ((GIST_CHARS + MIN_CONTINUATION // 2) // 5)
    assert continuation_text("", short_tail) == ""


def test_a_mail_is_as_near_as_its_nearer_passage(
    make_message: Callable[..., Any], index_all: Callable[..., None]
) -> None:
    forget_gist_matrix()
    late = make_message("Offsite follow-up", LATE_POINT)
    short = make_message("Server maintenance", "The mail servers are offline on Sunday from 2 to 4 am.")
    others = unrelated_mail(make_message)
    embedder = gists_stored(index_all)
    documents = message_documents([late.pk, short.pk])
    stored = stored_gists(list(documents.values()), embedder.key)
    assert stored[documents[late.pk]["id"]].shape == (2, embedder.dimension)
    assert stored[documents[short.pk]["id"]].shape == (1, embedder.dimension)

    question = "where should I park my car while the garage is being resurfaced?"
    rows = stored[documents[late.pk]["id"]]
    opening_only, both = (
        similarity(embedder, question, {1: rows[0]})[1],
        similarity(embedder, question, {1: rows})[1],
    )
    assert both == pytest.approx(float((rows @ embedder.embed_query(question)).max()), abs=1e-5)
    assert both > opening_only
    assert message_similarities(embedder, question, [late.pk])[late.pk] == pytest.approx(both, abs=1e-5)
    nearest = nearest_messages(embedder, question, account_ids=[late.account_id], limit=4)
    assert nearest[0][0] == late.pk and nearest[0][1] == pytest.approx(both, abs=1e-5)
    assert {pk for pk, _ in nearest} == {late.pk, short.pk, *(m.pk for m in others)}


def test_gists_stored_before_continuations_get_theirs_without_a_new_opening(
    make_message: Callable[..., Any], index_all: Callable[..., None]
) -> None:
    late = make_message("Offsite follow-up", LATE_POINT)
    make_message("Lunch", "Pizza at noon?")
    index_all(embeddings=False)
    actions.embed_stale_gists()
    SearchGist.objects.update(continuation=None)  # as migration 0008 leaves the gists stored before it
    openings = dict(SearchGist.objects.values_list("document_id", "vector"))
    embedder = get_gist_embedder()
    assert embedder is not None
    assert has_stale_gists() and without_continuation(embedder.key).count() == 2
    assert gist_progress() == (0, 2)
    assert actions.embed_stale_gists(max_documents=1) == 1  # resumable one batch at a time
    assert gist_progress() == (1, 2)
    assert actions.embed_stale_gists() == 1
    assert not has_stale_gists() and gist_progress() == (2, 2)
    assert {pk: bytes(v) for pk, v in SearchGist.objects.values_list("document_id", "vector")} == {
        pk: bytes(v) for pk, v in openings.items()
    }
    document = message_documents([late.pk])[late.pk]
    assert len(SearchGist.objects.get(document_id=document["id"]).continuation or b"") == 4 * embedder.dimension
    assert actions.embed_stale_gists() == 0


def test_the_maintenance_schedule_fills_continuations_nobody_queued(
    settings: Any, make_message: Callable[..., Any], index_all: Callable[..., None]
) -> None:
    """An upgraded install: its gists predate continuations and no new mail arrives to queue a backfill."""
    from django_q.models import Schedule

    from apps.search.tasks import BACKFILL_SCHEDULE_NAME, backfill_if_pending_task

    schedule = Schedule.objects.get(name=BACKFILL_SCHEDULE_NAME)  # created after migrate, like the others
    assert schedule.func == "apps.search.tasks.backfill_if_pending_task" and schedule.repeats == -1
    make_message("Offsite follow-up", LATE_POINT)
    index_all(embeddings=True)
    actions.embed_stale_gists()
    SearchGist.objects.update(continuation=None)
    settings.SEARCH_EMBED_ON_INGEST = False  # switched off: the schedule leaves the work alone
    assert backfill_if_pending_task() == 0 and has_stale_gists()
    settings.SEARCH_EMBED_ON_INGEST = True
    assert backfill_if_pending_task() == 1
    assert not has_stale_gists() and gist_progress() == (1, 1)
    assert backfill_if_pending_task() == 0  # nothing waits: no backfill runs
