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


def _synthetic_matrix(rows: int, chunks_per_document: int = 1) -> Any:
    """Unit vectors with low-rank structure (as sentence embeddings have) in a VectorMatrix."""
    import numpy as np

    from apps.search.backends.sqlite import VectorMatrix

    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(rows, 24)) @ rng.normal(size=(24, 512)) + 0.05 * rng.normal(size=(rows, 512))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    matrix = VectorMatrix(dimension=512, embedder="synthetic", size=rows, vectors=vectors)
    matrix.chunk_ids = np.arange(1, rows + 1, dtype=np.int64)
    matrix.document_ids = np.arange(rows, dtype=np.int64) // chunks_per_document + 1
    matrix.chunk_nos = (np.arange(rows) % chunks_per_document).astype(np.int32)
    for name in ("account_ids", "owner_ids", "kinds", "dates", "attachments"):
        setattr(matrix, name, np.zeros(rows, dtype=getattr(matrix, name).dtype))
    matrix._project()
    return matrix, rng


def test_the_projected_prefilter_finds_the_exact_best_documents() -> None:
    import numpy as np

    matrix, rng = _synthetic_matrix(6000)
    assert matrix.projected.shape[1] == 128
    for row in rng.choice(6000, 20, replace=False):
        query = matrix.vectors[row] + 0.3 * rng.normal(size=512).astype(np.float32)
        query /= np.linalg.norm(query)
        exact = matrix.search(query, 20, None)
        assert matrix.search(query, 20, None, prefilter=600) == exact
        mask = matrix.document_ids % 2 == 0
        assert matrix.search(query, 10, mask, prefilter=300) == matrix.search(query, 10, mask)


def test_the_prefilter_scans_everything_when_its_candidates_hold_too_few_documents() -> None:
    import numpy as np

    matrix, _rng = _synthetic_matrix(6000, chunks_per_document=600)  # 10 documents of 600 chunks
    query = matrix.vectors[7]
    found = matrix.search(query, 10, None, prefilter=500)
    assert len(found) == 10 and found == matrix.search(query, 10, None)
    assert np.isclose(found[0][2], 1.0, atol=1e-5)
