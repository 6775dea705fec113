"""GET /api/search: the same parameters and result shape as `manage.py search --json`."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema
from ninja.errors import HttpError

from apps.search.selectors import account_ids_for_user, build_filters, search_messages

router = Router(tags=["search"])


class SearchResultOut(Schema):
    message_id: str = Field(description="RFC Message-ID without angle brackets (sha256:… when it had none)")
    score: float
    sources: list[Literal["fts", "vector"]]
    snippet: str = Field(description="HTML: escaped text, matching words in <mark>")
    subject: str
    from_: str = Field(alias="from")
    date: dt.datetime | None


class SearchParams(Schema):
    q: str = Field(min_length=1, max_length=1000)
    mode: Literal["keyword", "semantic", "hybrid"] = "hybrid"
    limit: int = Field(10, ge=1, le=100)
    account: str | None = Field(None, description="One of your accounts, by name")
    folder: str | None = None
    date_from: dt.date | None = None
    date_to: dt.date | None = None
    from_address: str | None = Field(None, alias="from")
    to_address: str | None = Field(None, alias="to")
    has_attachment: bool | None = None
    kind: Literal["message", "attachment"] | None = None


@router.get("", response=list[SearchResultOut], by_alias=True, summary="Search your mail")
def search(request: HttpRequest, params: Query[SearchParams]) -> list[dict[str, object]]:
    account_ids = account_ids_for_user(request.user, params.account)
    if params.account and not account_ids:
        raise HttpError(404, f"No account named {params.account!r}")
    try:
        filters = build_filters(
            account_ids=account_ids,
            folder=params.folder,
            date_from=params.date_from,
            date_to=params.date_to,
            from_address=params.from_address,
            to_address=params.to_address,
            has_attachment=params.has_attachment,
            kind=params.kind,
        )
    except ValueError as exc:
        raise HttpError(422, str(exc)) from exc
    results = search_messages(params.q, mode=params.mode, limit=params.limit, filters=filters)
    return [result.as_json() for result in results]
