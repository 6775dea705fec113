"""GET /api/search: the search syntax of the search page and `manage.py search` (operators such as
`from:lena is:unread date:2024-03` inside `q`), one page of results grouped by thread, the count and a
"did you mean".

/api/search/saved: your saved searches (name + query) with their counts; POST, GET/PATCH/DELETE by id."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema, Status
from ninja.errors import HttpError

from apps.search import actions
from apps.search.actions import NAME_MAX_LENGTH, QUERY_MAX_LENGTH
from apps.search.models import SavedSearch
from apps.search.selectors import (
    access_saved_search,
    account_ids_for_user,
    build_filters,
    count_matches,
    list_saved_searches,
    search_page,
)

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
        " filename: is:unread|read|starred in: account: before: after: date: kind:mail|file tag:",
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


# --- saved searches: /api/search/saved ------------------------------------------------------------------------


class SavedSearchIn(Schema):
    name: str = Field(min_length=1, max_length=NAME_MAX_LENGTH)
    query: str = Field(min_length=1, max_length=QUERY_MAX_LENGTH, description="A query in the syntax of `q` above")


class SavedSearchPatch(Schema):
    name: str | None = Field(None, min_length=1, max_length=NAME_MAX_LENGTH)
    query: str | None = Field(None, min_length=1, max_length=QUERY_MAX_LENGTH)


class SavedSearchOut(Schema):
    id: int
    name: str
    query: str
    count: int | None = Field(
        description="Messages and files the query matches by words and operators; null when it cannot run now"
    )
    error: str = Field(description="Why the query cannot run now (an account it names was removed), else empty")
    createdAt: dt.datetime


class SavedSearchErrorOut(Schema):
    error: str
    field: str | None = None


def _saved_out(saved: SavedSearch, count: int | None, error: str) -> dict[str, object]:
    return {
        "id": saved.pk,
        "name": saved.name,
        "query": saved.query,
        "count": count,
        "error": error,
        "createdAt": saved.created_at,
    }


def _saved_with_count(user: object, saved: SavedSearch) -> dict[str, object]:
    try:
        return _saved_out(saved, count_matches(user=user, query=saved.query), "")
    except ValueError as exc:
        return _saved_out(saved, None, str(exc))


@router.get("/saved", response=list[SavedSearchOut], summary="Your saved searches with their counts")
def list_saved(request: HttpRequest) -> list[dict[str, object]]:
    return [_saved_out(row.saved, row.count, row.error) for row in list_saved_searches(user=request.user)]


@router.post("/saved", response={201: SavedSearchOut, 422: SavedSearchErrorOut}, summary="Save a search")
def create_saved(request: HttpRequest, payload: SavedSearchIn) -> Status:
    try:
        saved = actions.create_saved_search(owner=request.user, name=payload.name, query=payload.query)
    except actions.InvalidSavedSearch as exc:
        return Status(422, {"error": str(exc), "field": exc.field})
    return Status(201, _saved_with_count(request.user, saved))


@router.get("/saved/{saved_search_id}", response=SavedSearchOut)
def get_saved(request: HttpRequest, saved_search_id: int) -> dict[str, object]:
    return _saved_with_count(request.user, access_saved_search(user=request.user, saved_search_id=saved_search_id))


@router.patch("/saved/{saved_search_id}", response={200: SavedSearchOut, 422: SavedSearchErrorOut})
def update_saved(request: HttpRequest, saved_search_id: int, payload: SavedSearchPatch) -> Status:
    saved = access_saved_search(user=request.user, saved_search_id=saved_search_id)
    try:
        saved = actions.update_saved_search(saved=saved, name=payload.name, query=payload.query)
    except actions.InvalidSavedSearch as exc:
        return Status(422, {"error": str(exc), "field": exc.field})
    return Status(200, _saved_with_count(request.user, saved))


@router.delete("/saved/{saved_search_id}", response={204: None})
def delete_saved(request: HttpRequest, saved_search_id: int) -> Status:
    actions.delete_saved_search(saved=access_saved_search(user=request.user, saved_search_id=saved_search_id))
    return Status(204, None)
