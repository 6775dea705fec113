"""Settings → MCP tokens: make a mailbox token (shown once), see tokens with their last use, revoke one,
and read the audit ledger of every call made with them."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from apps.mcpserver.forms import MailboxTokenForm
from apps.workspaces import actions as workspace_actions
from apps.workspaces import selectors as workspace_selectors


def _page(
    request: HttpRequest, form: MailboxTokenForm | None = None, new_token: str = "", status: int = 200
) -> HttpResponse:
    tokens = list(workspace_selectors.mailbox_tokens(user=request.user))
    now = timezone.now()
    context = {
        "form": form or MailboxTokenForm(user=request.user),
        "tokens": [
            {"token": t, "active": t.is_active(now), "expired": t.revoked_at is None and not t.is_active(now)}
            for t in tokens
        ],
        "calls": workspace_selectors.recent_mcp_calls(user=request.user),
        "audit_days": settings.MAILAGENT_MCP_AUDIT_DAYS,
        "new_token": new_token,
        "mcp_url": request.build_absolute_uri("/mcp/mailbox/"),
    }
    response = render(request, "mcpserver/pages/tokens.html", context, status=status)
    if new_token:
        response["Cache-Control"] = "no-store"
    return response


@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return _page(request)
    form = MailboxTokenForm(request.POST, user=request.user)
    if not form.is_valid():
        return _page(request, form, status=400)
    days = form.cleaned_data["expires"]
    try:
        _token, raw = workspace_actions.issue_mailbox_token(
            owner=request.user,
            name=form.cleaned_data["name"],
            scopes=form.cleaned_data["scopes"],
            expires_at=timezone.now() + dt.timedelta(days=days) if days else None,
            account=form.cleaned_data["account"],
            folders=form.cleaned_data["folders"],
        )
    except workspace_actions.TokenError as exc:
        form.add_error(None, str(exc))
        return _page(request, form, status=400)
    # Rendered, not redirected: the token is shown this once and never lands in a URL or the session.
    return _page(request, new_token=raw)


@require_POST
def revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    token = workspace_selectors.access_mailbox_token(user=request.user, token_id=token_id)
    workspace_actions.revoke_mailbox_token(token=token)
    messages.success(request, f"“{token.name}” ({token.prefix}…) is revoked: clients using it get 401 from now on.")
    return redirect("mcp:tokens")
