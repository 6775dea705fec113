"""Mailbox OAuth token storage and refresh: Gmail token sets (google-auth) and Outlook's MSAL cache.

Token failures become `ProviderError(category=missing_refresh_token | invalid_grant | network | other)`.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import TYPE_CHECKING, Any

import requests
from django.db import transaction

from apps.accounts.models import MailAccount
from apps.accounts.oauth_settings import (
    _INVALID_GRANT_ERRORS,
    _TRANSIENT_ERRORS,
    GMAIL_SCOPES,
    OUTLOOK_SCOPES,
    OAuthNotConfigured,
    gmail_client_id,
    gmail_client_secret,
    google_token_uri,
    outlook_authority_host,
    outlook_client_id,
    outlook_client_secret,
    outlook_configured,
    outlook_tenant,
    require_https,
)
from apps.accounts.providers.base import ProviderError
from apps.accounts.providers.oauth_http import HttpSession

if TYPE_CHECKING:
    from collections.abc import Mapping

    import msal
    from google.oauth2.credentials import Credentials

logger = logging.getLogger(__name__)


# --- token sets: Gmail ------------------------------------------------------------------------------


def _expiry_to_text(expiry: dt.datetime | None) -> str | None:
    if expiry is None:
        return None
    if expiry.tzinfo is not None:
        expiry = expiry.astimezone(dt.UTC).replace(tzinfo=None)
    return expiry.isoformat(timespec="seconds") + "Z"


def _expiry_from_text(value: Any) -> dt.datetime | None:
    """google-auth compares naive UTC datetimes."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(dt.UTC).replace(tzinfo=None)
    return parsed


def gmail_token_set(credentials: Credentials) -> dict[str, Any]:
    return {
        "token": credentials.token,
        "refresh_token": credentials.refresh_token,
        "token_uri": credentials.token_uri,
        "client_id": credentials.client_id,
        "scopes": list(credentials.scopes or credentials.granted_scopes or []),
        "expiry": _expiry_to_text(credentials.expiry),
    }


def load_gmail_credentials(account: MailAccount) -> Credentials:
    from google.oauth2.credentials import Credentials

    data = account.credentials if isinstance(account.credentials, dict) else {}
    if not data.get("token") and not data.get("refresh_token"):
        raise ProviderError(
            "This Gmail account has no stored tokens; connect it again", category="missing_refresh_token"
        )
    return Credentials(
        token=data.get("token"),
        refresh_token=data.get("refresh_token") or None,
        # The configured endpoint wins over the stored one, so moving the token endpoint is a settings change.
        token_uri=google_token_uri() or data.get("token_uri"),
        client_id=gmail_client_id() or data.get("client_id"),
        client_secret=gmail_client_secret() or None,
        scopes=data.get("scopes") or GMAIL_SCOPES,
        expiry=_expiry_from_text(data.get("expiry")),
    )


def refresh_gmail_credentials(credentials: Credentials) -> None:
    """Refresh now; failures become categorized ProviderErrors."""
    from google.auth.exceptions import GoogleAuthError
    from google.auth.transport.requests import Request

    if not credentials.refresh_token:
        raise ProviderError(
            "Google did not grant offline access (no refresh token); connect the account again",
            category="missing_refresh_token",
        )
    if not gmail_client_secret():
        raise ProviderError("GMAIL_CLIENT_SECRET is not configured", category="other")
    try:
        with HttpSession() as http:
            credentials.refresh(Request(session=http))
    except GoogleAuthError as exc:
        raise google_token_error(exc) from exc
    except requests.RequestException as exc:
        raise ProviderError(f"Could not reach Google's token endpoint: {exc}", category="network") from exc


def google_token_error(exc: BaseException) -> ProviderError:
    """Map a google-auth failure to a re-authorization category."""
    from google.auth.exceptions import RefreshError, TransportError

    if isinstance(exc, TransportError):
        return ProviderError(f"Could not reach Google's token endpoint: {exc}", category="network")
    if isinstance(exc, RefreshError):
        details = exc.args[1] if len(exc.args) > 1 and isinstance(exc.args[1], dict) else {}
        error = str(details.get("error") or "")
        text = str(exc.args[0]) if exc.args else str(exc)
        if error in _INVALID_GRANT_ERRORS or text.startswith("invalid_grant"):
            return ProviderError(
                f"Google refused the stored authorization ({text}); re-authorize the account",
                category="invalid_grant",
            )
        if "refresh_token" in text and "necessary fields" in text:
            return ProviderError(
                "No refresh token is stored; connect the account again", category="missing_refresh_token"
            )
        if error in _TRANSIENT_ERRORS or getattr(exc, "retryable", False):
            return ProviderError(f"Google's token endpoint is unavailable: {text}", category="network")
        return ProviderError(f"Token refresh failed: {text}", category="other")
    return ProviderError(f"Token refresh failed: {exc}", category="other")


@transaction.atomic
def save_account_credentials(*, account: MailAccount, credentials: dict[str, Any]) -> MailAccount:
    """Persist a (refreshed) token set or MSAL cache; nothing else on the row is touched."""
    account.credentials = credentials
    account.save(update_fields=["credentials"])
    return account


def persist_gmail_credentials(*, account: MailAccount, credentials: Credentials) -> MailAccount:
    merged = dict(account.credentials) if isinstance(account.credentials, dict) else {}
    merged.update(gmail_token_set(credentials))
    if not merged.get("refresh_token"):
        merged["refresh_token"] = None
    return save_account_credentials(account=account, credentials=merged)


# --- token cache: Outlook (MSAL) -----------------------------------------------------------------------


def outlook_authority() -> str:
    return require_https(f"{outlook_authority_host()}/{outlook_tenant()}")


def build_outlook_app(cache: msal.SerializableTokenCache) -> msal.ConfidentialClientApplication:
    """An MSAL app bound to one account's cache. Fetches the authority's OpenID configuration."""
    import msal

    if not outlook_configured():
        raise OAuthNotConfigured("OUTLOOK_CLIENT_ID and OUTLOOK_CLIENT_SECRET are not configured")
    http = HttpSession()
    try:
        return msal.ConfidentialClientApplication(
            outlook_client_id(),
            client_credential=outlook_client_secret(),
            authority=outlook_authority(),
            instance_discovery=False,
            http_client=http,
            token_cache=cache,
        )
    except BaseException:
        http.close()
        raise


def close_outlook_app(app: msal.ConfidentialClientApplication | None) -> None:
    """MSAL never closes the HTTP session it was given."""
    if app is not None:
        try:
            app.http_client.close()
        except Exception:  # best effort
            logger.debug("closing the MSAL http client failed", exc_info=True)


def load_msal_cache(account: MailAccount) -> msal.SerializableTokenCache:
    import msal

    cache = msal.SerializableTokenCache()
    data = account.credentials if isinstance(account.credentials, dict) else {}
    if data.get("msal_cache"):
        cache.deserialize(data["msal_cache"])
    return cache


def _cache_has_refresh_token(cache: msal.SerializableTokenCache) -> bool:
    return any(True for _ in cache.search(cache.CredentialType.REFRESH_TOKEN))


def msal_error(result: Mapping[str, Any]) -> ProviderError:
    error = str(result.get("error") or "")
    description = str(result.get("error_description") or error).splitlines()[0] if result else ""
    if error in _INVALID_GRANT_ERRORS:
        return ProviderError(
            f"Microsoft refused the stored authorization ({error}: {description}); re-authorize the account",
            category="invalid_grant",
        )
    if error in _TRANSIENT_ERRORS:
        return ProviderError(f"Microsoft's token endpoint is unavailable: {description}", category="network")
    return ProviderError(f"Token request failed: {error}: {description}", category="other")


class OutlookTokenSource:
    """Access tokens for one Outlook account through MSAL, with its cache persisted on every change."""

    def __init__(self, account: MailAccount) -> None:
        self.account = account
        self._app: msal.ConfidentialClientApplication | None = None
        self._cache: msal.SerializableTokenCache | None = None

    def _application(self) -> msal.ConfidentialClientApplication:
        if self._app is None:
            self._cache = load_msal_cache(self.account)
            try:
                self._app = build_outlook_app(self._cache)
            except OAuthNotConfigured as exc:
                raise ProviderError(str(exc), category="other") from exc
            except requests.RequestException as exc:
                raise ProviderError(
                    f"Could not reach the Microsoft identity platform: {exc}", category="network"
                ) from exc
            except ValueError as exc:
                raise ProviderError(
                    f"Microsoft identity platform configuration failed: {exc}", category="other"
                ) from exc
        return self._app

    def has_refresh_token(self) -> bool:
        return _cache_has_refresh_token(load_msal_cache(self.account))

    def access_token(self, *, force_refresh: bool = False, scopes: list[str] | None = None) -> str:
        """An access token for OUTLOOK_SCOPES, or for `scopes` (sending asks for Mail.Send alone)."""
        data = self.account.credentials if isinstance(self.account.credentials, dict) else {}
        if not data.get("msal_cache"):
            raise ProviderError(
                "This Outlook account has no stored tokens; connect it again", category="missing_refresh_token"
            )
        app = self._application()
        accounts = app.get_accounts()
        home_id = data.get("home_account_id")
        chosen = next((item for item in accounts if item.get("home_account_id") == home_id), None)
        chosen = chosen or (accounts[0] if accounts else None)
        if chosen is None:
            raise ProviderError(
                "The stored Microsoft sign-in is incomplete; connect the account again",
                category="missing_refresh_token",
            )
        try:
            result = app.acquire_token_silent_with_error(scopes or OUTLOOK_SCOPES, chosen, force_refresh=force_refresh)
        except requests.RequestException as exc:
            raise ProviderError(f"Could not reach Microsoft's token endpoint: {exc}", category="network") from exc
        finally:
            self.persist()
        if result is None:
            raise ProviderError(
                "No refresh token is stored for this Outlook account; connect it again",
                category="missing_refresh_token",
            )
        if "error" in result:
            raise msal_error(result)
        return str(result["access_token"])

    def close(self) -> None:
        self.persist()
        app, self._app = self._app, None
        close_outlook_app(app)

    def persist(self) -> None:
        if self._cache is not None and self._cache.has_state_changed:
            merged = dict(self.account.credentials) if isinstance(self.account.credentials, dict) else {}
            merged["msal_cache"] = self._cache.serialize()
            save_account_credentials(account=self.account, credentials=merged)
            self._cache.has_state_changed = False
