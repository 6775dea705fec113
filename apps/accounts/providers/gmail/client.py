"""The Gmail API client: the service and profile, requests retried on rate limits, batch gets, and
library or transport failures translated into categorised ProviderErrors; the connection the provider holds."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from apps.accounts.oauth_settings import gmail_api_endpoint
from apps.accounts.providers.base import MailProvider, ProviderError
from apps.accounts.providers.oauth_http import RateLimitBackoff, parse_retry_after
from apps.accounts.providers.oauth_tokens import (
    google_token_error,
    load_gmail_credentials,
    persist_gmail_credentials,
    refresh_gmail_credentials,
)

if TYPE_CHECKING:
    from google.oauth2.credentials import Credentials
    from googleapiclient.errors import HttpError

    from apps.accounts.models import MailAccount


logger = logging.getLogger(__name__)

RATE_LIMIT_REASONS = {"rateLimitExceeded", "userRateLimitExceeded"}


def build_gmail_service(credentials: Credentials) -> Any:
    from googleapiclient.discovery import build

    return build(
        "gmail",
        "v1",
        credentials=credentials,
        client_options={"api_endpoint": gmail_api_endpoint() + "/"},
        static_discovery=True,
        cache_discovery=False,
    )


def fetch_gmail_profile(credentials: Credentials) -> dict[str, Any]:
    """users.getProfile with fresh credentials (the connect callback uses it to learn the address)."""
    service = build_gmail_service(credentials)
    try:
        with _translated_errors():
            return dict(execute(service.users().getProfile(userId="me")))
    finally:
        service.close()


def _error_reason(exc: HttpError) -> str:
    try:
        data = json.loads(exc.content.decode("utf-8") if isinstance(exc.content, bytes) else exc.content)
    except (ValueError, AttributeError):
        return ""
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return ""
    for item in error.get("errors") or []:
        if isinstance(item, dict) and item.get("reason"):
            return str(item["reason"])
    for item in error.get("details") or []:
        if isinstance(item, dict) and item.get("reason"):
            return str(item["reason"])
    return str(error.get("status") or "")


def error_message(exc: HttpError) -> str:
    try:
        data = json.loads(exc.content.decode("utf-8") if isinstance(exc.content, bytes) else exc.content)
    except (ValueError, AttributeError):
        return ""
    error = data.get("error") if isinstance(data, dict) else None
    return str(error.get("message") or "") if isinstance(error, dict) else ""


def _is_rate_limited(exc: HttpError) -> bool:
    status = exc.resp.status
    return status == 429 or (status == 403 and _error_reason(exc) in RATE_LIMIT_REASONS)


def _retry_after(exc: HttpError) -> float | None:
    return parse_retry_after(exc.resp.get("retry-after"))


def _http_error(exc: HttpError) -> ProviderError:
    status = exc.resp.status
    reason = _error_reason(exc)
    detail = f"Gmail API error {status} {reason}".strip()
    if status == 401:
        return ProviderError(f"{detail}: the stored authorization was not accepted", category="invalid_grant")
    if status == 403 and reason in {"insufficientPermissions", "ACCESS_TOKEN_SCOPE_INSUFFICIENT"}:
        return ProviderError(f"{detail}: a required permission was not granted", category="auth")
    if _is_rate_limited(exc):
        return ProviderError(detail, category="rate_limited", retry_after=_retry_after(exc))
    if status >= 500:
        return ProviderError(f"{detail}: Gmail is unavailable", category="network")
    return ProviderError(detail, category="other")


@contextmanager
def _translated_errors() -> Iterator[None]:
    """Every library/transport failure leaves here as a categorized ProviderError."""
    import httplib2
    from google.auth.exceptions import GoogleAuthError
    from googleapiclient.errors import Error as GoogleApiClientError
    from googleapiclient.errors import HttpError

    try:
        yield
    except ProviderError:
        raise
    except HttpError as exc:
        raise _http_error(exc) from exc
    except GoogleAuthError as exc:
        raise google_token_error(exc) from exc
    except (httplib2.HttpLib2Error, OSError) as exc:  # refused, reset, DNS, timeouts
        raise ProviderError(f"Could not reach Gmail: {exc}", category="network") from exc
    except GoogleApiClientError as exc:  # malformed batch responses and the like
        raise ProviderError(f"Gmail API client error: {exc}", category="other") from exc


def execute(request: Any) -> Any:
    from googleapiclient.errors import HttpError

    backoff = RateLimitBackoff("Gmail")
    while True:
        try:
            return request.execute()
        except HttpError as exc:
            if not _is_rate_limited(exc):
                raise
            backoff.wait(_retry_after(exc))


class GmailConnection(MailProvider):
    def __init__(self, account: MailAccount) -> None:
        super().__init__(account)
        self._credentials: Credentials | None = None
        self._service: Any = None
        self._stored_token: str | None = None
        self._label_names: dict[str, str] = {}  # user label id → display name (labels.list at each sync)

    # --- plumbing -----------------------------------------------------------------------------------

    def _creds(self) -> Credentials:
        if self._credentials is None:
            credentials = load_gmail_credentials(self.account)
            self._stored_token = credentials.token
            if not credentials.valid:
                refresh_gmail_credentials(credentials)
            self._credentials = credentials
        return self._credentials

    def _api(self) -> Any:
        if self._service is None:
            self._service = build_gmail_service(self._creds())
        return self._service

    @contextmanager
    def _session(self) -> Iterator[None]:
        try:
            with _translated_errors():
                yield
        finally:
            self._persist_tokens()

    def _persist_tokens(self) -> None:
        """google-auth refreshes in place (also inside the HTTP client on a 401): store what changed."""
        credentials = self._credentials
        if credentials is not None and credentials.token and credentials.token != self._stored_token:
            persist_gmail_credentials(account=self.account, credentials=credentials)
            self._stored_token = credentials.token

    def _users(self) -> Any:
        return self._api().users()

    def _batch_get(self, ids: list[str], *, fmt: str, fields: str | None = None) -> dict[str, dict[str, Any]]:
        """messages.get for many ids in batch requests; vanished ids are skipped, throttled ids retried."""
        from googleapiclient.http import BatchHttpRequest

        found: dict[str, dict[str, Any]] = {}
        backoff = RateLimitBackoff("Gmail")
        pending = list(ids)
        while pending:
            collector = _BatchCollector(found)
            # The discovery document's batch path ignores api_endpoint, so the batch URI is ours.
            batch = BatchHttpRequest(callback=collector, batch_uri=f"{gmail_api_endpoint()}/batch/gmail/v1")
            messages = self._users().messages()
            for message_id in pending:
                params: dict[str, Any] = {"userId": "me", "id": message_id, "format": fmt}
                if fields:
                    params["fields"] = fields
                batch.add(messages.get(**params), request_id=message_id)
            execute(batch)
            if collector.failures:
                raise collector.failures[0]
            if not collector.throttled:
                break
            backoff.wait(max(collector.waits) if collector.waits else None)
            pending = collector.throttled
        return found

    # --- MailProvider -------------------------------------------------------------------------------

    def test_connection(self) -> None:
        with self._session():
            credentials = load_gmail_credentials(self.account)
            if not credentials.refresh_token:
                raise ProviderError(
                    "No refresh token is stored: the account stops working when the access token expires; "
                    "connect it again",
                    category="missing_refresh_token",
                )
            execute(self._users().getProfile(userId="me"))

    def close(self) -> None:
        service, self._service = self._service, None
        if service is not None:
            try:
                service.close()
            except Exception:  # closing is best effort
                logger.debug("closing the gmail client failed", exc_info=True)


class _BatchCollector:
    """The per-request callback of one batch: results, vanished ids, throttled ids, real failures."""

    def __init__(self, found: dict[str, dict[str, Any]]) -> None:
        self.found = found
        self.throttled: list[str] = []
        self.waits: list[float] = []
        self.failures: list[Exception] = []

    def __call__(self, request_id: str, response: Any, exception: Exception | None) -> None:
        from googleapiclient.errors import HttpError

        if exception is None:
            self.found[request_id] = response
        elif isinstance(exception, HttpError) and exception.resp.status == 404:
            logger.info("gmail message %s vanished before it was fetched", request_id)
        elif isinstance(exception, HttpError) and _is_rate_limited(exception):
            self.throttled.append(request_id)
            if (after := _retry_after(exception)) is not None:
                self.waits.append(after)
        else:
            self.failures.append(exception)
