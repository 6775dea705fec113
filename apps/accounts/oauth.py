"""Mailbox OAuth: connect flows, token storage and refresh, re-authorization, provider backoff.

This is separate from app login (allauth): a user signed in to mailagent links any number of Gmail and
Outlook mailboxes here, each with its own token set in `MailAccount.credentials` (AES-256-GCM at rest).

- Gmail: google-auth-oauthlib web flow (offline access, prompt=consent, PKCE), token set
  `{token, refresh_token, token_uri, client_id, scopes, expiry}`, refreshed with google-auth.
- Outlook: MSAL auth-code flow; the whole `msal.SerializableTokenCache` is the stored credential and is
  written back whenever MSAL changes it.

Token failures become `ProviderError(category=missing_refresh_token | invalid_grant | network | other)`;
`check_account_connection` turns them into the `{ok, error, authorizeUrl}` answer of the accounts API.

Endpoints are configurable (tests run against local fakes) and must be https.

The concerns live in sibling modules and are re-exported here, so `apps.accounts.oauth` stays the one
import: oauth_settings (scopes, endpoints, errors), providers/oauth_http (session, rate-limit backoff) and
providers/oauth_tokens (Gmail token sets, Outlook MSAL cache), which the providers use directly; this module holds
the connect flows and re-authorization (a provider raises ProviderError, and `check_account_connection` attaches the
re-authorize link).
"""

from __future__ import annotations

import datetime as dt
import logging
import secrets
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import requests
from django.db import IntegrityError, transaction
from django.urls import NoReverseMatch, reverse

from apps.accounts.actions import record_connection_test, request_sync
from apps.accounts.models import ErrorCategory, MailAccount, Provider
from apps.accounts.oauth_settings import (
    GMAIL_MODIFY_SCOPE,
    GMAIL_REQUIRED_SCOPE,
    GMAIL_SCOPES,
    GMAIL_SEND_SCOPE,
    HTTP_TIMEOUT_SECONDS,
    OUTLOOK_CONNECT_SCOPES,
    OUTLOOK_SCOPES,
    OUTLOOK_SEND_SCOPE,
    OUTLOOK_WRITE_SCOPE,
    RATE_LIMIT_MAX_ATTEMPTS,
    RATE_LIMIT_MAX_WAIT_SECONDS,
    REAUTH_CATEGORIES,
    SESSION_KEY_GMAIL,
    SESSION_KEY_OUTLOOK,
    OAuthCallbackError,
    OAuthNotConfigured,
    gmail_api_endpoint,
    gmail_client_id,
    gmail_client_secret,
    gmail_configured,
    google_auth_uri,
    google_token_uri,
    graph_api_endpoint,
    outlook_authority_host,
    outlook_client_id,
    outlook_client_secret,
    outlook_configured,
    outlook_tenant,
    require_https,
)
from apps.accounts.providers import get_provider
from apps.accounts.providers.base import ProviderError
from apps.accounts.providers.gmail.client import fetch_gmail_profile
from apps.accounts.providers.oauth_http import HttpSession, RateLimitBackoff, backoff_sleep, parse_retry_after
from apps.accounts.providers.oauth_tokens import (
    OutlookTokenSource,
    _cache_has_refresh_token,
    build_outlook_app,
    close_outlook_app,
    gmail_token_set,
    google_token_error,
    load_gmail_credentials,
    load_msal_cache,
    msal_error,
    outlook_authority,
    persist_gmail_credentials,
    refresh_gmail_credentials,
    save_account_credentials,
)
from apps.accounts.providers.outlook import fetch_graph_me

if TYPE_CHECKING:
    from collections.abc import Mapping, MutableMapping

__all__ = [
    "GMAIL_MODIFY_SCOPE",
    "GMAIL_REQUIRED_SCOPE",
    "GMAIL_SCOPES",
    "GMAIL_SEND_SCOPE",
    "HTTP_TIMEOUT_SECONDS",
    "OUTLOOK_CONNECT_SCOPES",
    "OUTLOOK_SCOPES",
    "OUTLOOK_SEND_SCOPE",
    "OUTLOOK_WRITE_SCOPE",
    "RATE_LIMIT_MAX_ATTEMPTS",
    "RATE_LIMIT_MAX_WAIT_SECONDS",
    "REAUTH_CATEGORIES",
    "ConnectResult",
    "ConnectionCheck",
    "HttpSession",
    "OAuthCallbackError",
    "OAuthNotConfigured",
    "OutlookTokenSource",
    "ProviderError",
    "RateLimitBackoff",
    "authorize_path",
    "backoff_sleep",
    "build_outlook_app",
    "check_account_connection",
    "close_outlook_app",
    "connect_oauth_account",
    "finish_gmail_connect",
    "finish_outlook_connect",
    "gmail_api_endpoint",
    "gmail_client_id",
    "gmail_client_secret",
    "gmail_configured",
    "gmail_token_set",
    "google_auth_uri",
    "google_token_error",
    "google_token_uri",
    "granted_scopes",
    "graph_api_endpoint",
    "load_gmail_credentials",
    "load_msal_cache",
    "msal_error",
    "oauth_path",
    "outlook_authority",
    "outlook_authority_host",
    "outlook_client_id",
    "outlook_client_secret",
    "outlook_configured",
    "outlook_tenant",
    "parse_retry_after",
    "persist_gmail_credentials",
    "refresh_gmail_credentials",
    "require_https",
    "save_account_credentials",
    "start_gmail_connect",
    "start_outlook_connect",
]

logger = logging.getLogger(__name__)


# --- connect flows ----------------------------------------------------------------------------------


def oauth_path(name: str, **query: Any) -> str:
    """Path of one of our OAuth views, wherever the lead mounted oauth_urls (namespaced under `mail`)."""
    path = ""
    for namespace in ("mail:mail_oauth", "mail_oauth"):
        try:
            path = reverse(f"{namespace}:{name}")
            break
        except NoReverseMatch:
            continue
    if not path:
        raise NoReverseMatch(f"mail_oauth:{name} is not mounted")
    if query:
        from urllib.parse import urlencode

        path = f"{path}?{urlencode(query)}"
    return path


def authorize_path(account: MailAccount) -> str | None:
    """Where the user restarts the consent flow for this account (None for IMAP and local accounts)."""
    if account.provider == Provider.GMAIL:
        return oauth_path("gmail_connect", account=account.pk)
    if account.provider == Provider.OUTLOOK:
        return oauth_path("outlook_connect", account=account.pk)
    return None


@dataclass(slots=True)
class ConnectResult:
    account: MailAccount
    created: bool
    next_url: str
    # "send": an incremental consent for the send scope on an existing account (no new sync is queued).
    purpose: str = ""


def granted_scopes(account: MailAccount) -> list[str]:
    """The scopes the stored grant carries (Gmail token set `scopes`, Outlook `scopes` kept at consent)."""
    data = account.credentials if isinstance(account.credentials, dict) else {}
    scopes = data.get("scopes") or []
    return [str(scope) for scope in scopes] if isinstance(scopes, list) else str(scopes).split()


def send_scope(provider: str) -> str:
    return GMAIL_SEND_SCOPE if provider == Provider.GMAIL else OUTLOOK_SEND_SCOPE


def can_send(account: MailAccount) -> bool:
    """Whether the stored grant includes the provider's send scope (IMAP/local accounts: not an OAuth question)."""
    if account.provider not in (Provider.GMAIL, Provider.OUTLOOK):
        return True
    wanted = send_scope(account.provider).lower()
    # Microsoft may answer with resource-qualified names (https://graph.microsoft.com/Mail.Send).
    return any(scope.lower() == wanted or scope.lower().endswith("/" + wanted) for scope in granted_scopes(account))


def can_write_back(account: MailAccount) -> bool:
    """Whether the stored grant lets mailagent change mail (gmail.modify / Mail.ReadWrite): an account connected
    before write-back existed has read scopes only until it is connected again."""
    if account.provider not in (Provider.GMAIL, Provider.OUTLOOK):
        return True
    wanted = (GMAIL_MODIFY_SCOPE if account.provider == Provider.GMAIL else OUTLOOK_WRITE_SCOPE).lower()
    broader = {"https://mail.google.com/"}
    return any(
        scope.lower() == wanted or scope.lower().endswith("/" + wanted) or scope.lower() in broader
        for scope in granted_scopes(account)
    )


def _unique_account_name(owner: Any, wanted: str) -> str:
    base = wanted.strip()[:90] or "mailbox"
    taken = set(MailAccount.objects.filter(owner=owner, name__startswith=base).values_list("name", flat=True))
    if base not in taken:
        return base
    for counter in range(2, 1000):
        candidate = f"{base} ({counter})"
        if candidate not in taken:
            return candidate
    return f"{base} {secrets.token_hex(3)}"


def connect_oauth_account(
    *,
    owner: Any,
    provider: str,
    address: str,
    display_name: str,
    credentials: dict[str, Any],
    account_id: int | None = None,
) -> tuple[MailAccount, bool]:
    """Create the mailbox, or re-authorize an existing one (same owner, provider and address)."""
    address = address.strip()
    with transaction.atomic():
        if account_id is not None:
            account = (
                MailAccount.objects.select_for_update().filter(pk=account_id, owner=owner, provider=provider).first()
            )
            if account is None:
                raise OAuthCallbackError("The account to re-authorize no longer exists", status=404)
            if account.address and address and account.address.lower() != address.lower():
                raise OAuthCallbackError(
                    f"You signed in as {address}, but this account is {account.address}. "
                    "Sign in with the account's own mailbox to re-authorize it.",
                    status=403,
                )
        else:
            account = (
                MailAccount.objects.select_for_update()
                .filter(owner=owner, provider=provider, address__iexact=address)
                .first()
            )
        if account is not None:
            account.address = account.address or address
            account.display_name = account.display_name or display_name
            account.credentials = credentials
            account.last_error_category = ""
            account.last_error_message = ""
            account.enabled = True
            account.save(
                update_fields=[
                    "address",
                    "display_name",
                    "credentials",
                    "last_error_category",
                    "last_error_message",
                    "enabled",
                ]
            )
            return account, False
        try:
            with transaction.atomic():
                account = MailAccount.objects.create(
                    owner=owner,
                    name=_unique_account_name(owner, address),
                    provider=provider,
                    address=address,
                    display_name=display_name,
                    credentials=credentials,
                )
        except IntegrityError:
            account = MailAccount.objects.create(
                owner=owner,
                name=f"{address[:80]} {secrets.token_hex(3)}",
                provider=provider,
                address=address,
                display_name=display_name,
                credentials=credentials,
            )
    return account, True


def _after_connect(account: MailAccount) -> None:
    request_sync(account=account)


def _gmail_flow(
    *,
    redirect_uri: str,
    state: str | None = None,
    code_verifier: str | None = None,
    scopes: list[str] | None = None,
) -> Any:
    from google_auth_oauthlib.flow import Flow

    if not gmail_configured():
        raise OAuthNotConfigured("GMAIL_CLIENT_ID and GMAIL_CLIENT_SECRET are not configured")
    client_config = {
        "web": {
            "client_id": gmail_client_id(),
            "client_secret": gmail_client_secret(),
            "auth_uri": require_https(google_auth_uri()),
            "token_uri": require_https(google_token_uri()),
            "redirect_uris": [redirect_uri],
        }
    }
    flow = Flow.from_client_config(
        client_config,
        scopes=scopes or GMAIL_SCOPES,
        redirect_uri=redirect_uri,
        state=state,
        code_verifier=code_verifier,
        autogenerate_code_verifier=code_verifier is None,
    )
    return flow


def start_gmail_connect(
    *,
    session: MutableMapping[str, Any],
    redirect_uri: str,
    account: MailAccount | None = None,
    next_url: str = "",
    extra_scopes: list[str] | None = None,
) -> str:
    """The Google consent URL; the flow's state and PKCE verifier wait in the user's session.

    `extra_scopes` (incremental consent, e.g. gmail.send on the first reply) are asked for on top of the
    read scopes, with include_granted_scopes so the new grant carries everything granted before."""
    scopes = [*GMAIL_SCOPES, *(scope for scope in extra_scopes or [] if scope not in GMAIL_SCOPES)]
    flow = _gmail_flow(redirect_uri=redirect_uri, scopes=scopes)
    extra: dict[str, str] = {}
    if account is not None and account.address:
        extra["login_hint"] = account.address
    if extra_scopes:
        extra["include_granted_scopes"] = "true"
    try:
        url, state = flow.authorization_url(access_type="offline", prompt="consent", **extra)
    finally:
        flow.oauth2session.close()
    session[SESSION_KEY_GMAIL] = {
        "state": state,
        "code_verifier": flow.code_verifier,
        "redirect_uri": redirect_uri,
        "account_id": account.pk if account is not None else None,
        "next": next_url,
        "scopes": scopes,
        "purpose": "send" if extra_scopes and account is not None else "",
    }
    if account is not None:
        logger.info(
            "gmail re-authorization started",
            extra={"event": "oauth.reauthorize", "provider": "gmail", "account_id": account.pk},
        )
    return str(url)


def _pop_pending(session: MutableMapping[str, Any], key: str, params: Mapping[str, str]) -> dict[str, Any]:
    pending = session.pop(key, None)
    if not isinstance(pending, dict):
        raise OAuthCallbackError("This sign-in link has expired or was already used; start connecting again")
    expected = str(pending.get("state") or (pending.get("flow") or {}).get("state") or "")
    if not expected or not secrets.compare_digest(expected, str(params.get("state", ""))):
        raise OAuthCallbackError("The sign-in response does not match this session (state mismatch)")
    if params.get("error"):
        description = params.get("error_description") or params["error"]
        raise OAuthCallbackError(f"The provider did not grant access: {description}", status=403)
    return pending


def finish_gmail_connect(*, owner: Any, session: MutableMapping[str, Any], params: Mapping[str, str]) -> ConnectResult:
    """Exchange the code, read the mailbox address, store the token set (create or re-authorize)."""
    from google.auth.exceptions import GoogleAuthError
    from google.oauth2.credentials import Credentials
    from oauthlib.oauth2.rfc6749.errors import OAuth2Error

    pending = _pop_pending(session, SESSION_KEY_GMAIL, params)
    code = params.get("code", "")
    if not code:
        raise OAuthCallbackError("Google sent no authorization code")
    flow = _gmail_flow(
        redirect_uri=pending["redirect_uri"],
        state=pending["state"],
        code_verifier=pending["code_verifier"],
        scopes=pending.get("scopes") or None,
    )
    try:
        token = flow.fetch_token(code=code)
    except Warning as changed:
        # oauthlib raises when fewer scopes were granted than requested; the token is still attached.
        token = getattr(changed, "token", None)
        if token is None:
            raise OAuthCallbackError(f"Google returned an unexpected grant: {changed}") from changed
    except requests.RequestException as exc:
        raise OAuthCallbackError(f"Could not reach Google to finish signing in: {exc}", status=502) from exc
    except (OAuth2Error, ValueError) as exc:  # invalid_grant for a reused/expired code, malformed answers
        raise OAuthCallbackError(f"Google refused the sign-in: {exc}") from exc
    finally:
        flow.oauth2session.close()
    granted = token.get("scope") or GMAIL_SCOPES
    granted = granted.split() if isinstance(granted, str) else list(granted)
    if GMAIL_REQUIRED_SCOPE not in granted:
        raise OAuthCallbackError(
            "Read access to Gmail was not granted; allow it on Google's consent screen", status=403
        )
    expires_at = token.get("expires_at")
    credentials = Credentials(
        token=token.get("access_token"),
        refresh_token=token.get("refresh_token"),
        token_uri=google_token_uri(),
        client_id=gmail_client_id(),
        client_secret=gmail_client_secret(),
        scopes=granted,
        expiry=dt.datetime.fromtimestamp(float(expires_at), dt.UTC).replace(tzinfo=None) if expires_at else None,
    )
    try:
        profile = fetch_gmail_profile(credentials)
    except ProviderError as exc:
        raise OAuthCallbackError(f"Signed in, but reading the Gmail profile failed: {exc}", status=502) from exc
    except GoogleAuthError as exc:
        raise OAuthCallbackError(f"Signed in, but Google rejected the new token: {exc}", status=502) from exc
    address = str(profile.get("emailAddress") or "")
    if not address:
        raise OAuthCallbackError("Google did not say which mailbox this is", status=502)
    token_set = gmail_token_set(credentials)
    account, created = connect_oauth_account(
        owner=owner,
        provider=Provider.GMAIL,
        address=address,
        display_name="",
        credentials=token_set,
        account_id=pending.get("account_id"),
    )
    if not token_set.get("refresh_token"):
        logger.warning("gmail account %s connected without a refresh token", account.pk)
    purpose = str(pending.get("purpose") or "")
    if purpose != "send" or created:
        _after_connect(account)
    return ConnectResult(account=account, created=created, next_url=str(pending.get("next") or ""), purpose=purpose)


def start_outlook_connect(
    *,
    session: MutableMapping[str, Any],
    redirect_uri: str,
    account: MailAccount | None = None,
    next_url: str = "",
    extra_scopes: list[str] | None = None,
) -> str:
    """The Microsoft consent URL; `extra_scopes` (Mail.Send on the first reply) are asked for on top."""
    import msal

    scopes = [
        *OUTLOOK_CONNECT_SCOPES,
        *(scope for scope in extra_scopes or [] if scope not in OUTLOOK_CONNECT_SCOPES),
    ]
    try:
        app = build_outlook_app(msal.SerializableTokenCache())
    except requests.RequestException as exc:
        raise OAuthCallbackError(f"Could not reach the Microsoft identity platform: {exc}", status=502) from exc
    except ValueError as exc:
        raise OAuthCallbackError(f"Microsoft identity platform configuration failed: {exc}", status=502) from exc
    extra: dict[str, Any] = {"prompt": "select_account"}
    if account is not None and account.address:
        extra = {"login_hint": account.address}
    try:
        with warnings.catch_warnings():
            # MSAL nags for response_mode=form_post, but a cross-site POST back would arrive without our
            # SameSite=Lax session cookie (and so without the pending flow). The code is bound to this
            # confidential client and to the PKCE verifier in the session, so the query response is safe.
            warnings.filterwarnings("ignore", message="response_mode='form_post' is recommended")
            flow = app.initiate_auth_code_flow(scopes, redirect_uri=redirect_uri, **extra)
    finally:
        close_outlook_app(app)
    if "error" in flow:
        raise OAuthCallbackError(f"Could not start the Microsoft sign-in: {flow.get('error_description')}", status=502)
    session[SESSION_KEY_OUTLOOK] = {
        "flow": flow,
        "account_id": account.pk if account is not None else None,
        "next": next_url,
        "scopes": scopes,
        "purpose": "send" if extra_scopes and account is not None else "",
    }
    if account is not None:
        logger.info(
            "outlook re-authorization started",
            extra={"event": "oauth.reauthorize", "provider": "outlook", "account_id": account.pk},
        )
    return str(flow["auth_uri"])


def finish_outlook_connect(
    *, owner: Any, session: MutableMapping[str, Any], params: Mapping[str, str]
) -> ConnectResult:
    import msal

    pending = _pop_pending(session, SESSION_KEY_OUTLOOK, params)
    cache = msal.SerializableTokenCache()
    app: msal.ConfidentialClientApplication | None = None
    try:
        app = build_outlook_app(cache)
        result = app.acquire_token_by_auth_code_flow(
            pending["flow"], dict(params), scopes=pending.get("scopes") or OUTLOOK_SCOPES
        )
        accounts = app.get_accounts()
    except requests.RequestException as exc:
        raise OAuthCallbackError(f"Could not reach Microsoft to finish signing in: {exc}", status=502) from exc
    except ValueError as exc:  # MSAL: state mismatch or a malformed response
        raise OAuthCallbackError(f"Microsoft sign-in failed: {exc}") from exc
    finally:
        close_outlook_app(app)
    if "error" in result:
        raise OAuthCallbackError(
            f"Microsoft refused the sign-in: {result.get('error_description') or result['error']}", status=403
        )
    try:
        me = fetch_graph_me(str(result["access_token"]))
    except ProviderError as exc:
        raise OAuthCallbackError(f"Signed in, but reading the mailbox profile failed: {exc}", status=502) from exc
    claims = result.get("id_token_claims") or {}
    address = str(me.get("mail") or me.get("userPrincipalName") or claims.get("preferred_username") or "")
    if not address:
        raise OAuthCallbackError("Microsoft did not say which mailbox this is", status=502)
    home_account_id = accounts[0]["home_account_id"] if accounts else ""
    granted = result.get("scope") or pending.get("scopes") or OUTLOOK_SCOPES
    credentials = {
        "msal_cache": cache.serialize(),
        "home_account_id": home_account_id,
        "username": address,
        # What this grant covers, so sending knows whether Mail.Send still needs the user's consent.
        "scopes": granted.split() if isinstance(granted, str) else [str(scope) for scope in granted],
    }
    account, created = connect_oauth_account(
        owner=owner,
        provider=Provider.OUTLOOK,
        address=address,
        display_name=str(me.get("displayName") or claims.get("name") or ""),
        credentials=credentials,
        account_id=pending.get("account_id"),
    )
    if not _cache_has_refresh_token(cache):
        logger.warning("outlook account %s connected without a refresh token", account.pk)
    purpose = str(pending.get("purpose") or "")
    if purpose != "send" or created:
        _after_connect(account)
    return ConnectResult(account=account, created=created, next_url=str(pending.get("next") or ""), purpose=purpose)


# --- re-authorization -------------------------------------------------------------------------------


@dataclass(slots=True)
class ConnectionCheck:
    ok: bool
    error: str = ""
    message: str = ""
    authorize_path: str | None = None


def reauth_category(category: str, provider: str) -> str:
    if provider in (Provider.GMAIL, Provider.OUTLOOK):
        return category if category in REAUTH_CATEGORIES else ErrorCategory.OTHER.value
    known = {choice.value for choice in ErrorCategory}
    return category if category in known and category else ErrorCategory.OTHER.value


def check_account_connection(*, account: MailAccount) -> ConnectionCheck:
    """Probe the mailbox once and record the outcome on the account (last_error_category)."""
    provider = get_provider(account)
    try:
        provider.test_connection()
    except ProviderError as exc:
        category = reauth_category(exc.category, account.provider)
        message = str(exc)
    except Exception as exc:
        logger.exception("account %s: connection test crashed", account.pk)
        category, message = ErrorCategory.OTHER.value, f"{type(exc).__name__}: {exc}"
    else:
        record_connection_test(account=account, error_category="")
        return ConnectionCheck(ok=True)
    finally:
        provider.close()
    record_connection_test(account=account, error_category=category, message=message)
    path = authorize_path(account)
    logger.warning(
        "account %s connection test failed: %s",
        account.pk,
        category,
        extra={
            "event": "account.test_failed",
            "account_id": account.pk,
            "provider": account.provider,
            "error": category,
        },
    )
    if path:
        logger.info(
            "re-authorization url generated for account %s",
            account.pk,
            extra={
                "event": "oauth.reauth_url",
                "account_id": account.pk,
                "provider": account.provider,
                "error": category,
            },
        )
    return ConnectionCheck(ok=False, error=category, message=message, authorize_path=path)
