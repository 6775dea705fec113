"""SQLite ranks plain-word queries with an in-process keyword index (backends/keyword_index.py): its hits,
scores and counts must be FTS5's own bm25, and it must follow new, changed and deleted documents without
reloading everything."""

from __future__ import annotations

import datetime as dt
import random
import threading
from typing import Any

import pytest
from django.db import connection

from apps.accounts.actions import create_local_account
from apps.accounts.models import Message
from apps.search import actions
from apps.search.backends.base import SearchFilters
from apps.search.backends.sqlite import SQLiteSearchBackend
from apps.search.folding import parse_query

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "sqlite", reason="the in-process keyword index is the SQLite backend's"),
]

# Made-up words with a skewed (Zipf-like) use, so some are in most documents and some in a few.
SYLLABLES = ["ka", "lo", "mir", "tesh", "du", "van", "rel", "po", "sin", "gar", "ul", "bre"]


def _words(rng: random.Random, count: int) -> list[str]:
    return [
        "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3))) + rng.choice(["", "s", "ed"])
        for _ in range(count)
    ]


def _corpus(make_message: Any, other_account: Any) -> tuple[list[Any], list[str]]:
    rng = random.Random(11)
    vocabulary = _words(rng, 120)
    weights = [1.0 / (rank + 1) for rank in range(len(vocabulary))]
    messages = []
    for number in range(70):
        subject = " ".join(rng.choices(vocabulary, weights, k=rng.randint(1, 6)))
        body = " ".join(rng.choices(vocabulary, weights, k=rng.randint(3, 120)))
        messages.append(
            make_message(
                subject,
                body,
                sender=(rng.choice(vocabulary).title(), f"{rng.choice(vocabulary)}@example.com"),
                date=dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(days=number),
                folder="Archive" if number % 3 else "INBOX",
                owner_account=other_account if number % 5 == 0 else None,
                attachments=[("notes.pdf", " ".join(rng.choices(vocabulary, weights, k=30)))] if number % 7 else None,
            )
        )
    return messages, vocabulary


def _ranked(backend: SQLiteSearchBackend, parsed: Any, match: Any, filters: SearchFilters, limit: int) -> Any:
    ranked = backend._indexed_keyword_ids(parsed, match, filters, limit)
    assert ranked is not None  # inside the test's transaction the index loads at once
    return ranked


def test_the_index_ranks_and_counts_exactly_as_fts5_bm25(
    make_message: Any, backend: SQLiteSearchBackend, account: Any, user: Any
) -> None:
    other = create_local_account(owner=user, name="second", address="second@example.com")
    _messages, vocabulary = _corpus(make_message, other)
    actions.index_messages(message_ids=[m.pk for m in _messages])
    rng = random.Random(5)
    filter_sets = [
        SearchFilters(),
        SearchFilters(account_ids=(account.pk,)),
        SearchFilters(account_ids=(account.pk, other.pk), date_from=dt.datetime(2024, 2, 1, tzinfo=dt.UTC)),
        SearchFilters(kinds=("attachment",)),
        SearchFilters(folder="INBOX", date_to=dt.datetime(2024, 2, 15, tzinfo=dt.UTC)),  # resolved by SQL
    ]
    compared = phrases = 0
    for number in range(40):
        query = " ".join(rng.sample(vocabulary, rng.randint(1, 4)) + ["zzzunknown"] * rng.randint(0, 1))
        if number % 3 == 0:  # typed so far: the last word is a prefix ("kalo" finds "kalomir", "kalos", …)
            last = query.split()[-1]
            query = query[: len(query) - min(rng.randint(0, 3), len(last) - 2)]
        if number % 4 == 1:  # with a phrase: two neighbouring words of a message ("e-learning" is one too)
            words = rng.choice(_messages).body_text.split()
            start = rng.randrange(len(words) - 1)
            pair = words[start : start + 2]
            query += f' "{pair[0]} {pair[1]}"' if number % 8 == 1 else f" {pair[0]}-{pair[1]}"
        parsed = parse_query(query, prefix_last=number % 3 == 0)
        assert backend._uses_keyword_index(parsed)
        phrases += bool(parsed.phrases)
        for filters in filter_sets:
            for match in ("any", "all"):
                indexed = _ranked(backend, parsed, match, filters, 1000)
                reference = backend._fts5_keyword_ids(parsed, match, filters, 1000)
                assert dict(indexed) == pytest.approx(dict(reference), rel=1e-9), (query, filters, match)
                assert [score for _pk, score in indexed] == pytest.approx([s for _pk, s in reference], rel=1e-9)
                top = _ranked(backend, parsed, match, filters, 5)
                assert top == indexed[:5]  # the same best 5 when asked for 5
                compared += bool(reference)
            count = backend._indexed_keyword_count(parsed, filters)
            assert count == backend._fts5_keyword_count(parsed, filters), (query, filters)
    assert compared > 200  # most queries match something
    assert phrases >= 10
    assert backend.keyword_index.full_loads == 1
    # "Did you mean" reads the same words and document counts as FTS5's vocabulary table.
    for letter in sorted({word[0] for word in vocabulary}):
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT term, doc FROM search_fts_vocab"
                " WHERE term >= %s AND term < %s AND length(term) BETWEEN 3 AND 9",
                [letter, chr(ord(letter) + 1)],
            )
            assert backend._vocabulary(letter, 3, 9) == [(term, doc) for term, doc in cursor.fetchall()]


def test_the_index_follows_new_changed_and_deleted_documents(make_message: Any, backend: SQLiteSearchBackend) -> None:
    crane = make_message("Harbour crane", "The crane needs a new winch cable.")
    forklift = make_message("Forklift battery", "The forklift battery is swollen.")
    actions.index_messages(message_ids=[crane.pk, forklift.pk])

    def found(words: str) -> list[int]:
        return [hit.message_id or 0 for hit in backend.keyword(words, snippets=False)]

    assert found("winch") == [crane.pk]
    index = backend.keyword_index
    assert (index.full_loads, index.live) == (1, 2)

    pallet = make_message("Pallet jack", "The pallet jack wheel is cracked.")
    actions.index_messages(message_ids=[pallet.pk])
    assert found("pallet wheel") == [pallet.pk]
    assert (index.full_loads, index.live, index.appended_rows) == (1, 3, 3)

    crane.subject, crane.body_text = "Harbour gantry", "The gantry needs a new hoist rope."
    crane.save()
    actions.index_messages(message_ids=[crane.pk])
    assert found("winch") == []
    assert found("hoist rope") == [crane.pk]
    assert (index.full_loads, index.live, index.size) == (1, 3, 4)  # the old row is dead, the new one live
    assert (
        backend.keyword_count("gantry OR swollen")
        == 2
        == backend._fts5_keyword_count(backend.informative_query(parse_query("gantry swollen")), SearchFilters())
    )

    forklift.delete()
    assert found("forklift battery") == []
    assert index.full_loads == 1
    assert found("cracked") == [pallet.pk]


def test_other_scripts_are_left_to_fts5(make_message: Any, backend: SQLiteSearchBackend) -> None:
    note = make_message("Σύμβαση ενοικίασης", 'The "winch cable" order and the crane schedule.')
    actions.index_messages(message_ids=[note.pk])
    for query in ("σύμβαση", '"σύμβαση ενοικίασης"'):
        parsed = parse_query(query)
        assert not backend._uses_keyword_index(parsed)
        assert [hit.message_id for hit in backend.keyword(query)] == [note.pk]
    assert backend.keyword_index.full_loads == 0


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_first_load_runs_in_the_background(
    make_message: Any, backend: SQLiteSearchBackend
) -> None:
    crane = make_message("Harbour crane", "The crane needs a new winch cable.")
    make_message("Forklift battery", "The forklift battery is swollen.")
    actions.index_messages(message_ids=list(Message.objects.values_list("pk", flat=True)))
    parsed = parse_query("winch")
    assert backend._indexed_keyword_ids(parsed, "any", SearchFilters(), 10) is None  # loading: not ready yet
    # Meanwhile FTS5 answers.
    assert [hit.message_id for hit in backend.keyword("winch", snippets=False)] == [crane.pk]
    loaders = [thread for thread in threading.enumerate() if thread.name == "search-keyword-index"]
    for thread in loaders:
        thread.join(timeout=30)
    ranked = backend._indexed_keyword_ids(parsed, "any", SearchFilters(), 10)
    assert ranked is not None and [pk for pk, _score in ranked] == [crane.search_documents.get().pk]
    reference = backend._fts5_keyword_ids(parsed, "any", SearchFilters(), 10)
    assert dict(ranked) == pytest.approx(dict(reference), rel=1e-9)


def test_a_process_behind_the_pruned_change_log_reloads_in_full(
    make_message: Any, backend: SQLiteSearchBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    from apps.search.backends import sqlite

    monkeypatch.setattr(sqlite, "CHANGE_LOG_KEEP", 1)
    notes = [make_message(f"Shift note {n}", f"Pump {n} inspected.") for n in range(4)]
    actions.index_messages(message_ids=[note.pk for note in notes])
    assert backend.keyword_count("inspected") == 4
    index = backend.keyword_index
    for number, note in enumerate(notes):  # each re-index writes the log and prunes it to the newest entries
        note.body_text = f"Valve {number} replaced."
        note.save()
        actions.index_messages(message_ids=[note.pk])
    assert backend.keyword_count("inspected") == 0
    assert backend.keyword_count("valve replaced") == 4
    assert index.full_loads == 2  # the entries it had not read were gone: it read everything again


def test_new_mail_lands_in_small_segments_merged_among_themselves(
    make_message: Any, backend: SQLiteSearchBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    from apps.search.backends import keyword_index

    monkeypatch.setattr(keyword_index, "MAX_SEGMENTS", 2)
    rng = random.Random(3)
    words = _words(rng, 60)
    first = [make_message(" ".join(rng.choices(words, k=4)), " ".join(rng.choices(words, k=200))) for _ in range(20)]
    actions.index_messages(message_ids=[m.pk for m in first])
    index = backend.keyword_index
    backend.keyword(words[0], snippets=False)
    base = index.segments[0]
    for _ in range(5):  # one small batch of new mail per search
        late = make_message(" ".join(rng.choices(words, k=3)), " ".join(rng.choices(words, k=5)))
        actions.index_messages(message_ids=[late.pk])
        backend.keyword(words[1], snippets=False)
        assert index.segments[0] is base and len(index.segments) <= 3  # the base is never rewritten for them
    assert index.full_loads == 1
    for query in (words[0], f"{words[2]} {words[5]}", " ".join(words[10:14])):
        parsed = parse_query(query)
        reference = backend._fts5_keyword_ids(parsed, "any", SearchFilters(), 1000)
        assert dict(_ranked(backend, parsed, "any", SearchFilters(), 1000)) == pytest.approx(dict(reference), rel=1e-9)
