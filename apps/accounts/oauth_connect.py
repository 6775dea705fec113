"""Mailbox OAuth connect flows: the Gmail web flow and the Outlook MSAL auth-code flow, each started with
a state kept in the session and finished in the callback, which creates the mailbox or re-authorizes it
(same owner, provider and address) and queues its first sync."""

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

from apps.accounts.actions import request_sync
from apps.accounts.models import MailAccount, Provider
from apps.accounts.oauth_settings import (
    GMAIL_REQUIRED_SCOPE,
    GMAIL_SCOPES,
    OUTLOOK_CONNECT_SCOPES,
    OUTLOOK_SCOPES,
    SESSION_KEY_GMAIL,
    SESSION_KEY_OUTLOOK,
    OAuthCallbackError,
    OAuthNotConfigured,
    gmail_client_id,
    gmail_client_secret,
    gmail_configured,
    google_auth_uri,
    google_token_uri,
    require_https,
)
from apps.accounts.providers.base import ProviderError
from apps.accounts.providers.gmail.client import fetch_gmail_profile
from apps.accounts.providers.oauth_tokens import (
    _cache_has_refresh_token,
    build_outlook_app,
    close_outlook_app,
    gmail_token_set,
)
from apps.accounts.providers.outlook import fetch_graph_me

if TYPE_CHECKING:
    from collections.abc import Mapping, MutableMapping


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
