"""The gist list of a hybrid search (BaseSearchBackend._gist_ranked, option GIST_WEIGHT): the messages the words
and the passage vectors found, reordered by how near their gists (apps/search/gist.py) are to the query. It adds
no message of its own, is left out while typing and when its weight is 0, changes nothing before the backfill
has stored gists, and reaches the JSON API and the search page as the "gist" source (shown as "meaning")."""

from __future__ import annotations

from typing import Any

import pytest

from apps.accounts.models import Message
from apps.search import actions
from apps.search.backends import get_search_backend
from apps.search.backends.base import SearchFilters
from apps.search.gist import get_gist_embedder, message_documents, message_similarities

pytestmark = pytest.mark.django_db

QUESTION = "who looks after my deals while I am away on parental leave"


@pytest.fixture
def mails(make_message: Any) -> dict[str, Message]:
    return {
        "leave": make_message(
            "Out of office until April",
            "I am on parental leave from Monday until the end of March. Dana looks after my deals meanwhile.",
        ),
        "canteen": make_message(
            "Canteen menu", "Monday: lentil soup. Tuesday: pasta. Please leave your tray at the counter."
        ),
        "desk": make_message("Shipping update", "Your replacement desk left our warehouse today, tracking 1Z999."),
        "deals": make_message("Deal review", "The deal review for the west desk is on Thursday at ten."),
    }


@pytest.fixture
def with_gists(mails: dict[str, Message], index_all: Any) -> dict[str, Message]:
    index_all()
    assert actions.embed_stale_gists() == len(mails)
    return mails


def hybrid(query: str, account: Any, **options: Any) -> list[Any]:
    filters = SearchFilters(account_ids=(account.pk,))
    return get_search_backend().hybrid(query, filters=filters, limit=20, snippets=False, **options)


def test_the_gist_list_reorders_only_what_words_and_passages_found(
    with_gists: dict[str, Message], account: Any
) -> None:
    hits = hybrid(QUESTION, account)
    assert hits[0].message_id == with_gists["leave"].pk
    gisted = [hit for hit in hits if "gist" in hit.sources]
    assert gisted, "the gist list ranked the mails the other lists found"
    assert all({"fts", "vector"} & set(hit.sources) for hit in gisted)
    # The same messages as without it: the order may change, the set does not.
    assert {h.document_id for h in hits} == {h.document_id for h in hybrid(QUESTION, account, gist=False)}


def test_left_out_while_typing_at_weight_zero_and_before_the_backfill(
    with_gists: dict[str, Message], account: Any, settings: Any
) -> None:
    assert not any("gist" in h.sources for h in hybrid(QUESTION, account, prefix_last=True))
    settings.SEARCH_BACKEND = {**settings.SEARCH_BACKEND, "GIST_WEIGHT": 0}
    assert not any("gist" in h.sources for h in hybrid(QUESTION, account))


def test_without_stored_gists_the_search_is_words_and_passages(
    mails: dict[str, Message], index_all: Any, account: Any
) -> None:
    index_all()
    hits = hybrid(QUESTION, account)
    assert hits and not any("gist" in h.sources for h in hits)


def test_message_similarities_cover_only_messages_with_a_gist(
    with_gists: dict[str, Message], make_message: Any
) -> None:
    embedder = get_gist_embedder()
    assert embedder is not None
    late = make_message("Later mail", "Written after the backfill ran.")
    pks = [m.pk for m in with_gists.values()] + [late.pk]
    scores = message_similarities(embedder, QUESTION, pks)
    assert set(scores) == {m.pk for m in with_gists.values()}
    assert max(scores, key=lambda pk: scores[pk]) == with_gists["leave"].pk
    assert message_similarities(embedder, "  ", pks) == {}
    assert set(message_documents(pks)) == set(pks) - {late.pk}  # the late mail is not even indexed


def test_api_and_page_show_the_gist_source_as_meaning(with_gists: dict[str, Message], logged_in_client: Any) -> None:
    response = logged_in_client.get("/api/search", {"q": QUESTION})
    assert response.status_code == 200, response.content
    results = response.json()["results"]
    assert results[0]["subject"] == "Out of office until April"
    assert "gist" in results[0]["sources"]
    page = logged_in_client.get("/search/", {"q": QUESTION})
    assert page.status_code == 200
    html = page.content.decode()
    meaning = sum(1 for r in results if {"vector", "gist"} & set(r["sources"]))
    # One "meaning" badge per row that matched by meaning, however many meaning lists found it.
    assert html.count('title="matched the meaning">meaning</span>') == meaning
