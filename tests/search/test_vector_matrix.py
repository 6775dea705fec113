"""SQLite keeps chunk vectors in an in-process matrix: it must follow the table incrementally (append
new ids, drop deleted ones) instead of reloading everything for each query."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from apps.search.backends.sqlite import SQLiteSearchBackend
from apps.search.models import SearchChunk
from tests.search.conftest import HashingEmbedder

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "sqlite", reason="the in-process matrix is the SQLite backend's"),
]


def test_matrix_appends_new_vectors_and_drops_deleted_ones(
    make_message: Any, index_all: Any, backend: SQLiteSearchBackend, embedder: Any
) -> None:
    first = [make_message(f"Harbour crane {n}", f"Crane number {n} needs a new winch cable.") for n in range(3)]
    index_all(*first)
    matrix = backend.matrix
    assert backend.semantic("crane winch", embedder=embedder)
    assert (matrix.full_loads, matrix.size) == (1, SearchChunk.objects.count())
    loaded = matrix.appended_rows

    # Repeated queries read nothing new.
    backend.semantic("crane winch", embedder=embedder)
    backend.hybrid("crane winch", embedder=embedder)
    assert (matrix.full_loads, matrix.appended_rows) == (1, loaded)

    later = [make_message("Forklift battery", "The forklift battery is swollen and must be replaced.")]
    index_all(*later)
    hits = backend.semantic("forklift battery replacement", embedder=embedder)
    assert hits[0].message_id == later[0].pk
    assert matrix.full_loads == 1
    assert matrix.appended_rows == loaded + SearchChunk.objects.filter(document__message=later[0]).count()
    assert matrix.size == SearchChunk.objects.count()

    first[0].delete()
    hits = backend.semantic("crane winch", embedder=embedder, limit=10)
    assert first[0].pk not in {hit.message_id for hit in hits}
    assert (matrix.full_loads, matrix.compactions) == (1, 1)
    assert matrix.size == SearchChunk.objects.count()
    assert set(matrix.chunk_ids[: matrix.size].tolist()) == set(SearchChunk.objects.values_list("pk", flat=True))


def test_matrix_reloads_after_an_embedder_switch(
    make_message: Any, index_all: Any, backend: SQLiteSearchBackend
) -> None:
    make_message("Quarterly audit", "The auditors arrive on Monday.")
    index_all()
    backend.semantic("auditors", embedder=None)
    small = HashingEmbedder(dimension=32)
    backend.embed_pending(embedder=small)
    hits = backend.semantic("auditors arrive", embedder=small)
    assert hits and backend.matrix.dimension == 32
    assert backend.matrix.full_loads == 2


def test_matrix_filters_match_the_sql_filters(make_message: Any, index_all: Any, backend: SQLiteSearchBackend) -> None:
    import datetime as dt

    from apps.search.backends.base import SearchFilters

    old = make_message("Roof repair", "Roof repair quote", date=dt.datetime(2020, 1, 1, tzinfo=dt.UTC))
    new = make_message("Roof repair", "Roof repair quote", date=dt.datetime(2024, 1, 1, tzinfo=dt.UTC))
    index_all()
    small_window = SearchFilters(date_from=dt.datetime(2023, 1, 1, tzinfo=dt.UTC))
    assert [h.message_id for h in backend.semantic("roof repair", filters=small_window)] == [new.pk]
    before = SearchFilters(date_to=dt.datetime(2021, 1, 1, tzinfo=dt.UTC))
    assert [h.message_id for h in backend.semantic("roof repair", filters=before)] == [old.pk]
