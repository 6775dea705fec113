"""Mailbox OAuth configuration: scopes, limits, the provider endpoints from settings, and the errors.

Every OAuth endpoint must be https (the OAuth libraries insist on it, and so do we); the tests' fakes on
loopback are reached through a test-only transport (tests/fakes/loopback_https.py), never through code here.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings

from apps.accounts.models import ErrorCategory

GMAIL_MODIFY_SCOPE = "https://www.googleapis.com/auth/gmail.modify"
GMAIL_SCOPES = [
    "https://www.googleapis.com/auth/gmail.readonly",
    # sendAs.list, for the account's default signature. No send scope here: asked for on the first reply.
    "https://www.googleapis.com/auth/gmail.settings.basic",
    # Write-back: read/unread, star, archive, label, trash (messages.modify/trash). Never permanent deletion.
    GMAIL_MODIFY_SCOPE,
    # The agents' calendar_read/calendar_add and todo_add tools (events and tasks only, never mail).
    "https://www.googleapis.com/auth/calendar.events",
    "https://www.googleapis.com/auth/tasks",
]
GMAIL_REQUIRED_SCOPE = GMAIL_SCOPES[0]
# Sending replies: asked for by incremental consent the first time the user sends, never at connect.
GMAIL_SEND_SCOPE = "https://www.googleapis.com/auth/gmail.send"
OUTLOOK_SEND_SCOPE = "Mail.Send"
# MSAL adds openid/profile/offline_access itself (and refuses them here).
# Calendars/Tasks: the agents' calendar and to-do tools. Sync reads with these only.
OUTLOOK_SCOPES = ["User.Read", "Mail.Read", "Calendars.ReadWrite", "Tasks.ReadWrite"]
# Write-back (isRead, flag, move): asked for at connect, and requested alone for a write, so an account connected
# before it existed keeps syncing with its old grant (a token for OUTLOOK_SCOPES never asks for more).
OUTLOOK_WRITE_SCOPE = "Mail.ReadWrite"
OUTLOOK_CONNECT_SCOPES = [*OUTLOOK_SCOPES, OUTLOOK_WRITE_SCOPE]

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


def require_https(url: str) -> str:
    """An OAuth endpoint as configured; anything but https is a configuration error."""
    if urlsplit(url).scheme != "https":
        raise OAuthNotConfigured(f"OAuth endpoints must use https (got {url!r})")
    return url
