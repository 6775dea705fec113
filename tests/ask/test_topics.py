# ruff: noqa: RUF001 -- Turkish questions and answers are the point.
"""Topic boundaries (issue 35, item 1): a new question starts a new topic unless it refers to the previous
turn. Pairs of related and unrelated questions in several languages, judged without a model (the local
embedder's similarity plus language-neutral structural cues) and with the 30-minute window.

Written before the implementation. The embedder-backed pairs skip with a message when the local
embedder cannot be loaded, unless CI=true, where they must fail."""

from __future__ import annotations

import datetime as dt
import os

import pytest

NOW = dt.datetime(2026, 11, 28, 12, 0, tzinfo=dt.UTC)

PHONE_Q = "How much is my Telvio phone bill (Handyrechnung) this month?"
PHONE_A = "Your Telvio bill for November is EUR 39.90, due on 12 December."

# (previous question, previous answer, new question, related?)
PAIRS = [
    # English
    (PHONE_Q, PHONE_A, "Which parcels were delivered last week?", False),
    (PHONE_Q, PHONE_A, "And the one before?", True),
    (PHONE_Q, PHONE_A, "Is the EUR 39.90 already paid?", True),
    (
        "When is my dentist appointment?",
        "On 3 December at 10:30 with Dr. Berger.",
        "What is my Cloudnest invoice?",
        False,
    ),
    # German
    (PHONE_Q, PHONE_A, "Welche Pakete wurden letzte Woche zugestellt?", False),
    (PHONE_Q, PHONE_A, "Und im Oktober?", True),
    (
        "Wann kommt mein Paket von ParcelPoint?",
        "ParcelPoint liefert am Donnerstag, 4. Dezember.",
        "Wie hoch ist meine Stromrechnung?",
        False,
    ),
    # Spanish
    ("¿Cuánto cuesta el hotel en Lisboa?", "El hotel Miradouro cuesta 120 EUR por noche.", "¿Y el desayuno?", True),
    (
        "¿Cuánto cuesta el hotel en Lisboa?",
        "El hotel Miradouro cuesta 120 EUR por noche.",
        "¿Cuándo vence mi factura de Telvio?",
        False,
    ),
    # French
    (
        "Quand est mon rendez-vous chez le dentiste ?",
        "Le 3 décembre à 10h30 avec le Dr Berger.",
        "Et à quelle adresse ?",
        True,
    ),
    (
        "Quand est mon rendez-vous chez le dentiste ?",
        "Le 3 décembre à 10h30 avec le Dr Berger.",
        "Quel est le numéro de suivi de mon colis ?",
        False,
    ),
    # Turkish
    ("Telvio faturam ne kadar?", "Kasım faturanız 39,90 EUR.", "Peki ekim ayında?", True),
    ("Telvio faturam ne kadar?", "Kasım faturanız 39,90 EUR.", "Geçen hafta hangi kargolar teslim edildi?", False),
    # Dutch
    (
        "Wanneer komt mijn pakket van ParcelPoint?",
        "ParcelPoint levert op donderdag 4 december.",
        "En het trackingnummer?",
        True,
    ),
    (
        "Wanneer komt mijn pakket van ParcelPoint?",
        "ParcelPoint levert op donderdag 4 december.",
        "Hoeveel kost mijn Cloudnest-abonnement?",
        False,
    ),
]


def _similarity():
    try:
        from apps.search.embedders import embed_query_cached, get_embedder

        embedder = get_embedder()
        embed_query_cached(embedder, "probe")
    except Exception as error:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip(f"local embedder unavailable ({error}); topic pairs need it (they fail under CI=true)")
    from apps.ask.topics import embedder_similarity

    return embedder_similarity(embedder)


@pytest.fixture(scope="module")
def similarity():
    return _similarity()


def _previous(question: str, answer: str, minutes_ago: float = 2):
    from apps.ask.topics import PreviousExchange

    return PreviousExchange(question=question, answer=answer, at=NOW - dt.timedelta(minutes=minutes_ago))


@pytest.mark.parametrize(("before_q", "before_a", "question", "related"), PAIRS)
def test_pairs_without_a_model(similarity, before_q, before_a, question, related):
    from apps.ask.topics import judge_topic

    decision = judge_topic(question, _previous(before_q, before_a), now=NOW, similarity=similarity)
    assert decision.continues is related, decision


def test_accuracy_over_the_pairs(similarity):
    from apps.ask.topics import judge_topic

    right = sum(
        judge_topic(q, _previous(bq, ba), now=NOW, similarity=similarity).continues is rel for bq, ba, q, rel in PAIRS
    )
    assert right / len(PAIRS) >= 0.9


def test_no_previous_turn_is_a_new_topic():
    from apps.ask.topics import judge_topic

    assert judge_topic("And the one before?", None, now=NOW, similarity=lambda a, b: 1.0).continues is False


def test_the_30_minute_window_ends_a_conversation():
    from apps.ask.topics import judge_topic

    stale = _previous(PHONE_Q, PHONE_A, minutes_ago=31)
    decision = judge_topic("And the one before?", stale, now=NOW, similarity=lambda a, b: 1.0)
    assert decision.continues is False
    assert "window" in decision.reason


def test_a_model_decides_when_configured():
    from apps.ask.topics import judge_topic

    previous = _previous(PHONE_Q, PHONE_A)
    yes = judge_topic("x", previous, now=NOW, similarity=lambda a, b: 0.0, model=lambda q, p: True)
    no = judge_topic("And the one before?", previous, now=NOW, similarity=lambda a, b: 1.0, model=lambda q, p: False)
    assert yes.continues is True and yes.reason.startswith("model")
    assert no.continues is False


def test_no_word_lists_in_the_topic_module():
    import inspect

    import apps.ask.topics as topics

    source = inspect.getsource(topics).lower()
    for word in (' "and"', ' "und"', ' "it"', '"that one"'):
        assert word not in source
