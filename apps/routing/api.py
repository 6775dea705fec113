"""Routing JSON API: /api/filters (validated like the admin and the UI) and /api/fetcher/* controls.

Fetcher endpoints follow the seed: GET status, POST start | stop | fetch (sync now; new mail is routed and
its runs queued) | run (sync, route and process the cycle's runs now). Fetch and run answer 202 with the
cycle id; the cycle's progress is on GET status and the Fetcher page.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from ninja import Field, Router, Schema, Status
from ninja.errors import HttpError

from apps.routing import actions, selectors
from apps.routing.matching import backtracking_warning
from apps.routing.models import CycleTrigger, FetchCycle, Filter
from mailagent import ratelimit

router = Router(tags=["routing"])
fetcher_router = Router(tags=["fetcher"])


# Filter.order is a PositiveIntegerField: 0 … the largest integer every database column holds.
MAX_FILTER_ORDER = 2**31 - 1


RuleActionName = Literal["", "read", "flag", "archive", "move", "tag"]
RULE_ACTION_HELP = (
    "Also done to each new mail the filter matches, here and on the mail server: '' (nothing), read, flag, "
    "archive, move (to mailActionFolder) or tag (add mailActionTag: an IMAP keyword, Gmail label or Outlook "
    "category on the server)."
)


class FilterIn(Schema):
    directorId: int
    field: str
    regex: str
    caseInsensitive: bool = True
    description: str = ""
    enabled: bool = True
    order: int | None = Field(None, ge=0, le=MAX_FILTER_ORDER)
    saveAttachments: bool = False
    mailAction: RuleActionName = Field("", description=RULE_ACTION_HELP)
    mailActionFolder: str = Field("", max_length=512, description="The folder for mailAction 'move'.")
    mailActionTag: str = Field("", max_length=64, description="The tag for mailAction 'tag'.")


class FilterPatch(Schema):
    directorId: int | None = None
    field: str | None = None
    regex: str | None = None
    caseInsensitive: bool | None = None
    description: str | None = None
    enabled: bool | None = None
    order: int | None = Field(None, ge=0, le=MAX_FILTER_ORDER)
    saveAttachments: bool | None = None
    mailAction: RuleActionName | None = Field(None, description=RULE_ACTION_HELP)
    mailActionFolder: str | None = Field(None, max_length=512, description="The folder for mailAction 'move'.")
    mailActionTag: str | None = Field(None, max_length=64, description="The tag for mailAction 'tag'.")


class FilterOut(Schema):
    id: int
    directorId: int
    directorName: str
    field: str
    regex: str
    caseInsensitive: bool
    description: str
    enabled: bool
    order: int
    createdAt: dt.datetime
    errorCount: int
    lastError: str
    saveAttachments: bool
    mailAction: str
    mailActionFolder: str
    mailActionTag: str
    warning: str = Field(
        "",
        description="Set when the pattern was just saved and measured to backtrack catastrophically (it would "
        "time out on some mail); empty otherwise",
    )


class ErrorOut(Schema):
    error: str
    field: str | None = None


def _filter_out(item: Filter, *, warning: str = "") -> dict[str, Any]:
    return {
        "warning": warning,
        "id": item.pk,
        "directorId": item.director_id,
        "directorName": item.director.name,
        "field": item.field,
        "regex": item.regex,
        "caseInsensitive": item.case_insensitive,
        "description": item.description,
        "enabled": item.enabled,
        "order": item.order,
        "createdAt": item.created_at,
        "errorCount": item.error_count,
        "lastError": item.last_error,
        "saveAttachments": item.save_attachments,
        "mailAction": item.mail_action,
        "mailActionFolder": item.mail_action_folder,
        "mailActionTag": item.mail_action_tag,
    }


def _validation_error(exc: ValidationError) -> Status:
    field, messages = next(iter(exc.message_dict.items()))
    return Status(400, {"error": messages[0], "field": field})


@router.get("", response=list[FilterOut])
def list_filters(request: HttpRequest) -> list[dict[str, Any]]:
    return [_filter_out(item) for item in selectors.list_filters_for_user(user=request.user)]


@router.post("", response={201: FilterOut, 400: ErrorOut})
def create_filter(request: HttpRequest, payload: FilterIn) -> Status:
    director = selectors.access_director(user=request.user, director_id=payload.directorId)
    try:
        item = actions.create_filter(
            director=director,
            field_name=payload.field.lower(),
            regex_text=payload.regex,
            case_insensitive=payload.caseInsensitive,
            description=payload.description,
            enabled=payload.enabled,
            order=payload.order,
            save_attachments=payload.saveAttachments,
            mail_action=payload.mailAction,
            mail_action_folder=payload.mailActionFolder,
            mail_action_tag=payload.mailActionTag,
        )
    except ValidationError as exc:
        return _validation_error(exc)
    return Status(
        201, _filter_out(item, warning=backtracking_warning(item.regex, case_insensitive=item.case_insensitive))
    )


class RouteOut(Schema):
    messageId: int
    subject: str
    directorId: int
    directorName: str
    filterId: int
    field: str
    regex: str
    matched: str


class TestOut(Schema):
    messages: int
    evaluations: int
    routes: list[RouteOut]
    errors: list[dict[str, Any]]


@router.post("/test", response=TestOut)
def test_filters(request: HttpRequest, last: int = 50, directorId: int | None = None) -> dict[str, Any]:
    """Dry run: route the newest `last` stored emails through the current filters; nothing is created."""
    return preview_json(request, last=last, director_id=directorId)


def preview_json(request: HttpRequest, *, last: int, director_id: int | None) -> dict[str, Any]:
    director_ids = None
    if director_id is not None:
        director_ids = {selectors.access_director(user=request.user, director_id=director_id).pk}
    preview = selectors.preview_routes(user=request.user, last=last, director_ids=director_ids)
    outcome = preview.outcome
    return {
        "messages": outcome.messages,
        "evaluations": outcome.evaluations,
        "routes": [
            {
                "messageId": message_id,
                "subject": preview.subjects.get(message_id, ""),
                "directorId": match.director_id,
                "directorName": match.director_name,
                "filterId": match.filter_id,
                "field": match.field,
                "regex": match.regex,
                "matched": match.matched_text,
            }
            for message_id, match in outcome.routes
        ],
        "errors": [{"filterId": e.filter_id, "messageId": e.message_id, "error": e.error} for e in outcome.errors],
    }


@router.get("/{filter_id}", response=FilterOut)
def get_filter(request: HttpRequest, filter_id: int) -> dict[str, Any]:
    return _filter_out(selectors.access_filter(user=request.user, filter_id=filter_id))


@router.put("/{filter_id}", response={200: FilterOut, 400: ErrorOut})
def update_filter(request: HttpRequest, filter_id: int, payload: FilterPatch) -> Status:
    item = selectors.access_filter(user=request.user, filter_id=filter_id)
    data = payload.dict(exclude_unset=True)
    changes: dict[str, Any] = {}
    if data.get("directorId") is not None:
        changes["director"] = selectors.access_director(user=request.user, director_id=data["directorId"])
    for api_name, model_name in (
        ("field", "field"),
        ("regex", "regex"),
        ("caseInsensitive", "case_insensitive"),
        ("description", "description"),
        ("enabled", "enabled"),
        ("order", "order"),
        ("saveAttachments", "save_attachments"),
        ("mailAction", "mail_action"),
        ("mailActionFolder", "mail_action_folder"),
        ("mailActionTag", "mail_action_tag"),
    ):
        if data.get(api_name) is not None:
            changes[model_name] = data[api_name].lower() if api_name == "field" else data[api_name]
    try:
        item = actions.update_filter(item=item, **changes)
    except ValidationError as exc:
        return _validation_error(exc)
    warning = ""
    if "regex" in changes or "case_insensitive" in changes:
        warning = backtracking_warning(item.regex, case_insensitive=item.case_insensitive)
    return Status(200, _filter_out(item, warning=warning))


@router.delete("/{filter_id}", response={204: None})
def delete_filter(request: HttpRequest, filter_id: int) -> Status:
    actions.delete_filter(item=selectors.access_filter(user=request.user, filter_id=filter_id))
    return Status(204, None)


# --- fetcher -------------------------------------------------------------------------------------------


class CycleOut(Schema):
    id: int
    ownerId: int | None
    trigger: str
    status: str
    startedAt: dt.datetime
    syncedAt: dt.datetime | None
    finishedAt: dt.datetime | None
    durationSeconds: float | None
    accountsSynced: int
    accountsFailed: int
    messagesStored: int
    runsCreated: int
    runsProcessed: int
    error: str


class FetcherStatusOut(Schema):
    running: bool
    intervalMinutes: int
    nextRun: dt.datetime | None
    currentCycle: CycleOut | None
    lastCycle: CycleOut | None
    recentCycles: list[CycleOut]


class CycleStartedOut(Schema):
    fetchCycleId: int
    status: str


def cycle_out(cycle: FetchCycle | None) -> dict[str, Any] | None:
    if cycle is None:
        return None
    return {
        "id": cycle.pk,
        "ownerId": cycle.owner_id,
        "trigger": cycle.trigger,
        "status": cycle.status,
        "startedAt": cycle.started_at,
        "syncedAt": cycle.synced_at,
        "finishedAt": cycle.finished_at,
        "durationSeconds": cycle.duration_seconds,
        "accountsSynced": cycle.accounts_synced,
        "accountsFailed": cycle.accounts_failed,
        "messagesStored": cycle.messages_stored,
        "runsCreated": cycle.runs_created,
        "runsProcessed": cycle.runs_processed,
        "error": cycle.error,
    }


def _status(request: HttpRequest) -> dict[str, Any]:
    """The caller's own fetcher; `recentCycles` are their own cycles (every owner's for staff)."""
    state = selectors.fetcher_state(owner=request.user)
    return {
        "running": state.running,
        "intervalMinutes": state.interval_minutes,
        "nextRun": state.next_run,
        "currentCycle": cycle_out(state.current),
        "lastCycle": cycle_out(state.last),
        "recentCycles": [cycle_out(c) for c in selectors.recent_cycles(user=request.user, limit=10)],
    }


@fetcher_router.get("/status", response=FetcherStatusOut)
def fetcher_status(request: HttpRequest) -> dict[str, Any]:
    return _status(request)


class StartIn(Schema):
    intervalMinutes: int | None = None


class RateLimitedOut(Schema):
    error: str
    retryAfter: int = Field(description="Seconds until the fetcher may be started or run again (also in Retry-After)")


def _rate_limited(response: HttpResponse, exc: ratelimit.RateLimited) -> Status:
    response["Retry-After"] = str(exc.retry_after)
    return Status(429, {"error": str(exc), "retryAfter": exc.retry_after})


@fetcher_router.post("/start", response={200: FetcherStatusOut, 429: RateLimitedOut})
def fetcher_start(request: HttpRequest, response: HttpResponse, payload: StartIn | None = None) -> Any:
    interval = payload.intervalMinutes if payload else None
    shortest = selectors.min_interval_minutes()
    if interval is not None and not shortest <= interval <= 1440:
        raise HttpError(400, f"intervalMinutes must be between {shortest} and 1440")
    try:
        ratelimit.hit(action="fetch", user_id=request.user.pk)
    except ratelimit.RateLimited as exc:
        return _rate_limited(response, exc)
    actions.start_fetcher(owner=request.user, interval_minutes=interval)
    return _status(request)


@fetcher_router.post("/stop", response=FetcherStatusOut)
def fetcher_stop(request: HttpRequest) -> dict[str, Any]:
    actions.stop_fetcher(owner=request.user)
    return _status(request)


def _start_cycle(request: HttpRequest, response: HttpResponse, trigger: str) -> Status:
    try:
        ratelimit.hit(action="fetch", user_id=request.user.pk)
    except ratelimit.RateLimited as exc:
        return _rate_limited(response, exc)
    with transaction.atomic():
        cycle = actions.start_fetch_cycle(owner=request.user, trigger=trigger, requested_by=request.user)
    cycle.refresh_from_db()
    return Status(202, {"fetchCycleId": cycle.pk, "status": cycle.status})


@fetcher_router.post("/fetch", response={202: CycleStartedOut, 429: RateLimitedOut})
def fetcher_fetch(request: HttpRequest, response: HttpResponse) -> Status:
    return _start_cycle(request, response, CycleTrigger.FETCH)


@fetcher_router.post("/run", response={202: CycleStartedOut, 429: RateLimitedOut})
def fetcher_run(request: HttpRequest, response: HttpResponse) -> Status:
    return _start_cycle(request, response, CycleTrigger.RUN)
