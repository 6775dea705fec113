"""Mailbox OAuth: connect flows, token storage and refresh, re-authorization, provider backoff.

This is separate from app login (allauth): a user signed in to mailagent links any number of Gmail and
Outlook mailboxes here, each with its own token set in `MailAccount.credentials` (AES-256-GCM at rest).

- Gmail: google-auth-oauthlib web flow (offline access, prompt=consent, PKCE), token set
  `{token, refresh_token, token_uri, client_id, scopes, expiry}`, refreshed with google-auth.
- Outlook: MSAL auth-code flow; the whole `msal.SerializableTokenCache` is the stored credential and is
  written back whenever MSAL changes it.

Token failures become `ProviderError(category=missing_refresh_token | invalid_grant | network | other)`;
`check_account_connection` turns them into the `{ok, error, authorizeUrl}` answer of the accounts API.

Endpoints are configurable (tests run against local fakes). OAuth libraries insist on https, so a
loopback endpoint configured as plain http (`http://127.0.0.1:<port>`) is presented to them as https and
a transport adapter speaks plain http on the wire; non-loopback endpoints must be https.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import ipaddress
import logging
import secrets
import time
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import requests
from django.conf import settings
from django.db import IntegrityError, transaction
from django.urls import NoReverseMatch, reverse
from requests.adapters import HTTPAdapter

from apps.accounts.models import ErrorCategory, MailAccount, Provider
from apps.accounts.providers.base import ProviderError

if TYPE_CHECKING:
    from collections.abc import Mapping, MutableMapping

    import msal
    from google.oauth2.credentials import Credentials

logger = logging.getLogger(__name__)

GMAIL_SCOPES = [
    "https://www.googleapis.com/auth/gmail.readonly",
    # sendAs.list, for the account's default signature. No send/modify scopes on purpose.
    "https://www.googleapis.com/auth/gmail.settings.basic",
    # The agents' calendar_read/calendar_add and todo_add tools (events and tasks only, never mail).
    "https://www.googleapis.com/auth/calendar.events",
    "https://www.googleapis.com/auth/tasks",
]
GMAIL_REQUIRED_SCOPE = GMAIL_SCOPES[0]
# MSAL adds openid/profile/offline_access itself (and refuses them here).
# Calendars/Tasks: the agents' calendar and to-do tools. Mail stays read-only.
OUTLOOK_SCOPES = ["User.Read", "Mail.Read", "Calendars.ReadWrite", "Tasks.ReadWrite"]

HTTP_TIMEOUT_SECONDS = 60.0
RATE_LIMIT_MAX_ATTEMPTS = 5
RATE_LIMIT_MAX_WAIT_SECONDS = 60.0

SESSION_KEY_GMAIL = "mail_oauth_gmail"
SESSION_KEY_OUTLOOK = "mail_oauth_outlook"

# The categories the re-authorization API reports (ErrorCategory minus "" and IMAP's "auth").
REAUTH_CATEGORIES = {
    ErrorCategory.MISSING_REFRESH_TOKEN.value,
    ErrorCategory.INVALID_GRANT.value,
    ErrorCategory.NETWORK.value,
    ErrorCategory.OTHER.value,
}
_INVALID_GRANT_ERRORS = {"invalid_grant", "interaction_required", "consent_required", "login_required"}
_TRANSIENT_ERRORS = {"temporarily_unavailable", "server_error", "internal_failure"}


class OAuthNotConfigured(Exception):
    """The provider's client id/secret are not set; connecting is impossible until they are."""


class OAuthCallbackError(Exception):
    """The provider sent the user back without a usable grant (denied, expired, tampered, wrong mailbox)."""

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


# --- settings -------------------------------------------------------------------------------------


def _setting(name: str, default: str = "") -> str:
    return str(getattr(settings, name, default) or default)


def gmail_client_id() -> str:
    return _setting("GMAIL_CLIENT_ID")


def gmail_client_secret() -> str:
    return _setting("GMAIL_CLIENT_SECRET")


def gmail_api_endpoint() -> str:
    return _setting("GMAIL_API_ENDPOINT", "https://gmail.googleapis.com").rstrip("/")


def google_auth_uri() -> str:
    return _setting("GOOGLE_OAUTH_AUTH_URI", "https://accounts.google.com/o/oauth2/auth")


def google_token_uri() -> str:
    return _setting("GOOGLE_OAUTH_TOKEN_URI", "https://oauth2.googleapis.com/token")


def outlook_client_id() -> str:
    return _setting("OUTLOOK_CLIENT_ID")


def outlook_client_secret() -> str:
    return _setting("OUTLOOK_CLIENT_SECRET")


def outlook_tenant() -> str:
    return _setting("OUTLOOK_TENANT", "common").strip("/") or "common"


def outlook_authority_host() -> str:
    return _setting("OUTLOOK_AUTHORITY_HOST", "https://login.microsoftonline.com").rstrip("/")


def graph_api_endpoint() -> str:
    return _setting("GRAPH_API_ENDPOINT", "https://graph.microsoft.com/v1.0").rstrip("/")


def gmail_configured() -> bool:
    return bool(gmail_client_id() and gmail_client_secret())


def outlook_configured() -> bool:
    return bool(outlook_client_id() and outlook_client_secret())


# --- loopback http for the OAuth libraries ----------------------------------------------------------


def _is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def library_url(url: str) -> str:
    """The URL as handed to OAuth libraries: loopback http becomes https (see LoopbackSession)."""
    parts = urlsplit(url)
    if parts.scheme == "https":
        return url
    if parts.scheme == "http" and _is_loopback(parts.hostname):
        return urlunsplit(parts._replace(scheme="https"))
    raise OAuthNotConfigured(f"OAuth endpoints must use https (got {url!r}); plain http is only allowed on loopback")


def browser_url(url: str, configured: str) -> str:
    """Undo `library_url` for a URL the user's browser must open (the authorization page)."""
    configured_parts = urlsplit(configured)
    parts = urlsplit(url)
    if configured_parts.scheme == "http" and parts.scheme == "https" and parts.netloc == configured_parts.netloc:
        return urlunsplit(parts._replace(scheme="http"))
    return url


class _PlainHttpAdapter(HTTPAdapter):
    """Sends https://<loopback> requests as plain http: only ever mounted for loopback fakes/proxies."""

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> requests.Response:
        if request.url and request.url.startswith("https://"):
            request.url = "http://" + request.url[len("https://") :]
        return super().send(request, *args, **kwargs)


class LoopbackSession(requests.Session):
    """requests.Session with a default timeout that speaks plain http to configured loopback endpoints."""

    def __init__(self, *configured_urls: str) -> None:
        super().__init__()
        for url in configured_urls:
            self.permit_plain_http(url)

    def permit_plain_http(self, configured_url: str) -> None:
        parts = urlsplit(configured_url)
        if parts.scheme == "http" and _is_loopback(parts.hostname):
            self.mount(f"https://{parts.netloc}/", _PlainHttpAdapter())

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", HTTP_TIMEOUT_SECONDS)
        verb = method if isinstance(method, str) else method.decode()
        target = url if isinstance(url, str) else url.decode()
        return super().request(verb, target, *args, **kwargs)


# --- rate limits ------------------------------------------------------------------------------------


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds: either delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return max(0.0, (when - dt.datetime.now(dt.UTC)).total_seconds())


def backoff_sleep(seconds: float) -> None:
    time.sleep(seconds)


class RateLimitBackoff:
    """Honours Retry-After (capped) for a limited number of attempts, then gives up as rate_limited."""

    def __init__(self, service: str) -> None:
        self.service = service
        self.attempts = 0

    def wait(self, retry_after: float | None) -> None:
        self.attempts += 1
        delay = retry_after if retry_after is not None else float(min(2 ** (self.attempts - 1), 30))
        if self.attempts >= RATE_LIMIT_MAX_ATTEMPTS or delay > RATE_LIMIT_MAX_WAIT_SECONDS:
            raise ProviderError(
                f"{self.service} is rate limiting this account; try again later",
                category="rate_limited",
                retry_after=delay,
            )
        logger.info("%s rate limited; waiting %.1fs (attempt %d)", self.service, delay, self.attempts)
        backoff_sleep(delay)


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
        with LoopbackSession() as http:
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
    return library_url(f"{outlook_authority_host()}/{outlook_tenant()}")


def build_outlook_app(cache: msal.SerializableTokenCache) -> msal.ConfidentialClientApplication:
    """An MSAL app bound to one account's cache. Fetches the authority's OpenID configuration."""
    import msal

    if not outlook_configured():
        raise OAuthNotConfigured("OUTLOOK_CLIENT_ID and OUTLOOK_CLIENT_SECRET are not configured")
    http = LoopbackSession(outlook_authority_host())
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

    def access_token(self, *, force_refresh: bool = False) -> str:
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
            result = app.acquire_token_silent_with_error(OUTLOOK_SCOPES, chosen, force_refresh=force_refresh)
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
    from apps.accounts.actions import request_sync

    request_sync(account=account)


def _gmail_flow(*, redirect_uri: str, state: str | None = None, code_verifier: str | None = None) -> Any:
    from google_auth_oauthlib.flow import Flow

    if not gmail_configured():
        raise OAuthNotConfigured("GMAIL_CLIENT_ID and GMAIL_CLIENT_SECRET are not configured")
    client_config = {
        "web": {
            "client_id": gmail_client_id(),
            "client_secret": gmail_client_secret(),
            "auth_uri": library_url(google_auth_uri()),
            "token_uri": library_url(google_token_uri()),
            "redirect_uris": [redirect_uri],
        }
    }
    flow = Flow.from_client_config(
        client_config,
        scopes=GMAIL_SCOPES,
        redirect_uri=redirect_uri,
        state=state,
        code_verifier=code_verifier,
        autogenerate_code_verifier=code_verifier is None,
    )
    session = flow.oauth2session
    for configured in (google_auth_uri(), google_token_uri()):
        parts = urlsplit(configured)
        if parts.scheme == "http" and _is_loopback(parts.hostname):
            session.mount(f"https://{parts.netloc}/", _PlainHttpAdapter())
    return flow


def start_gmail_connect(
    *, session: MutableMapping[str, Any], redirect_uri: str, account: MailAccount | None = None, next_url: str = ""
) -> str:
    """The Google consent URL; the flow's state and PKCE verifier wait in the user's session."""
    flow = _gmail_flow(redirect_uri=redirect_uri)
    extra: dict[str, str] = {}
    if account is not None and account.address:
        extra["login_hint"] = account.address
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
    }
    if account is not None:
        logger.info(
            "gmail re-authorization started",
            extra={"event": "oauth.reauthorize", "provider": "gmail", "account_id": account.pk},
        )
    return browser_url(url, google_auth_uri())


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
        redirect_uri=pending["redirect_uri"], state=pending["state"], code_verifier=pending["code_verifier"]
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
    from apps.accounts.providers.gmail import fetch_gmail_profile

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
    _after_connect(account)
    return ConnectResult(account=account, created=created, next_url=str(pending.get("next") or ""))


def start_outlook_connect(
    *, session: MutableMapping[str, Any], redirect_uri: str, account: MailAccount | None = None, next_url: str = ""
) -> str:
    import msal

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
            flow = app.initiate_auth_code_flow(OUTLOOK_SCOPES, redirect_uri=redirect_uri, **extra)
    finally:
        close_outlook_app(app)
    if "error" in flow:
        raise OAuthCallbackError(f"Could not start the Microsoft sign-in: {flow.get('error_description')}", status=502)
    session[SESSION_KEY_OUTLOOK] = {
        "flow": flow,
        "account_id": account.pk if account is not None else None,
        "next": next_url,
    }
    if account is not None:
        logger.info(
            "outlook re-authorization started",
            extra={"event": "oauth.reauthorize", "provider": "outlook", "account_id": account.pk},
        )
    return browser_url(str(flow["auth_uri"]), outlook_authority_host())


def finish_outlook_connect(
    *, owner: Any, session: MutableMapping[str, Any], params: Mapping[str, str]
) -> ConnectResult:
    import msal

    pending = _pop_pending(session, SESSION_KEY_OUTLOOK, params)
    cache = msal.SerializableTokenCache()
    app: msal.ConfidentialClientApplication | None = None
    try:
        app = build_outlook_app(cache)
        result = app.acquire_token_by_auth_code_flow(pending["flow"], dict(params), scopes=OUTLOOK_SCOPES)
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
    from apps.accounts.providers.outlook import fetch_graph_me

    try:
        me = fetch_graph_me(str(result["access_token"]))
    except ProviderError as exc:
        raise OAuthCallbackError(f"Signed in, but reading the mailbox profile failed: {exc}", status=502) from exc
    claims = result.get("id_token_claims") or {}
    address = str(me.get("mail") or me.get("userPrincipalName") or claims.get("preferred_username") or "")
    if not address:
        raise OAuthCallbackError("Microsoft did not say which mailbox this is", status=502)
    home_account_id = accounts[0]["home_account_id"] if accounts else ""
    credentials = {"msal_cache": cache.serialize(), "home_account_id": home_account_id, "username": address}
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
    _after_connect(account)
    return ConnectResult(account=account, created=created, next_url=str(pending.get("next") or ""))


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
    from apps.accounts.actions import record_connection_test
    from apps.accounts.providers import get_provider

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
