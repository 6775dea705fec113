"""Gmail through the official API client: full listing once, then the history feed.

- First sync (or after the history id expired): messages.list over all mail (no spam/trash), new ids
  fetched as `format=raw` in batch requests and stored batch by batch; the profile's historyId, taken
  *before* listing, becomes the account cursor once everything listed is stored.
- Incremental: history.list(messageAdded, labelAdded, labelRemoved) since the cursor; added messages are
  fetched raw, label changes become seen/flagged updates, the feed's historyId is the next cursor.
  A 404 from history.list means the id is too old: full resync (stored ids are skipped, dedupe covers
  the rest).
- 429 / 403 rateLimitExceeded: wait as told by Retry-After (capped, limited attempts), then give up
  with ProviderError(category="rate_limited").
- Attachments are fetched on demand by re-reading the raw message and picking the MIME part.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from apps.accounts import oauth
from apps.accounts.models import Message
from apps.accounts.providers.base import (
    Checkpoint,
    FolderInfo,
    MailProvider,
    ProviderError,
    RemoteMessage,
    SyncSink,
)

if TYPE_CHECKING:
    from google.oauth2.credentials import Credentials
    from googleapiclient.errors import HttpError

    from apps.accounts.models import Attachment, MailAccount

logger = logging.getLogger(__name__)

SYSTEM_FOLDER_ROLES = {"INBOX": "inbox", "SENT": "sent", "DRAFT": "drafts", "TRASH": "trash", "SPAM": "spam"}
# Labels that are states, not places: never a message's folder.
STATE_LABELS = {"UNREAD", "STARRED", "IMPORTANT", "CHAT"}
RATE_LIMIT_REASONS = {"rateLimitExceeded", "userRateLimitExceeded"}
HISTORY_TYPES = ["messageAdded", "labelAdded", "labelRemoved"]


def build_gmail_service(credentials: Credentials) -> Any:
    from googleapiclient.discovery import build

    return build(
        "gmail",
        "v1",
        credentials=credentials,
        client_options={"api_endpoint": oauth.gmail_api_endpoint() + "/"},
        static_discovery=True,
        cache_discovery=False,
    )


def fetch_gmail_profile(credentials: Credentials) -> dict[str, Any]:
    """users.getProfile with fresh credentials (the connect callback uses it to learn the address)."""
    service = build_gmail_service(credentials)
    try:
        with _translated_errors():
            return dict(_execute(service.users().getProfile(userId="me")))
    finally:
        service.close()


def folder_for_labels(labels: list[str]) -> str:
    if "INBOX" in labels:
        return "INBOX"
    for system in ("SENT", "DRAFT", "SPAM", "TRASH"):
        if system in labels:
            return system
    for label in labels:
        if label not in STATE_LABELS and not label.startswith("CATEGORY_"):
            return label
    return ""


def remote_message_from(resource: dict[str, Any]) -> RemoteMessage:
    labels = [str(label) for label in resource.get("labelIds") or []]
    raw = str(resource.get("raw") or "")
    return RemoteMessage(
        provider_id=str(resource["id"]),
        raw=base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)),
        folder=folder_for_labels(labels),
        labels=labels,
        seen="UNREAD" not in labels,
        flagged="STARRED" in labels,
        provider_thread_id=str(resource.get("threadId") or ""),
    )


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


def _error_message(exc: HttpError) -> str:
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
    return oauth.parse_retry_after(exc.resp.get("retry-after"))


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
        raise oauth.google_token_error(exc) from exc
    except (httplib2.HttpLib2Error, OSError) as exc:  # refused, reset, DNS, timeouts
        raise ProviderError(f"Could not reach Gmail: {exc}", category="network") from exc
    except GoogleApiClientError as exc:  # malformed batch responses and the like
        raise ProviderError(f"Gmail API client error: {exc}", category="other") from exc


def _execute(request: Any) -> Any:
    from googleapiclient.errors import HttpError

    backoff = oauth.RateLimitBackoff("Gmail")
    while True:
        try:
            return request.execute()
        except HttpError as exc:
            if not _is_rate_limited(exc):
                raise
            backoff.wait(_retry_after(exc))


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class GmailProvider(MailProvider):
    list_page_size = 500
    history_page_size = 500
    # Gmail allows up to 100 calls per batch but throttles large ones; 50 is Google's recommendation.
    batch_size = 50

    def __init__(self, account: MailAccount) -> None:
        super().__init__(account)
        self._credentials: Credentials | None = None
        self._service: Any = None
        self._stored_token: str | None = None

    # --- plumbing -----------------------------------------------------------------------------------

    def _creds(self) -> Credentials:
        if self._credentials is None:
            credentials = oauth.load_gmail_credentials(self.account)
            self._stored_token = credentials.token
            if not credentials.valid:
                oauth.refresh_gmail_credentials(credentials)
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
            oauth.persist_gmail_credentials(account=self.account, credentials=credentials)
            self._stored_token = credentials.token

    def _users(self) -> Any:
        return self._api().users()

    def _batch_get(self, ids: list[str], *, fmt: str, fields: str | None = None) -> dict[str, dict[str, Any]]:
        """messages.get for many ids in batch requests; vanished ids are skipped, throttled ids retried."""
        from googleapiclient.http import BatchHttpRequest

        found: dict[str, dict[str, Any]] = {}
        backoff = oauth.RateLimitBackoff("Gmail")
        pending = list(ids)
        while pending:
            collector = _BatchCollector(found)
            # The discovery document's batch path ignores api_endpoint, so the batch URI is ours.
            batch = BatchHttpRequest(callback=collector, batch_uri=f"{oauth.gmail_api_endpoint()}/batch/gmail/v1")
            messages = self._users().messages()
            for message_id in pending:
                params: dict[str, Any] = {"userId": "me", "id": message_id, "format": fmt}
                if fields:
                    params["fields"] = fields
                batch.add(messages.get(**params), request_id=message_id)
            _execute(batch)
            if collector.failures:
                raise collector.failures[0]
            if not collector.throttled:
                break
            backoff.wait(max(collector.waits) if collector.waits else None)
            pending = collector.throttled
        return found

    def _known_ids(self, ids: list[str]) -> set[str]:
        known: set[str] = set()
        for chunk in _chunks(ids, 500):
            known.update(
                Message.objects.filter(account=self.account, provider_id__in=chunk).values_list(
                    "provider_id", flat=True
                )
            )
        return known

    def _store_new(self, sink: SyncSink, ids: list[str]) -> None:
        for chunk in _chunks(ids, self.batch_size):
            fetched = self._batch_get(chunk, fmt="raw")
            batch = [remote_message_from(fetched[mid]) for mid in chunk if mid in fetched]
            batch = [message for message in batch if not {"SPAM", "TRASH"} & set(message.labels)]
            if batch:
                sink.store_batch(batch)
            else:
                sink.heartbeat()

    def _refresh_flags(self, sink: SyncSink, ids: list[str]) -> None:
        for chunk in _chunks(ids, self.batch_size):
            fetched = self._batch_get(chunk, fmt="minimal", fields="id,labelIds")
            sink.update_flags({mid: _flags(item.get("labelIds") or []) for mid, item in fetched.items()})

    # --- MailProvider -------------------------------------------------------------------------------

    def test_connection(self) -> None:
        with self._session():
            credentials = oauth.load_gmail_credentials(self.account)
            if not credentials.refresh_token:
                raise ProviderError(
                    "No refresh token is stored: the account stops working when the access token expires; "
                    "connect it again",
                    category="missing_refresh_token",
                )
            _execute(self._users().getProfile(userId="me"))

    def sync(self, sink: SyncSink) -> None:
        with self._session():
            self._ensure_folders(sink)
            cursor = self.account.sync_cursor
            if cursor and self._incremental_sync(sink, cursor):
                return
            self._full_sync(sink)

    def _ensure_folders(self, sink: SyncSink) -> None:
        response = _execute(self._users().labels().list(userId="me"))
        for label in response.get("labels") or []:
            label_id = str(label.get("id") or "")
            if not label_id or label_id in STATE_LABELS or label_id.startswith("CATEGORY_"):
                continue
            if label.get("type") == "system" and label_id not in SYSTEM_FOLDER_ROLES:
                continue
            sink.ensure_folder(
                FolderInfo(
                    name=label_id,
                    display_name=str(label.get("name") or label_id),
                    role=SYSTEM_FOLDER_ROLES.get(label_id, ""),
                )
            )

    def _full_sync(self, sink: SyncSink) -> None:
        # Taken before listing: whatever changes while we list is replayed by the next history sync.
        profile = _execute(self._users().getProfile(userId="me"))
        history_id = str(profile["historyId"])
        page_token: str | None = None
        while True:
            response = _execute(
                self._users()
                .messages()
                .list(userId="me", maxResults=self.list_page_size, pageToken=page_token, includeSpamTrash=False)
            )
            ids = [str(item["id"]) for item in response.get("messages") or []]
            known = self._known_ids(ids)
            self._store_new(sink, [mid for mid in ids if mid not in known])
            self._refresh_flags(sink, [mid for mid in ids if mid in known])
            page_token = response.get("nextPageToken")
            if not page_token:
                break
        sink.store_batch([], Checkpoint(account_cursor=history_id))

    def _incremental_sync(self, sink: SyncSink, start: str) -> bool:
        """False when the history id has expired (the caller falls back to a full sync)."""
        from googleapiclient.errors import HttpError

        added: dict[str, list[str]] = {}
        relabelled: dict[str, list[str]] = {}
        latest = start
        page_token: str | None = None
        while True:
            request = (
                self._users()
                .history()
                .list(
                    userId="me",
                    startHistoryId=start,
                    historyTypes=HISTORY_TYPES,
                    maxResults=self.history_page_size,
                    pageToken=page_token,
                )
            )
            try:
                response = _execute(request)
            except HttpError as exc:
                if exc.resp.status == 404:
                    logger.warning("account %s: gmail history id %s expired; full resync", self.account.pk, start)
                    return False
                raise
            for record in response.get("history") or []:
                for item in record.get("messagesAdded") or []:
                    message = item.get("message") or {}
                    if message.get("id"):
                        added[str(message["id"])] = list(message.get("labelIds") or [])
                for key in ("labelsAdded", "labelsRemoved"):
                    for item in record.get(key) or []:
                        message = item.get("message") or {}
                        if message.get("id"):
                            relabelled[str(message["id"])] = list(message.get("labelIds") or [])
            latest = str(response.get("historyId") or latest)
            page_token = response.get("nextPageToken")
            if not page_token:
                break
        candidates = [mid for mid, labels in added.items() if not {"SPAM", "TRASH"} & set(labels)]
        known = self._known_ids(candidates)
        fresh = [mid for mid in candidates if mid not in known]
        self._store_new(sink, fresh)
        # Freshly fetched messages already carry their current labels; the rest get flag updates.
        fetched = set(fresh)
        sink.update_flags({mid: _flags(labels) for mid, labels in relabelled.items() if mid not in fetched})
        sink.store_batch([], Checkpoint(account_cursor=latest))
        return True

    def fetch_attachment(self, attachment: Attachment) -> bytes:
        from googleapiclient.errors import HttpError

        from apps.accounts.parsing import parse_message

        message = attachment.message
        with self._session():
            try:
                resource = _execute(self._users().messages().get(userId="me", id=message.provider_id, format="raw"))
            except HttpError as exc:
                if exc.resp.status == 404:
                    raise ProviderError("The message no longer exists in Gmail", category="other") from exc
                raise
        raw = remote_message_from(resource).raw
        parsed = parse_message(raw, keep_attachment_payloads=True)
        candidates: list[Callable[[Any], bool]] = [
            lambda part: part.part_ref == attachment.provider_ref,
            lambda part: part.filename == attachment.filename and part.size == attachment.size,
            lambda part: bool(attachment.content_id) and part.content_id == attachment.content_id,
        ]
        for matches in candidates:
            for part in parsed.attachments:
                if part.payload is not None and matches(part):
                    return bytes(part.payload)
        raise ProviderError(f"Attachment {attachment.provider_ref!r} was not found in the message", category="other")

    def search(self, query: str, limit: int = 20) -> list[str]:
        """Gmail's own search (`q=`, the search box syntax): ids of matching messages, newest first."""
        with self._session():
            response = _execute(
                self._users()
                .messages()
                .list(userId="me", q=query, maxResults=max(1, min(int(limit), 100)), includeSpamTrash=False)
            )
        return [str(item["id"]) for item in response.get("messages") or [] if item.get("id")]

    def send_raw(self, raw: bytes, *, thread_id: str = "") -> dict[str, Any]:
        """users.messages.send with the RFC 822 bytes; threadId keeps a reply in its Gmail conversation.

        Needs the gmail.send scope (incremental consent). Returns Gmail's {id, threadId, labelIds}."""
        body: dict[str, Any] = {"raw": base64.urlsafe_b64encode(raw).decode("ascii")}
        if thread_id:
            body["threadId"] = thread_id
        from googleapiclient.errors import HttpError

        try:
            with self._session():
                return dict(_execute(self._users().messages().send(userId="me", body=body)))
        except ProviderError as exc:
            # The user needs Gmail's own words for a refused message ("Invalid To header"), not just the status.
            cause = exc.__cause__
            said = _error_message(cause) if isinstance(cause, HttpError) else ""
            if said and said not in str(exc):
                raise ProviderError(f"{exc}: {said}", category=exc.category, retry_after=exc.retry_after) from cause
            raise

    def default_signature(self) -> str:
        with self._session():
            response = _execute(self._users().settings().sendAs().list(userId="me"))
        identities = [item for item in response.get("sendAs") or [] if isinstance(item, dict)]
        chosen = next((item for item in identities if item.get("isDefault")), None)
        chosen = chosen or next((item for item in identities if item.get("isPrimary")), None)
        return str((chosen or {}).get("signature") or "")

    def authorize_url(self) -> str | None:
        return oauth.authorize_path(self.account)

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


def _flags(labels: list[str]) -> tuple[bool, bool]:
    return "UNREAD" not in labels, "STARRED" in labels
