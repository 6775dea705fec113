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
providers/oauth_tokens (Gmail token sets, Outlook MSAL cache), which the providers use directly, and
oauth_connect (the connect flows). This module holds what a stored grant allows (send, write back) and
re-authorization (a provider raises ProviderError, and `check_account_connection` attaches the re-authorize link).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from apps.accounts.actions import record_connection_test
from apps.accounts.models import ErrorCategory, MailAccount, Provider
from apps.accounts.oauth_connect import (
    ConnectResult,
    authorize_path,
    connect_oauth_account,
    finish_gmail_connect,
    finish_outlook_connect,
    oauth_path,
    start_gmail_connect,
    start_outlook_connect,
)
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
from apps.accounts.providers.oauth_http import HttpSession, RateLimitBackoff, backoff_sleep, parse_retry_after
from apps.accounts.providers.oauth_tokens import (
    OutlookTokenSource,
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


# --- what a stored grant allows ---------------------------------------------------------------------


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
