"""The Inbox page (sidebar of entries by date, live-rendered detail, decisions and replies) and the pages
where a user creates workspaces for outside agents and their MCP tokens. Thin views: parse → access
selector (404 for other users' rows) → one action → page or partial."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from apps.workspaces import actions, selectors

SIDEBAR_LIMIT = 200


def _poll_seconds() -> int:
    # With Redis the page also gets a websocket push; the poll is then only a safety net.
    return 60 if settings.REDIS_URL else 20


def _sidebar_context(request: HttpRequest, selected: str = "") -> dict[str, Any]:
    entries = selectors.inbox_history(user=request.user, limit=SIDEBAR_LIMIT)
    return {
        "groups": selectors.group_by_day(entries),
        "newest_ts": selectors.entry_ts(entries[0]) if entries else 0,
        "unread": selectors.unread_count(user=request.user),
        "selected": selected,
        "poll_seconds": _poll_seconds(),
    }


@require_GET
def inbox(request: HttpRequest) -> HttpResponse:
    selected = request.GET.get("entry", "")
    context = _sidebar_context(request, selected)
    context["entry"] = None
    if selected:
        context.update(_entry_context(selectors.access_entry(user=request.user, entry_id=selected)))
    context["live_ws"] = bool(settings.REDIS_URL)
    return render(request, "workspaces/pages/inbox.html", context)


@require_GET
def inbox_sidebar(request: HttpRequest) -> HttpResponse:
    return render(
        request, "workspaces/partials/inbox_sidebar.html", _sidebar_context(request, request.GET.get("entry", ""))
    )


def _entry_context(entry: Any) -> dict[str, Any]:
    return {"entry": entry, "docs": selectors.resolve_docs(entry)}


@require_GET
def inbox_entry(request: HttpRequest, entry_id: str) -> HttpResponse:
    entry = selectors.access_entry(user=request.user, entry_id=entry_id)
    return render(request, "workspaces/partials/inbox_detail.html", _entry_context(entry))


@require_POST
def inbox_read(request: HttpRequest, entry_id: str) -> HttpResponse:
    entry = actions.mark_entry_read(entry=selectors.access_entry(user=request.user, entry_id=entry_id))
    context = {"entry": entry, "selected": str(entry.pk), "unread": selectors.unread_count(user=request.user)}
    return render(request, "workspaces/partials/inbox_read.html", context)


@require_POST
def inbox_reply(request: HttpRequest, entry_id: str) -> HttpResponse:
    entry = selectors.access_entry(user=request.user, entry_id=entry_id)
    error = ""
    try:
        entry = actions.reply_to_entry(entry=entry, text=request.POST.get("text", ""))
    except actions.InboxError as exc:
        error = str(exc)
    context = {**_entry_context(entry), "reply_error": error, "reply_text": request.POST.get("text", "")}
    return render(request, "workspaces/partials/inbox_detail.html", context, status=400 if error else 200)


@require_GET
def inbox_badge(request: HttpRequest) -> HttpResponse:
    return render(
        request, "workspaces/partials/inbox_badge.html", {"unread": selectors.unread_count(user=request.user)}
    )


def workspaces(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        try:
            workspace = actions.create_user_workspace(owner=request.user, label=request.POST.get("label", ""))
        except actions.WorkspaceError as exc:
            messages.error(request, f"{exc}.")
        else:
            messages.success(request, "Workspace created. Create a token below and give it to your agent.")
            return redirect("inbox:workspace", workspace_id=workspace.pk)
    return render(
        request, "workspaces/pages/workspaces.html", {"workspaces": selectors.user_workspaces(user=request.user)}
    )


def _workspace_context(request: HttpRequest, workspace_id: int, new_token: str = "") -> dict[str, Any]:
    workspace = selectors.access_workspace(user=request.user, workspace_id=workspace_id)
    mcp_path = f"/mcp/{workspace.pk}/"
    return {
        "workspace": workspace,
        "items": list(selectors.list_items(workspace=workspace)[:200]),
        "tokens": list(selectors.workspace_tokens(workspace=workspace)),
        "mcp_url": request.build_absolute_uri(mcp_path),
        "new_token": new_token,
        "run_url": reverse("runs:detail", args=[workspace.run_id]) if workspace.run_id else "",
    }


@require_GET
def workspace_detail(request: HttpRequest, workspace_id: int) -> HttpResponse:
    return render(request, "workspaces/pages/workspace.html", _workspace_context(request, workspace_id))


@require_POST
def token_create(request: HttpRequest, workspace_id: int) -> HttpResponse:
    workspace = selectors.access_workspace(user=request.user, workspace_id=workspace_id)
    _token, raw = actions.issue_token(workspace=workspace, name=request.POST.get("name", ""))
    # Rendered, not redirected: the token is shown this once and never lands in a URL or the session.
    response = render(request, "workspaces/pages/workspace.html", _workspace_context(request, workspace_id, raw))
    response["Cache-Control"] = "no-store"
    return response


@require_POST
def token_revoke(request: HttpRequest, workspace_id: int, token_id: int) -> HttpResponse:
    token = selectors.access_token(user=request.user, token_id=token_id)
    if token.workspace_id != workspace_id:
        return redirect("inbox:workspace", workspace_id=workspace_id)
    actions.revoke_token(token=token)
    messages.success(request, f"Token {token.prefix}… is revoked: agents using it get 401 from now on.")
    return redirect("inbox:workspace", workspace_id=workspace_id)
