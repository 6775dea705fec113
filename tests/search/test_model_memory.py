"""Which process holds the embedding models (issue 40): a background job drops the models it loaded when it
ends, and counting the index's progress loads none."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from apps.search import actions, embedders, gist, selectors, tasks


class CountingEmbedder:
    """Stands in for a model: counts how many were built."""

    built = 0

    def __init__(self, key: str) -> None:
        type(self).built += 1
        self.key = key
        self.dimension = 4

    def embed_documents(self, texts: Any) -> np.ndarray:
        return np.ones((len(texts), 4), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return np.ones(4, dtype=np.float32)


@pytest.fixture
def no_models_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedders, "_cache", {})
    monkeypatch.setattr(embedders, "build_embedder", lambda config: CountingEmbedder(str(config.get("backend"))))
    CountingEmbedder.built = 0


def _backfill_that_embeds(**kwargs: Any) -> int:
    embedders.embed_query_cached(embedders.get_embedder(), "a query")
    return 1


@pytest.mark.parametrize("task", [tasks.backfill_embeddings_task, tasks.backfill_if_pending_task])
def test_a_backfill_job_releases_the_models_it_loaded(
    task: Any, no_models_loaded: None, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.SEARCH_EMBED_ON_INGEST = True
    monkeypatch.setattr(actions, "backfill_embeddings", _backfill_that_embeds)
    monkeypatch.setattr(selectors, "index_work_pending", lambda: True)
    assert task() == 1
    assert CountingEmbedder.built == 1
    assert embedders._cache == {}  # a cluster worker holds no model between jobs
    assert not embedders._query_vectors


def test_a_process_that_had_the_model_keeps_it(no_models_loaded: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A web process that searched (or a test) runs a job synchronously: its model stays loaded."""
    model = embedders.get_embedder()
    monkeypatch.setattr(actions, "backfill_embeddings", _backfill_that_embeds)
    tasks.backfill_embeddings_task()
    assert embedders.get_embedder() is model
    assert CountingEmbedder.built == 1


def test_a_model_loaded_by_the_block_is_released_even_when_it_fails(no_models_loaded: None) -> None:
    with pytest.raises(RuntimeError), embedders.release_models_loaded_during():
        embedders.get_embedder()
        raise RuntimeError("the job failed")
    assert embedders._cache == {}


@pytest.mark.django_db
def test_counting_the_gists_loads_no_model(no_models_loaded: None) -> None:
    """The progress panel (Home, Search, Diagnostics) and the cluster's periodic check compare stored keys."""
    assert selectors.gist_embedding_progress().embedder == gist.gist_embedder_key()
    assert not gist.has_stale_gists()
    assert gist.gist_progress() == (0, 0)
    assert CountingEmbedder.built == 0 and embedders._cache == {}


def test_the_gist_key_is_the_models_key(settings: Any) -> None:
    embedder = gist.get_gist_embedder()
    assert embedder is not None and gist.gist_embedder_key() == embedder.key
    settings.SEARCH_EMBEDDER = {"backend": "e5"}  # the gists then share search's model: the same key
    assert gist.gist_embedder_key() == gist.get_gist_embedder().key  # type: ignore[union-attr]
    settings.SEARCH_GIST_EMBEDDER = "none"
    assert gist.gist_embedder_key() == ""
