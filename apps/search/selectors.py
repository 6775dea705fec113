"""Reads: message search shaped for the CLI, the API and the pages; embedding progress for diagnostics."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.http import Http404

from apps.accounts.models import Message
from apps.search.backends import get_search_backend
from apps.search.backends.base import MODES, EmbeddingProgress, Mode, SearchFilters
from apps.search.gist import gist_embedder_key, gist_progress, gists_enabled
from apps.search.kinds import DocumentPreview, document_kind
from apps.search.models import DocumentKind, SavedSearch, SearchDocument, SearchGist
from apps.search.query import parse_search
from apps.search.query_filters import (
    FILE_KIND,
    MESSAGE_KINDS,
    account_ids_by_name,
    account_ids_for_user,
    build_filters,
    filters_for_query,
    folders_condition,
    parse_date_bound,
)
from apps.search.results import MAX_PER_PAGE, PER_PAGE, ResultRow, SearchPage, did_you_mean, search_page

MAX_LIMIT = 100


@dataclass(slots=True)
class MessageResult:
    pk: int
    message_id: str
    score: float
    sources: list[str]
    snippet: str  # HTML: escaped text with the matching words in <mark>
    subject: str
    sender: str
    date: dt.datetime | None
    account_id: int
    folder: str
    kind: str
    thread_id: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "message_id": self.message_id,
            "score": round(self.score, 6),
            "sources": self.sources,
            "snippet": self.snippet,
            "subject": self.subject,
            "from": self.sender,
            "date": self.date.isoformat() if self.date else None,
        }


def normalize_mode(mode: str | None) -> Mode:
    value = (mode or "hybrid").strip().lower()
    for known in MODES:
        if value == known:
            return known
    raise ValueError(f"mode must be one of {', '.join(MODES)}")


def search_messages(
    query: str,
    *,
    mode: Mode = "hybrid",
    limit: int = 20,
    filters: SearchFilters | None = None,
    prefix_last: bool = False,
) -> list[MessageResult]:
    """Ranked messages for `query`; an attachment hit stands for its message, each message once."""
    limit = max(1, min(int(limit), MAX_LIMIT))
    filters = filters or SearchFilters()
    if filters.kinds is None:
        filters = SearchFilters(**{**_filter_fields(filters), "kinds": MESSAGE_KINDS})
    backend = get_search_backend()
    options: dict[str, Any] = {"filters": filters, "limit": limit + 10}
    if mode != "semantic":
        options["prefix_last"] = prefix_last
    hits = backend.search(query, mode=mode, **options)
    ordered: list[tuple[int, Any]] = []
    seen: set[int] = set()
    for hit in hits:
        if hit.message_id is None or hit.message_id in seen:
            continue
        seen.add(hit.message_id)
        ordered.append((hit.message_id, hit))
        if len(ordered) >= limit:
            break
    messages = {
        m.pk: m
        for m in Message.objects.filter(pk__in=[pk for pk, _ in ordered]).only(
            "id",
            "message_id",
            "dedupe_key",
            "subject",
            "from_name",
            "from_address",
            "date",
            "account_id",
            "folder",
            "thread_id",
        )
    }
    results: list[MessageResult] = []
    for pk, hit in ordered:
        message = messages.get(pk)
        if message is None:
            continue
        results.append(
            MessageResult(
                pk=pk,
                message_id=message.message_id or message.dedupe_key,
                score=hit.score,
                sources=hit.sources,
                snippet=hit.snippet,
                subject=message.subject,
                sender=message.sender,
                date=message.date,
                account_id=message.account_id,
                folder=message.folder,
                kind=hit.kind,
                thread_id=message.thread_id,
            )
        )
    return results


def _filter_fields(filters: SearchFilters) -> dict[str, Any]:
    return {name: getattr(filters, name) for name in SearchFilters.__dataclass_fields__}


def embedding_progress() -> EmbeddingProgress:
    """Documents embedded with the current vectors' model / all indexed documents (diagnostics)."""
    return get_search_backend().embedding_progress()


ETA_CACHE_KEY = "search:embedding-eta-samples"
ETA_WINDOW_SECONDS = 180  # the rate is measured over the last few minutes of progress
ETA_MIN_SPAN_SECONDS = 20  # and only once it spans this long (one batch is not a rate)


def embedding_eta_seconds(done: int, pending: int, *, now: float | None = None) -> float | None:
    """About how long until the pending documents and gists are embedded, at the rate measured between
    the progress samples of the last few minutes (kept in the shared cache, so every process and every
    poll of the panel adds to the same measurement); None while there is no rate to go by."""
    import time

    from django.core.cache import cache

    now = time.time() if now is None else now
    samples = [s for s in cache.get(ETA_CACHE_KEY, []) if now - s[0] <= ETA_WINDOW_SECONDS and s[1] <= done]
    samples.append((now, done))
    cache.set(ETA_CACHE_KEY, samples[-60:], ETA_WINDOW_SECONDS)
    if not pending:
        return 0.0
    first_time, first_done = samples[0]
    span = now - first_time
    if span < ETA_MIN_SPAN_SECONDS or done <= first_done:
        return None
    return pending / ((done - first_done) / span)


def progress_context() -> dict[str, Any]:
    """The progress panel's numbers, with the time left at the measured rate (vectors and gists together)."""
    progress, gists = embedding_progress(), gist_embedding_progress()
    pending = progress.pending + (gists.pending if gists.embedder else 0)
    eta = embedding_eta_seconds(progress.done + gists.done, pending)
    return {
        "progress": progress,
        "gists": gists,
        "eta_minutes": None if eta is None else max(1, round(eta / 60)),
        "hidden": False,
    }


def index_work_pending() -> bool:
    """Whether documents wait for vectors or messages for a gist or its continuation: three cheap reads (~10 ms
    together on 44,715 mails, the last one on a partial index; the counts of the progress panel take 260 ms);
    a gist stale after a re-index is not seen."""
    if get_search_backend().has_pending_embeddings():
        return True
    if not gists_enabled():
        return False
    if SearchDocument.objects.filter(kind=DocumentKind.MESSAGE, gist__isnull=True).exists():
        return True
    return SearchGist.objects.filter(continuation__isnull=True).exists()


def gist_embedding_progress() -> EmbeddingProgress:
    """Messages with a current gist (apps/search/gist.py) / message documents; embedder "" when switched off."""
    done, total = gist_progress()  # by the stored keys: the model is not loaded for a count
    return EmbeddingProgress(done=done, total=total, embedder=gist_embedder_key())


def document_preview(user: Any, kind: str, pk: int) -> DocumentPreview | None:
    """One of `user`'s documents of a registered kind (None: not theirs, gone, or no such kind)."""
    entry = document_kind(kind)
    return entry.preview(user, pk) if entry is not None else None


# --- saved searches ---------------------------------------------------------------------------------------


def access_saved_search(*, user: Any, saved_search_id: object) -> SavedSearch:
    try:
        pk = int(str(saved_search_id))
    except (TypeError, ValueError):
        raise Http404("No such saved search") from None
    saved = SavedSearch.objects.select_related("owner").filter(pk=pk, owner=user).first()
    if saved is None:
        raise Http404("No such saved search")
    return saved


@dataclass(frozen=True, slots=True)
class SavedSearchCount:
    saved: SavedSearch
    count: int | None  # messages and files the query matches by its words and operators; None: it cannot run
    error: str = ""


def count_matches(*, user: Any, query: str) -> int:
    """What the query matches by words and operators (the keyword side: no model is loaded for a count)."""
    parsed = parse_search(query)
    filters = filters_for_query(parsed, user=user)
    backend = get_search_backend()
    text = parsed.text.strip()
    if not text:
        return int(backend.browse(filters=filters, limit=1)[1])
    return int(backend.keyword_count(text, filters=filters))


def list_saved_searches(*, user: Any, counts: bool = True) -> list[SavedSearchCount]:
    rows = []
    for saved in SavedSearch.objects.filter(owner=user).order_by("name", "pk"):
        if not counts:
            rows.append(SavedSearchCount(saved=saved, count=None))
            continue
        try:  # an account named in the query may have been removed since
            rows.append(SavedSearchCount(saved=saved, count=count_matches(user=user, query=saved.query)))
        except ValueError as exc:
            rows.append(SavedSearchCount(saved=saved, count=None, error=str(exc)))
    return rows


__all__ = [
    "FILE_KIND",
    "MAX_PER_PAGE",
    "PER_PAGE",
    "MessageResult",
    "ResultRow",
    "SavedSearchCount",
    "SearchPage",
    "access_saved_search",
    "account_ids_by_name",
    "account_ids_for_user",
    "build_filters",
    "count_matches",
    "did_you_mean",
    "document_preview",
    "embedding_eta_seconds",
    "embedding_progress",
    "filters_for_query",
    "folders_condition",
    "gist_embedding_progress",
    "index_work_pending",
    "list_saved_searches",
    "normalize_mode",
    "parse_date_bound",
    "progress_context",
    "search_messages",
    "search_page",
]
