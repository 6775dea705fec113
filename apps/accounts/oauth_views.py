"""Connect and re-authorize Gmail/Outlook mailboxes: redirect to the provider, take the code back.

`?account=<id>` on a connect URL re-authorizes that (owned) account instead of adding a new one; it is
the `authorizeUrl` the accounts API hands out when a token stops working. `?next=<local path>` is where
the user lands afterwards (the home page by default).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.shortcuts import get_object_or_404, resolve_url
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET

from apps.accounts import oauth
from apps.accounts.models import MailAccount, Provider


def _safe_next(request: HttpRequest, candidate: str | None) -> str:
    if candidate and url_has_allowed_host_and_scheme(
        candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return candidate
    return ""


def _landing(request: HttpRequest, next_url: str) -> HttpResponseRedirect:
    return HttpResponseRedirect(_safe_next(request, next_url) or resolve_url("home"))


def _account_to_reauthorize(request: HttpRequest, provider: str) -> MailAccount | None:
    raw = request.GET.get("account")
    if not raw:
        return None
    if not raw.isdigit():
        raise MailAccount.DoesNotExist
    return get_object_or_404(MailAccount, pk=int(raw), owner=request.user, provider=provider)


def _connect(request: HttpRequest, *, provider: str, callback_name: str, start: Callable[..., str]) -> HttpResponse:
    try:
        account = _account_to_reauthorize(request, provider)
    except MailAccount.DoesNotExist:
        return HttpResponseBadRequest("Unknown account")
    redirect_uri = request.build_absolute_uri(oauth.oauth_path(callback_name))
    next_url = _safe_next(request, request.GET.get("next"))
    try:
        url = start(session=request.session, redirect_uri=redirect_uri, account=account, next_url=next_url)
    except oauth.OAuthNotConfigured as exc:
        messages.error(request, f"{Provider(provider).label} is not set up on this server: {exc}")
        return _landing(request, next_url)
    except oauth.OAuthCallbackError as exc:
        messages.error(request, str(exc))
        return _landing(request, next_url)
    return HttpResponseRedirect(url)


def _callback(request: HttpRequest, *, finish: Callable[..., oauth.ConnectResult], label: str) -> HttpResponse:
    try:
        result = finish(owner=request.user, session=request.session, params=request.GET.dict())
    except oauth.OAuthNotConfigured as exc:
        messages.error(request, f"{label} is not set up on this server: {exc}")
        return _landing(request, "")
    except oauth.OAuthCallbackError as exc:
        if exc.status == 400:
            return HttpResponseBadRequest(str(exc))
        messages.error(request, str(exc))
        return _landing(request, "")
    if result.purpose == "send" and not result.created:
        messages.success(request, f"{label} now lets mailagent send from {result.account.address}.")
        return _landing(request, result.next_url)
    verb = "connected" if result.created else "re-authorized"
    messages.success(request, f"{label} mailbox {result.account.address} {verb}; the first sync has been queued.")
    return _landing(request, result.next_url)


def _view(func: Callable[..., Any]) -> Callable[..., Any]:
    return login_required(require_GET(func))


@_view
def gmail_connect(request: HttpRequest) -> HttpResponse:
    return _connect(request, provider=Provider.GMAIL, callback_name="gmail_callback", start=oauth.start_gmail_connect)


@_view
def gmail_callback(request: HttpRequest) -> HttpResponse:
    return _callback(request, finish=oauth.finish_gmail_connect, label="Gmail")


@_view
def outlook_connect(request: HttpRequest) -> HttpResponse:
    return _connect(
        request, provider=Provider.OUTLOOK, callback_name="outlook_callback", start=oauth.start_outlook_connect
    )


@_view
def outlook_callback(request: HttpRequest) -> HttpResponse:
    return _callback(request, finish=oauth.finish_outlook_connect, label="Outlook")
