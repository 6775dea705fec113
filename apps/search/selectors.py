"""Reads: message search shaped for the CLI, the API and the pages; embedding progress for diagnostics."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.db.models import Q
from django.utils import timezone

from apps.accounts.models import MailAccount, Message
from apps.search.backends import get_search_backend
from apps.search.backends.base import MODES, EmbeddingProgress, Mode, SearchFilters
from apps.search.models import DocumentKind

MAX_LIMIT = 100
MESSAGE_KINDS = (DocumentKind.MESSAGE.value, DocumentKind.ATTACHMENT.value)


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


def account_ids_for_user(user: Any, account: str | None = None) -> tuple[int, ...]:
    """The user's accounts, optionally narrowed to one by name (or id); unknown names give none."""
    accounts = MailAccount.objects.filter(owner=user)
    if account:
        by_name_or_id = Q(name=account)
        if account.isdigit():
            by_name_or_id |= Q(pk=int(account))
        accounts = accounts.filter(by_name_or_id)
    return tuple(accounts.values_list("pk", flat=True))


def account_ids_by_name(name: str) -> tuple[int, ...]:
    return tuple(MailAccount.objects.filter(name=name).values_list("pk", flat=True))


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


def parse_date_bound(value: str | dt.date | None, *, end: bool) -> dt.datetime | None:
    """A date (the whole day) or an ISO datetime; naive values are in the current time zone."""
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        moment = value
    elif isinstance(value, dt.date):
        moment = dt.datetime.combine(value, dt.time.max if end else dt.time.min)
    else:
        text = value.strip()
        try:
            moment = dt.datetime.fromisoformat(text)
            if len(text) <= 10:
                moment = dt.datetime.combine(moment.date(), dt.time.max if end else dt.time.min)
        except ValueError as exc:
            raise ValueError(f"{value!r} is not a date (YYYY-MM-DD) or ISO datetime") from exc
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment)
    return moment


def build_filters(
    *,
    account_ids: tuple[int, ...] | None,
    folder: str | None = None,
    date_from: str | dt.date | None = None,
    date_to: str | dt.date | None = None,
    from_address: str | None = None,
    to_address: str | None = None,
    has_attachment: bool | None = None,
    kind: str | None = None,
) -> SearchFilters:
    kinds: tuple[str, ...] | None = None
    if kind:
        if kind not in DocumentKind.values:
            raise ValueError(f"kind must be one of {', '.join(DocumentKind.values)}")
        kinds = (kind,)
    return SearchFilters(
        account_ids=account_ids,
        folder=folder or None,
        date_from=parse_date_bound(date_from, end=False),
        date_to=parse_date_bound(date_to, end=True),
        from_address=from_address or None,
        to_address=to_address or None,
        has_attachment=has_attachment,
        kinds=kinds,
    )


def _filter_fields(filters: SearchFilters) -> dict[str, Any]:
    return {name: getattr(filters, name) for name in SearchFilters.__dataclass_fields__}


def embedding_progress() -> EmbeddingProgress:
    """Documents embedded with the current vectors' model / all indexed documents (diagnostics)."""
    return get_search_backend().embedding_progress()
