"""Every write to the search index. Other apps call these (or send the signals search listens to)."""

from __future__ import annotations

import datetime as dt
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from apps.accounts import outbox
from apps.accounts.models import HookKind, Message
from apps.search.backends import get_search_backend
from apps.search.backends.base import IndexResult
from apps.search.documents import documents_for_messages
from apps.search.embedders import Embedder
from apps.search.gist import (
    continuation_text,
    get_gist_embedder,
    gist_text,
    has_stale_gists,
    pack,
    passage_rows,
    stale_documents,
    stored_gists,
    without_continuation,
)
from apps.search.models import SavedSearch, SearchDocument, SearchGist, SearchIndexState
from apps.search.query import parse_search
from apps.search.selectors import filters_for_query
from mailagent.liveness import holder_is_dead, process_identity

if TYPE_CHECKING:
    import numpy as np  # loaded where it is used: numpy (~14 MB) stays out of processes that never search

logger = logging.getLogger(__name__)

INDEX_BATCH = 500
BACKFILL_LOCK_SECONDS = 600
GIST_BATCH = 32


def index_messages(*, message_ids: Iterable[int]) -> IndexResult:
    """(Re)index messages and their extracted attachment texts; vanished ids are removed. The messages are
    marked indexed (the outbox) in the same transaction as their index rows."""
    backend = get_search_backend()
    total = IndexResult()
    ids = list(message_ids)
    # One transaction for the whole call (a stored batch): one commit, one full-text segment.
    with transaction.atomic():
        for start in range(0, len(ids), INDEX_BATCH):
            documents, missing = documents_for_messages(ids[start : start + INDEX_BATCH])
            result = backend.index(documents)
            if missing:
                backend.delete(kind="message", object_ids=missing)
            total.created += result.created
            total.updated += result.updated
            total.unchanged += result.unchanged
            total.document_ids.extend(result.document_ids)
        outbox.mark_done(kind=HookKind.INDEX, message_ids=ids)
    return total


def unindex_documents(*, kind: str, object_ids: Iterable[int]) -> int:
    return get_search_backend().delete(kind=kind, object_ids=object_ids)


@dataclass(slots=True)
class ReindexSummary:
    messages: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    fulltext_rebuilt: int = 0
    embedded: int = 0


def reindex_all(
    *, rebuild_fulltext: bool = False, progress: Callable[[int], object] | None = None, batch_size: int = INDEX_BATCH
) -> ReindexSummary:
    """Index every stored message (new or changed ones are written, the rest skipped)."""
    summary = ReindexSummary()
    backend = get_search_backend()
    last = 0
    while True:
        ids = list(Message.objects.filter(pk__gt=last).order_by("pk").values_list("pk", flat=True)[:batch_size])
        if not ids:
            break
        result = index_messages(message_ids=ids)
        summary.messages += len(ids)
        summary.created += result.created
        summary.updated += result.updated
        summary.unchanged += result.unchanged
        last = ids[-1]
        if progress is not None:
            progress(len(ids))
    if rebuild_fulltext:
        summary.fulltext_rebuilt = backend.rebuild_fulltext()
    return summary


def request_embedding_backfill() -> None:
    """Queue the embedding backfill once the current transaction commits (at once outside one)."""
    from django_q.tasks import async_task

    transaction.on_commit(
        lambda: async_task("apps.search.tasks.backfill_embeddings_task", task_name="search: embedding backfill")
    )


class BackfillHeld(Exception):
    """Another live process holds the embedding backfill's lease."""

    def __init__(self, holder: str, until: dt.datetime | None) -> None:
        self.holder = holder
        self.until = until
        host, _, pid = [*holder.split("|"), "", "", ""][:3]
        who = f"process {pid} on {host}" if pid else "another process"
        when = f" (its lease runs until {until:%H:%M:%S} UTC unless renewed)" if until else ""
        super().__init__(f"another embedding backfill is running: {who}{when}; it embeds what is pending")


def _acquire_backfill_lock() -> bool:
    SearchIndexState.objects.get_or_create(pk=1)
    now = timezone.now()
    free = Q(backfill_lock_until__isnull=True) | Q(backfill_lock_until__lt=now)
    holder = SearchIndexState.objects.filter(pk=1).values_list("backfill_holder", flat=True).first() or ""
    if holder and holder_is_dead(holder):
        free |= Q(backfill_holder=holder)  # killed mid-backfill on this machine: no need to wait for expiry
    claimed = (
        SearchIndexState.objects.filter(pk=1)
        .filter(free)
        .update(
            backfill_lock_until=now + dt.timedelta(seconds=BACKFILL_LOCK_SECONDS), backfill_holder=process_identity()
        )
    )
    return claimed == 1


def backfill_held_by() -> BackfillHeld | None:
    """Who holds the backfill lease now, when it is held by a process that may be alive."""
    state = SearchIndexState.objects.filter(pk=1).values("backfill_lock_until", "backfill_holder").first()
    if not state or state["backfill_lock_until"] is None or state["backfill_lock_until"] < timezone.now():
        return None
    holder = state["backfill_holder"] or ""
    if holder and holder_is_dead(holder):
        return None
    return BackfillHeld(holder, state["backfill_lock_until"])


def _renew_backfill_lock() -> None:
    SearchIndexState.objects.filter(pk=1, backfill_holder=process_identity()).update(
        backfill_lock_until=timezone.now() + dt.timedelta(seconds=BACKFILL_LOCK_SECONDS)
    )


def _release_backfill_lock() -> None:
    # Only our own lease: one that expired while we were slow may belong to another process by now.
    SearchIndexState.objects.filter(pk=1, backfill_holder=process_identity()).update(
        backfill_lock_until=None, backfill_holder=""
    )


def backfill_embeddings(
    *,
    seconds: float | None = None,
    embedder: Embedder | None = None,
    progress: Callable[[int], object] | None = None,
    requeue: bool = True,
    raise_if_held: bool = False,
) -> int:
    """Embed pending documents, then stale gists (apps/search/gist.py), until none are left or `seconds` have
    passed; then queue a continuation. Returns how many documents and gists were embedded.

    One backfill runs at a time (a lease on the state row); a second caller returns at once, and the
    running one picks up whatever was stored meanwhile because it loops until nothing is pending. With
    `raise_if_held`, a caller that finds the lease held by a live process gets BackfillHeld instead of 0.
    A lease whose holder died on this machine is taken over at once (it does not wait for the expiry)."""
    budget = settings.SEARCH_BACKFILL_SECONDS if seconds is None else seconds
    deadline = time.monotonic() + budget if budget else None
    backend = get_search_backend()
    embedded = 0
    if raise_if_held and not _acquire_backfill_lock():
        raise backfill_held_by() or BackfillHeld("", None)
    first = raise_if_held  # the lease is ours already
    while first or _acquire_backfill_lock():
        first = False
        try:

            def step(count: int) -> None:
                _renew_backfill_lock()
                if progress is not None:
                    progress(count)

            this_round = backend.embed_pending(embedder=embedder, deadline=deadline, progress=step)
            # Gists after the search vectors (those make mail findable at all), in the same lease and budget.
            if deadline is None or time.monotonic() < deadline:
                this_round += embed_stale_gists(deadline=deadline, progress=step)
        finally:
            _release_backfill_lock()
        embedded += this_round
        if deadline is not None and time.monotonic() >= deadline:
            if requeue and (backend.has_pending_embeddings() or has_stale_gists()):
                request_embedding_backfill()
            break
        # Mail stored while we held the lease was not picked up by its own (refused) backfill.
        if not this_round or not (backend.has_pending_embeddings() or has_stale_gists()):
            break
    try:
        backend.refresh_vocabulary()  # the "did you mean" word list (PostgreSQL; throttled)
    except Exception:
        logger.exception("search: refreshing the vocabulary failed")
    return embedded


def _embed_continuations(documents: Sequence[Mapping[str, Any]], embedder: Embedder) -> list[bytes]:
    """The packed continuation vector of each document (b"" for a text without one), embedded in one batch."""
    texts = [continuation_text(row["title"], row["body"]) for row in documents]
    wanted = [index for index, text in enumerate(texts) if text]
    packed = [b""] * len(texts)
    if wanted:
        vectors = embedder.embed_documents([texts[index] for index in wanted])
        for index, vector in zip(wanted, vectors, strict=True):
            packed[index] = pack(vector)
    return packed


def store_gists(documents: Sequence[Mapping[str, Any]], embedder: Embedder) -> dict[int, np.ndarray]:
    """Embed the gists (opening and continuation passages) of these message documents ({id, title, body,
    content_hash} rows) and store each one whose document still has that content hash (a document re-indexed
    meanwhile stays stale). Returns {document id: its passage rows} for all of them."""
    if not documents:
        return {}
    vectors = embedder.embed_documents([gist_text(row["title"], row["body"]) for row in documents])
    continuations = _embed_continuations(documents, embedder)
    hashes = {row["id"]: row["content_hash"] for row in documents}
    with transaction.atomic():
        current = dict(SearchDocument.objects.filter(pk__in=list(hashes)).values_list("id", "content_hash"))
        keep = [
            (row["id"], vector, continuation)
            for row, vector, continuation in zip(documents, vectors, continuations, strict=True)
            if current.get(row["id"]) == hashes[row["id"]]
        ]
        SearchGist.objects.filter(document_id__in=[pk for pk, _, _ in keep]).delete()
        SearchGist.objects.bulk_create(
            [
                SearchGist(
                    document_id=pk,
                    embedder=embedder.key,
                    content_hash=hashes[pk],
                    vector=pack(vector),
                    continuation=continuation,
                )
                for pk, vector, continuation in keep
            ]
        )
        _new_gist_generation()
    return {
        row["id"]: passage_rows(pack(vector), continuation)
        for row, vector, continuation in zip(documents, vectors, continuations, strict=True)
    }


def _new_gist_generation() -> None:
    SearchIndexState.objects.get_or_create(pk=1)
    SearchIndexState.objects.filter(pk=1).update(gist_generation=uuid.uuid4().hex)


def store_continuations(gists: Sequence[Mapping[str, Any]], embedder: Embedder) -> int:
    """Embed the continuation passage of these current gists ({id, title, body, content_hash} rows of their
    documents; gists stored before continuations existed) and store it where the gist is still that of this
    content. Returns how many were stored."""
    if not gists:
        return 0
    continuations = _embed_continuations(gists, embedder)
    stored = 0
    with transaction.atomic():
        for row, continuation in zip(gists, continuations, strict=True):
            stored += SearchGist.objects.filter(
                document_id=row["id"], embedder=embedder.key, content_hash=row["content_hash"]
            ).update(continuation=continuation)
        _new_gist_generation()
    return stored


def embed_stale_gists(
    *,
    embedder: Embedder | None = None,
    deadline: float | None = None,
    max_documents: int | None = None,
    progress: Callable[[int], object] | None = None,
) -> int:
    """Embed missing or stale gists, oldest documents first, then the missing continuations of current ones,
    one committed batch at a time (resumable: what is stored stays current, the rest is found stale again).
    Returns how many documents got a gist or a continuation. Nothing when SEARCH_GIST_EMBEDDER is "none"."""
    embedder = embedder or get_gist_embedder()
    if embedder is None:
        return 0
    done = 0
    key = embedder.key
    sources: list[tuple[Callable[[str, int], list[dict[str, Any]]], Callable[..., object]]] = [
        (_stale_gist_batch, store_gists),
        (_continuation_batch, store_continuations),
    ]
    for fetch, store in sources:
        while max_documents is None or done < max_documents:
            take = GIST_BATCH if max_documents is None else min(GIST_BATCH, max_documents - done)
            batch = fetch(key, take)
            if not batch:
                break
            store(batch, embedder)
            done += len(batch)
            if progress is not None:
                progress(len(batch))
            if deadline is not None and time.monotonic() >= deadline:
                return done
    return done


def _stale_gist_batch(embedder_key: str, take: int) -> list[dict[str, Any]]:
    rows = stale_documents(embedder_key).order_by("id").values("id", "title", "body", "content_hash")
    return list(rows[:take])


def _continuation_batch(embedder_key: str, take: int) -> list[dict[str, Any]]:
    rows = (
        without_continuation(embedder_key)
        .order_by("document_id")
        .values("document_id", "document__title", "document__body", "content_hash")
    )
    return [
        {
            "id": row["document_id"],
            "title": row["document__title"],
            "body": row["document__body"],
            "content_hash": row["content_hash"],
        }
        for row in rows[:take]
    ]


def gists_for(
    documents: Sequence[dict[str, Any]], embedder: Embedder, *, compute_missing: int
) -> dict[int, np.ndarray]:
    """{document id: gist passage rows} for these message documents ({id, content_hash} rows): the stored
    ones, plus up to `compute_missing` embedded (and stored) now. When more are missing, only the stored ones."""
    found = stored_gists(documents, embedder.key)
    missing = [row["id"] for row in documents if row["id"] not in found]
    if missing and len(missing) <= compute_missing:
        texts = list(SearchDocument.objects.filter(pk__in=missing).values("id", "title", "body", "content_hash"))
        found.update(store_gists(texts, embedder))
    return found


# --- saved searches ---------------------------------------------------------------------------------------

NAME_MAX_LENGTH = 100
QUERY_MAX_LENGTH = 1000


class InvalidSavedSearch(ValueError):
    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.field = field


def _clean(*, owner: Any, name: str, query: str) -> tuple[str, str]:
    name, query = (name or "").strip(), (query or "").strip()
    if not name:
        raise InvalidSavedSearch("A saved search needs a name, e.g. Taxes", field="name")
    if len(name) > NAME_MAX_LENGTH:
        raise InvalidSavedSearch(f"A name is at most {NAME_MAX_LENGTH} characters long", field="name")
    if not query:
        raise InvalidSavedSearch("A saved search needs a query, e.g. tag:taxes after:2024", field="query")
    if len(query) > QUERY_MAX_LENGTH:
        raise InvalidSavedSearch(f"A query is at most {QUERY_MAX_LENGTH} characters long", field="query")
    try:  # the same check as the search box: unknown operators, dates and account names are refused
        filters_for_query(parse_search(query), user=owner)
    except ValueError as exc:
        raise InvalidSavedSearch(str(exc), field="query") from exc
    return name, query


def _save(saved: SavedSearch, fields: list[str] | None) -> SavedSearch:
    try:
        with transaction.atomic():
            saved.save(update_fields=fields)
    except IntegrityError as exc:
        raise InvalidSavedSearch(f"You already have a saved search named {saved.name!r}", field="name") from exc
    return saved


def create_saved_search(*, owner: Any, name: str, query: str) -> SavedSearch:
    name, query = _clean(owner=owner, name=name, query=query)
    return _save(SavedSearch(owner=owner, name=name, query=query), None)


def update_saved_search(*, saved: SavedSearch, name: str | None = None, query: str | None = None) -> SavedSearch:
    saved.name, saved.query = _clean(
        owner=saved.owner,
        name=saved.name if name is None else name,
        query=saved.query if query is None else query,
    )
    return _save(saved, ["name", "query"])


def delete_saved_search(*, saved: SavedSearch) -> None:
    saved.delete()
