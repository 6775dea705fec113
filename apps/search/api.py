"""GET /api/search: the search syntax of the search page and `manage.py search` (operators such as
`from:lena is:unread date:2024-03` inside `q`), one page of results grouped by thread, the count and a
"did you mean"."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema
from ninja.errors import HttpError

from apps.search.selectors import account_ids_for_user, build_filters, search_page

router = Router(tags=["search"])


class CopyOut(Schema):
    id: int
    message_id: str
    account_id: int
    folder: str


class SearchResultOut(Schema):
    kind: Literal["mail", "file"]
    score: float
    sources: list[Literal["fts", "vector", "gist"]] = Field(
        description="Which lists found it: fts = its words, vector = the meaning of a passage, gist = the meaning of"
        " its subject and opening (a hybrid search)"
    )
    snippet: str = Field(description="HTML: escaped text, matching words in <mark>")
    title: str = Field(description="The subject of a message, the name of a file")
    from_: str = Field(alias="from")
    date: dt.datetime | None
    folder: str
    matches: int = Field(description="Messages of this thread that match (1 for a file)")
    message_id: str | None = Field(
        None, description="Best matching message: RFC Message-ID without angle brackets (sha256:… when it had none)"
    )
    subject: str | None = Field(None, description="A message's subject (the title again)")
    thread_id: int | None = None
    unread: bool | None = None
    copies: int | None = Field(
        None,
        description="Copies of this mail in other folders or accounts, folded into this row (same sender, "
        "subject, date and text)",
    )
    id: int | None = Field(None, description="The best matching message's id (a mail row)")
    account_id: int | None = None
    copy_messages: list[CopyOut] | None = Field(
        None, description="The copies folded into this row: their ids, Message-IDs, accounts and folders"
    )
    file_id: int | None = None
    path: str | None = Field(None, description="A library file's path inside the library")
    mime_type: str | None = None


class SearchPageOut(Schema):
    query: str
    count: int = Field(description="Matching messages and files (every keyword match, meaning matches above the floor)")
    threads: int = Field(description="Result rows among the ranked matches: threads, loose messages, files")
    page: int
    pages: int
    has_next: bool
    did_you_mean: str | None = Field(None, description="The query with misspelt words corrected from the index")
    results: list[SearchResultOut]


class SearchParams(Schema):
    q: str = Field(
        min_length=1,
        max_length=1000,
        description='Words, "phrases", -excluded words and operators: from: to: cc: bcc: subject: has:attachment'
        " filename: is:unread|read|starred in: account: before: after: date: kind:mail|file",
    )
    mode: Literal["keyword", "semantic", "hybrid"] = "hybrid"
    limit: int = Field(10, ge=1, le=100, description="Results per page")
    page: int = Field(1, ge=1, le=1000)
    account: str | None = Field(None, description="One of your accounts, by name")
    folder: str | None = None
    date_from: dt.date | None = None
    date_to: dt.date | None = None
    from_address: str | None = Field(None, alias="from")
    to_address: str | None = Field(None, alias="to")
    has_attachment: bool | None = None
    kind: Literal["message", "attachment", "mail", "file"] | None = None


@router.get("", response=SearchPageOut, by_alias=True, summary="Search your mail and library files")
def search(request: HttpRequest, params: Query[SearchParams]) -> dict[str, object]:
    if params.account and not account_ids_for_user(request.user, params.account):
        raise HttpError(404, f"No account named {params.account!r}")
    try:
        base = build_filters(
            account_ids=None,
            folder=params.folder,
            date_from=params.date_from,
            date_to=params.date_to,
            from_address=params.from_address,
            to_address=params.to_address,
            has_attachment=params.has_attachment,
            kind=None,
        )
        query = params.q if not params.kind else f"{params.q} kind:{params.kind}"
        result = search_page(
            query, user=request.user, mode=params.mode, page=params.page, per_page=params.limit,
            account=params.account, base=base,
        )  # fmt: skip
    except ValueError as exc:
        raise HttpError(422, str(exc)) from exc
    return {
        "query": params.q,
        "count": result.count,
        "threads": result.threads,
        "page": result.page,
        "pages": result.pages,
        "has_next": result.has_next,
        "did_you_mean": result.suggestion or None,
        "results": [row.as_json() for row in result.rows],
    }
