"""Accounts JSON API (mounted at /api/accounts): connection probes that drive re-authorization.

`GET /api/accounts/{id}/test` answers `{"ok": true}` or
`{"ok": false, "error": <category>, "authorizeUrl": <connect URL that restarts consent, or null>}`
with category one of missing_refresh_token | invalid_grant | network | other (IMAP may also say auth).
"""

from __future__ import annotations

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Router, Schema

from apps.accounts.models import MailAccount, Provider
from apps.accounts.oauth import check_account_connection

router = Router(tags=["accounts"])


class ConnectionTestOut(Schema):
    ok: bool
    error: str | None = None  # the category (network, auth, ...)
    message: str | None = None  # what exactly failed, the same words a failed sync records
    authorizeUrl: str | None = None  # the seed's JSON field name


def _owned_account(request: HttpRequest, account_id: int, provider: str | None = None) -> MailAccount:
    filters: dict[str, object] = {"pk": account_id, "owner": request.user}
    if provider is not None:
        filters["provider"] = provider
    return get_object_or_404(MailAccount, **filters)


def _probe(request: HttpRequest, account: MailAccount) -> dict[str, object]:
    check = check_account_connection(account=account)
    if check.ok:
        return {"ok": True}
    url = request.build_absolute_uri(check.authorize_path) if check.authorize_path else None
    return {"ok": False, "error": check.error, "message": check.message[:500] or None, "authorizeUrl": url}


@router.get("/{account_id}/test", response=ConnectionTestOut, exclude_unset=True)
def test_account_connection(request: HttpRequest, account_id: int) -> dict[str, object]:
    return _probe(request, _owned_account(request, account_id))


@router.get("/{account_id}/gmail-test", response=ConnectionTestOut, exclude_unset=True)
def test_gmail_connection(request: HttpRequest, account_id: int) -> dict[str, object]:
    return _probe(request, _owned_account(request, account_id, Provider.GMAIL))


@router.get("/{account_id}/outlook-test", response=ConnectionTestOut, exclude_unset=True)
def test_outlook_connection(request: HttpRequest, account_id: int) -> dict[str, object]:
    return _probe(request, _owned_account(request, account_id, Provider.OUTLOOK))
