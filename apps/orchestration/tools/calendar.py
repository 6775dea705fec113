"""calendar_read, calendar_add and todo_add against the account's own provider: Microsoft Graph
(calendarView, events, To Do lists) for Outlook, Google Calendar v3 and Tasks v1 for Gmail. IMAP and
local accounts have no calendar: the model gets a structured error saying so, as it does when the
account was connected without calendar/to-do permission (reason "missing_scope")."""

from __future__ import annotations

import datetime as dt
from typing import Any, NamedTuple

import requests
from django.conf import settings

from apps.accounts import oauth
from apps.accounts.models import MailAccount, Provider
from apps.accounts.providers.base import ProviderError
from apps.llm import ToolFailure
from apps.orchestration.approvals import request_calendar_approval
from apps.orchestration.prepared import PreparedQuery
from apps.orchestration.tools.context import Actor, RunContext
from apps.orchestration.tools.schemas import CalendarAddArgs, CalendarReadArgs, TodoAddArgs

MAX_EVENTS = 50


class ToolAccount(NamedTuple):
    pk: int
    name: str
    provider: str


_OWNER_ACCOUNTS = PreparedQuery(  # compiled once: read at the start of every director run
    MailAccount,
    lambda owner_id: MailAccount.objects.filter(owner_id=owner_id).values_list(
        "pk", "name", "provider", "enabled", "directors"
    ),
    "owner_id",
)


def tool_accounts(ctx: RunContext) -> list[ToolAccount]:
    """Accounts the director's tools may use: its chosen accounts (the owner's), or all of the owner's enabled
    ones, with a calendar. Read once per run (cached in the run context) as plain values: the tool list needs
    ids, names and providers, not the account rows with their secrets."""
    if "tool_accounts" not in ctx.cache:
        # One query: the owner's accounts, each with the directors that chose it (a row per choice).
        rows = _OWNER_ACCOUNTS(owner_id=ctx.owner_id)
        chosen = {row[0] for row in rows if row[4] == ctx.director.pk}
        usable = {row[0]: row for row in rows if (row[0] in chosen if chosen else row[3])}
        ctx.cache["tool_accounts"] = [
            ToolAccount(pk, name, provider)
            for pk, name, provider, _enabled, _director in usable.values()
            if provider in (Provider.OUTLOOK, Provider.GMAIL)
        ]
    return list(ctx.cache["tool_accounts"])


def _account(ctx: RunContext, account_id: int) -> MailAccount:
    account = MailAccount.objects.filter(pk=account_id, owner_id=ctx.owner_id).first()
    if account is None:
        raise ToolFailure(f"no account {account_id}", reason="unknown_account")
    chosen = list(ctx.director.accounts.values_list("pk", flat=True))
    if chosen and account.pk not in chosen:
        raise ToolFailure(f"account {account_id} is not assigned to this director", reason="not_assigned")
    if account.provider not in (Provider.OUTLOOK, Provider.GMAIL):
        raise ToolFailure(
            f"account {account.name} is {account.get_provider_display()}: it has no calendar or to-do list",
            reason="unsupported_provider",
        )
    return account


def _iso(value: str, *, end_of_day: bool = False) -> dt.datetime:
    try:
        parsed = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ToolFailure(f"{value!r} is not an ISO 8601 date or datetime") from None
    if len(value.strip()) == 10 and end_of_day:
        parsed = parsed + dt.timedelta(days=1)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.astimezone(dt.UTC)


class _Http:
    """Authenticated JSON calls for one account; 401 refreshes once, 403 means a missing permission."""

    def __init__(self, account: MailAccount) -> None:
        self.account = account
        self.session = oauth.HttpSession()
        self._outlook = oauth.OutlookTokenSource(account) if account.provider == Provider.OUTLOOK else None
        self._google: Any = None

    @staticmethod
    def base(kind: str) -> str:
        if kind == "graph":
            return oauth.graph_api_endpoint()
        if kind == "calendar":
            return str(getattr(settings, "GOOGLE_CALENDAR_API_ENDPOINT", "https://www.googleapis.com/calendar/v3"))
        return str(getattr(settings, "GOOGLE_TASKS_API_ENDPOINT", "https://tasks.googleapis.com/tasks/v1"))

    def token(self, *, force: bool = False) -> str:
        try:
            if self._outlook is not None:
                return self._outlook.access_token(force_refresh=force)
            if self._google is None:
                self._google = oauth.load_gmail_credentials(self.account)
            if force or not self._google.valid:
                oauth.refresh_gmail_credentials(self._google)
                oauth.persist_gmail_credentials(account=self.account, credentials=self._google)
            return str(self._google.token)
        except ProviderError as exc:
            raise ToolFailure(f"cannot use account {self.account.name}: {exc}", reason=exc.category) from None

    def call(self, method: str, url: str, **kwargs: Any) -> Any:
        for attempt in (1, 2):
            headers = {"Authorization": f"Bearer {self.token(force=attempt == 2)}"}
            try:
                response = self.session.request(method, url, headers=headers, **kwargs)
            except requests.RequestException as exc:
                raise ToolFailure(f"could not reach the provider: {exc}", reason="network") from None
            if response.status_code == 401 and attempt == 1:
                continue
            if response.status_code == 403:
                raise ToolFailure(
                    f"account {self.account.name} was connected without calendar/to-do permission; reconnect it",
                    reason="missing_scope",
                )
            if response.status_code >= 400:
                raise ToolFailure(
                    f"the provider refused ({response.status_code}): {response.text[:300]}", reason="provider_error"
                )
            return response.json() if response.content else {}
        raise ToolFailure("the provider rejected the refreshed token", reason="auth")

    def close(self) -> None:
        if self._outlook is not None:
            self._outlook.close()
        self.session.close()


def calendar_read(ctx: RunContext, actor: Actor, args: CalendarReadArgs) -> dict[str, Any]:
    account = _account(ctx, args.accountId)
    start, end = _iso(args.dateRange.start), _iso(args.dateRange.end, end_of_day=True)
    if end <= start:
        raise ToolFailure("dateRange.end must be after dateRange.start")
    http = _Http(account)
    try:
        if account.provider == Provider.OUTLOOK:
            data = http.call(
                "GET",
                f"{http.base('graph')}/me/calendarView",
                params={
                    "startDateTime": start.isoformat(),
                    "endDateTime": end.isoformat(),
                    "$top": MAX_EVENTS,
                    "$orderby": "start/dateTime",
                },
            )
            events = [
                {
                    "id": e.get("id"),
                    "title": e.get("subject", ""),
                    "start": (e.get("start") or {}).get("dateTime"),
                    "end": (e.get("end") or {}).get("dateTime"),
                    "location": (e.get("location") or {}).get("displayName", ""),
                }
                for e in data.get("value", [])
            ]
        else:
            data = http.call(
                "GET",
                f"{http.base('calendar')}/calendars/primary/events",
                params={
                    "timeMin": start.isoformat(),
                    "timeMax": end.isoformat(),
                    "singleEvents": "true",
                    "orderBy": "startTime",
                    "maxResults": MAX_EVENTS,
                },
            )
            events = [
                {
                    "id": e.get("id"),
                    "title": e.get("summary", ""),
                    "start": (e.get("start") or {}).get("dateTime") or (e.get("start") or {}).get("date"),
                    "end": (e.get("end") or {}).get("dateTime") or (e.get("end") or {}).get("date"),
                    "location": e.get("location", ""),
                }
                for e in data.get("items", [])
            ]
    finally:
        http.close()
    return {"accountId": account.pk, "events": events}


def event_request(account: MailAccount, args: CalendarAddArgs) -> dict[str, Any]:
    """The provider request that creates the event: {"method", "path", "params", "json"}, path relative to
    the provider's API base. Google gets sendUpdates=none here; a request with attendees is stored for approval
    with sendUpdates=all (see calendar_add), so the approval shows exactly what it will send."""
    event = args.event
    start, end = _iso(event.start), _iso(event.end)
    if end <= start:
        raise ToolFailure("event.end must be after event.start")
    if account.provider == Provider.OUTLOOK:
        body: dict[str, Any] = {
            "subject": event.title,
            "body": {"contentType": "text", "content": event.description},
            "start": {"dateTime": start.strftime("%Y-%m-%dT%H:%M:%S"), "timeZone": "UTC"},
            "end": {"dateTime": end.strftime("%Y-%m-%dT%H:%M:%S"), "timeZone": "UTC"},
            "location": {"displayName": event.location},
            "attendees": [{"emailAddress": {"address": address}, "type": "required"} for address in event.attendees],
        }
        return {"method": "POST", "api": "graph", "path": "/me/events", "params": {}, "json": body}
    body = {
        "summary": event.title,
        "description": event.description,
        "location": event.location,
        "start": {"dateTime": start.isoformat()},
        "end": {"dateTime": end.isoformat()},
        "attendees": [{"email": address} for address in event.attendees],
    }
    return {
        "method": "POST",
        "api": "calendar",
        "path": "/calendars/primary/events",
        "params": {"sendUpdates": "none"},
        "json": body,
    }


def perform_request(account: MailAccount, request: dict[str, Any]) -> dict[str, Any]:
    """Make a stored provider request for the account; ToolFailure carries the provider's reason."""
    http = _Http(account)
    try:
        return dict(
            http.call(
                request["method"],
                f"{http.base(request['api'])}{request['path']}",
                params=request.get("params") or None,
                json=request.get("json"),
            )
            or {}
        )
    finally:
        http.close()


def calendar_add(ctx: RunContext, actor: Actor, args: CalendarAddArgs) -> dict[str, Any]:
    account = _account(ctx, args.accountId)
    request = event_request(account, args)
    if args.event.attendees:
        # Invitations reach other people: nothing is sent until the user approves this exact request.
        if request["api"] == "calendar":  # what approval will send: Google then mails the invitations
            request["params"] = {**request["params"], "sendUpdates": "all"}
        approval = request_calendar_approval(
            run=ctx.run, workspace=ctx.workspace, account=account, request=request, attendees=args.event.attendees
        )
        return {
            "accountId": account.pk,
            "approval": {"id": approval.pk, "status": approval.status},
            "note": "The event has attendees, so it waits for the user's approval: nothing was created or sent. "
            "Do not add it again; the user approves or rejects it.",
        }
    created = perform_request(account, request)
    return {"accountId": account.pk, "event": {"id": created.get("id"), "title": args.event.title}}


def todo_add(ctx: RunContext, actor: Actor, args: TodoAddArgs) -> dict[str, Any]:
    account = _account(ctx, args.accountId)
    task = args.task
    due = _iso(task.due) if task.due else None
    http = _Http(account)
    try:
        if account.provider == Provider.OUTLOOK:
            lists = http.call("GET", f"{http.base('graph')}/me/todo/lists").get("value", [])
            default = next(
                (x for x in lists if x.get("wellknownListName") == "defaultList"), lists[0] if lists else None
            )
            if default is None:
                raise ToolFailure("the account has no To Do list", reason="no_list")
            body: dict[str, Any] = {"title": task.title, "body": {"contentType": "text", "content": task.notes}}
            if due is not None:
                body["dueDateTime"] = {"dateTime": due.strftime("%Y-%m-%dT%H:%M:%S"), "timeZone": "UTC"}
            created = http.call("POST", f"{http.base('graph')}/me/todo/lists/{default['id']}/tasks", json=body)
            list_name = default.get("displayName", "")
        else:
            body = {"title": task.title, "notes": task.notes}
            if due is not None:
                body["due"] = due.strftime("%Y-%m-%dT00:00:00.000Z")
            created = http.call("POST", f"{http.base('tasks')}/lists/@default/tasks", json=body)
            list_name = "My Tasks"
    finally:
        http.close()
    return {"accountId": account.pk, "task": {"id": created.get("id"), "title": task.title, "list": list_name}}
