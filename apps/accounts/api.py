"""Accounts JSON API (mounted at /api/accounts): the user's accounts and connection probes that drive
re-authorization.

`GET /api/accounts` and `GET /api/accounts/{id}` describe accounts without their secrets: passwords, OAuth
tokens and the SMTP password are write-only (the Settings pages take a new value); `hasCredentials` and
`hasSmtpPassword` only say whether one is stored.

Tags (mounted at /api/mail): `GET /api/mail/tags` lists your tags with counts; `GET|POST|DELETE
/api/mail/messages/{id}/tags` and `/api/mail/threads/{id}/tags` read, add (`{"name": …}`) and remove (`?name=…`)
them; tagging a thread tags each of its messages.

`GET /api/accounts/{id}/test` answers `{"ok": true}` or
`{"ok": false, "error": <category>, "authorizeUrl": <connect URL that restarts consent, or null>}`
with category one of missing_refresh_token | invalid_grant | network | other (IMAP may also say auth).
"""

from __future__ import annotations

import datetime as dt

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Field, Query, Router, Schema, Status

from apps.accounts import actions, selectors
from apps.accounts.actions import TAG_MAX_LENGTH
from apps.accounts.models import MailAccount, Message, Provider
from apps.accounts.oauth import check_account_connection

router = Router(tags=["accounts"])


class ConnectionTestOut(Schema):
    ok: bool
    error: str | None = None  # the category (network, auth, ...)
    message: str | None = None  # what exactly failed, the same words a failed sync records
    authorizeUrl: str | None = None  # the seed's JSON field name


class AccountOut(Schema):
    id: int
    name: str
    provider: str = Field(description="imap, gmail, outlook or local")
    address: str
    displayName: str
    enabled: bool
    imapHost: str
    imapPort: int | None
    imapSecurity: str
    imapUsername: str
    smtpHost: str
    smtpPort: int | None
    smtpSecurity: str
    smtpUsername: str
    hasCredentials: bool = Field(description="A password or OAuth token set is stored (never shown)")
    hasSmtpPassword: bool = Field(description="An SMTP password is stored (never shown)")
    signatureMode: str
    signature: str = Field(description="The signature replies use (the provider's or the custom one)")
    signatureText: str
    providerSignature: str
    lastSyncAt: dt.datetime | None
    lastSyncStatus: str
    lastErrorCategory: str
    lastErrorMessage: str
    createdAt: dt.datetime
    messageCount: int


def _account_out(account: MailAccount) -> dict[str, object]:
    return {
        "id": account.pk,
        "name": account.name,
        "provider": account.provider,
        "address": account.address,
        "displayName": account.display_name,
        "enabled": account.enabled,
        "imapHost": account.imap_host,
        "imapPort": account.imap_port,
        "imapSecurity": account.imap_security,
        "imapUsername": account.imap_username,
        "smtpHost": account.smtp_host,
        "smtpPort": account.smtp_port,
        "smtpSecurity": account.smtp_security,
        "smtpUsername": account.smtp_username,
        "hasCredentials": bool(account.credentials),
        "hasSmtpPassword": bool(account.smtp_password),
        "signatureMode": account.signature_mode,
        "signature": account.signature,
        "signatureText": account.signature_text,
        "providerSignature": account.provider_signature,
        "lastSyncAt": account.last_sync_at,
        "lastSyncStatus": account.last_sync_status,
        "lastErrorCategory": account.last_error_category,
        "lastErrorMessage": account.last_error_message,
        "createdAt": account.created_at,
        "messageCount": getattr(account, "message_count", None) or 0,
    }


@router.get("", response=list[AccountOut], summary="Your mail accounts (no secrets)")
def list_accounts(request: HttpRequest) -> list[dict[str, object]]:
    return [_account_out(account) for account in selectors.list_accounts_in_full_for_user(user=request.user)]


@router.get("/{account_id}", response=AccountOut, summary="One of your mail accounts (no secrets)")
def get_account(request: HttpRequest, account_id: int) -> dict[str, object]:
    return _account_out(selectors.account_with_facts(account=_owned_account(request, account_id)))


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


# --- tags: /api/mail/… ---------------------------------------------------------------------------------------

mail_router = Router(tags=["tags"])

TAG_NAME_HELP = "A tag: letters, digits and marks such as - _ . /, no spaces or quotes; compared case-insensitively"


TAG_NAME_QUERY = Query("", max_length=TAG_MAX_LENGTH, description="The tag to take off")


class TagCountOut(Schema):
    name: str
    count: int = Field(description="Your messages carrying the tag (not counting mail deleted on the server)")


class TagIn(Schema):
    name: str = Field(min_length=1, max_length=TAG_MAX_LENGTH, description=TAG_NAME_HELP)


class TagsOut(Schema):
    tags: list[str] = Field(description="The tags of the message, or every tag any message of the thread carries")


class TagErrorOut(Schema):
    error: str
    field: str | None = None


@mail_router.get("/tags", response=list[TagCountOut], summary="Your tags with how many messages carry each")
def list_tags(request: HttpRequest) -> list[dict[str, object]]:
    return [{"name": tag.name, "count": tag.count} for tag in selectors.list_tags_for_user(user=request.user)]


def _tags_out(messages: list[Message]) -> dict[str, object]:
    return {"tags": selectors.tags_of_messages(message_ids=[message.pk for message in messages])}


def _thread_messages(request: HttpRequest, thread_id: int) -> list[Message]:
    thread = selectors.access_thread(user=request.user, thread_id=thread_id)
    return selectors.thread_messages(thread=thread)


def _add(request: HttpRequest, messages: list[Message], name: str) -> Status:
    try:
        actions.add_tag(owner=request.user, messages=messages, name=name)
    except actions.InvalidTag as exc:
        return Status(422, {"error": str(exc), "field": "name"})
    return Status(200, _tags_out(messages))


def _remove(request: HttpRequest, messages: list[Message], name: str) -> Status:
    # The messages are looked up first: another user's id is a 404 whatever the name.
    if not name.strip():
        return Status(422, {"error": "Say which tag to take off: ?name=…", "field": "name"})
    actions.remove_tag(owner=request.user, messages=messages, name=name)
    return Status(200, _tags_out(messages))


@mail_router.get("/messages/{message_id}/tags", response=TagsOut)
def message_tags(request: HttpRequest, message_id: int) -> dict[str, object]:
    return _tags_out([selectors.access_message(user=request.user, message_id=message_id)])


@mail_router.post("/messages/{message_id}/tags", response={200: TagsOut, 422: TagErrorOut}, summary="Tag a message")
def tag_message(request: HttpRequest, message_id: int, payload: TagIn) -> Status:
    return _add(request, [selectors.access_message(user=request.user, message_id=message_id)], payload.name)


@mail_router.delete(
    "/messages/{message_id}/tags", response={200: TagsOut, 422: TagErrorOut}, summary="Take a tag off a message"
)
def untag_message(request: HttpRequest, message_id: int, name: str = TAG_NAME_QUERY) -> Status:
    return _remove(request, [selectors.access_message(user=request.user, message_id=message_id)], name)


@mail_router.get("/threads/{thread_id}/tags", response=TagsOut)
def thread_tags(request: HttpRequest, thread_id: int) -> dict[str, object]:
    return _tags_out(_thread_messages(request, thread_id))


@mail_router.post(
    "/threads/{thread_id}/tags", response={200: TagsOut, 422: TagErrorOut}, summary="Tag every message of a thread"
)
def tag_thread(request: HttpRequest, thread_id: int, payload: TagIn) -> Status:
    return _add(request, _thread_messages(request, thread_id), payload.name)


@mail_router.delete(
    "/threads/{thread_id}/tags",
    response={200: TagsOut, 422: TagErrorOut},
    summary="Take a tag off every message of a thread",
)
def untag_thread(request: HttpRequest, thread_id: int, name: str = TAG_NAME_QUERY) -> Status:
    return _remove(request, _thread_messages(request, thread_id), name)
