"""Gmail through the official API client: full listing once, then the history feed; labels written back.

A Gmail message is in one place here: the folder its labels give (TRASH, SPAM, INBOX, SENT, DRAFT, else its
first user label, else "" = All Mail, which plays the Archive folder's role), under its Gmail id, which names it
wherever it is (global_id): a label change that changes that folder moves its location, nothing is downloaded.

- First sync (or after the history id expired): messages.list over all mail (no spam) plus the Trash; new
  ids fetched as `format=raw` in batch requests and stored batch by batch; known ids get their labels re-read
  (flags, moves); stored locations no longer listed are removed (deleted, or gone to spam, meanwhile). The
  profile's historyId, taken *before* listing, becomes the account cursor once everything listed is stored.
- Incremental: history.list(messageAdded, messageDeleted, labelAdded, labelRemoved) since the cursor; per
  message the last record wins: deleted (or now spam) → its location goes; labels → moved / flags updated,
  or fetched raw when no stored message has that id. The feed's historyId is the next cursor. A 404 from
  history.list means the id is too old: full resync.
- Write-back (gmail.modify scope): messages.modify for UNREAD / STARRED / INBOX / a label, messages.trash
  and messages.untrash.
- Tags: every user label of a message (by display name) is one of its tags, kept on the location in the
  keyword form of apps/accounts/labels.py, so adding or removing a label in Gmail adds or takes off the tag at
  the next sync (the folder still comes from the first user label). A tag added here is messages.modify
  addLabelIds with the user label of that name (compared as tags are, case-insensitively), created with
  labels.create when there is none; taking it off is removeLabelIds. A label name that cannot be a tag (a
  space or a quote in it) is not mirrored as one.
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

from apps.accounts.labels import InvalidTag, clean_tag_name, label_to_keyword, tag_key
from apps.accounts.oauth_settings import gmail_api_endpoint
from apps.accounts.providers.base import (
    Checkpoint,
    FolderInfo,
    MailProvider,
    ProviderError,
    RemoteMessage,
    SyncSink,
    WriteBackPlace,
)
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

    from apps.accounts.models import Attachment, MailAccount

logger = logging.getLogger(__name__)

SYSTEM_FOLDER_ROLES = {"INBOX": "inbox", "SENT": "sent", "DRAFT": "drafts", "TRASH": "trash", "SPAM": "spam"}
# Labels that are states, not places: never a message's folder.
STATE_LABELS = {"UNREAD", "STARRED", "IMPORTANT", "CHAT"}
RATE_LIMIT_REASONS = {"rateLimitExceeded", "userRateLimitExceeded"}
HISTORY_TYPES = ["messageAdded", "messageDeleted", "labelAdded", "labelRemoved"]
# Where a message without any folder label is: All Mail, which is what archiving (removing INBOX) leads to.
ALL_MAIL = FolderInfo(name="", display_name="All Mail", role="archive")
FLAG_LABELS = {
    "read": ([], ["UNREAD"]),
    "unread": (["UNREAD"], []),
    "flag": (["STARRED"], []),
    "unflag": ([], ["STARRED"]),
}


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
            return dict(_execute(service.users().getProfile(userId="me")))
    finally:
        service.close()


def folder_for_labels(labels: list[str]) -> str:
    # Trash and spam first: a trashed message may keep its other labels, and Gmail shows it only in Trash.
    for system in ("TRASH", "SPAM", "INBOX", "SENT", "DRAFT"):
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
        global_id=True,
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


def _execute(request: Any) -> Any:
    from googleapiclient.errors import HttpError

    backoff = RateLimitBackoff("Gmail")
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
            _execute(batch)
            if collector.failures:
                raise collector.failures[0]
            if not collector.throttled:
                break
            backoff.wait(max(collector.waits) if collector.waits else None)
            pending = collector.throttled
        return found

    def _store_new(self, sink: SyncSink, ids: list[str]) -> None:
        for chunk in _chunks(ids, self.batch_size):
            fetched = self._batch_get(chunk, fmt="raw")
            batch = [remote_message_from(fetched[mid]) for mid in chunk if mid in fetched]
            batch = [message for message in batch if "SPAM" not in message.labels]
            for message in batch:
                message.keywords = self._label_keywords(message.labels)
            if batch:
                sink.store_batch(batch)
            else:
                sink.heartbeat()

    def _follow_labels(self, sink: SyncSink, labels_of: dict[str, list[str]]) -> None:
        """Messages with these current labels: flags where they stay, moves where their folder changed, gone
        when they are spam now, downloaded when no stored message has the id."""
        places = sink.places_of(list(labels_of))
        flags: dict[str, tuple[bool, bool]] = {}
        moves: dict[str, tuple[str, bool, bool]] = {}
        gone: list[int] = []
        for mid, labels in labels_of.items():
            here = places.get(mid, [])
            if "SPAM" in labels:  # spam is outside the mirror, as in the full listing
                gone.extend(location for _, location in here)
                continue
            folder = folder_for_labels(labels)
            if [name for name, _ in here] == [folder]:
                flags[mid] = _flags(labels)
            else:
                moves[mid] = (folder, *_flags(labels))
        unknown = sink.move_places(moves)
        self._store_new(sink, [mid for mid in labels_of if mid in unknown])
        sink.update_flags(flags)
        # The user labels are the message's tags (those just downloaded brought theirs).
        sink.update_keywords(
            {
                mid: self._label_keywords(labels)
                for mid, labels in labels_of.items()
                if "SPAM" not in labels and mid not in unknown
            }
        )
        if gone:
            sink.remove_places(gone)

    def _label_keywords(self, labels: list[str]) -> tuple[str, ...]:
        """A message's user labels by name, in the keyword form locations keep (each one becomes a tag)."""
        found: set[str] = set()
        for label_id in labels:
            name = self._label_names.get(label_id)
            if name is None:
                continue
            try:
                found.add(label_to_keyword(clean_tag_name(name)))
            except InvalidTag:
                logger.info("account %s: gmail label %r cannot be a tag", self.account.pk, name)
        return tuple(sorted(found))

    def _refresh_known(self, sink: SyncSink, ids: list[str]) -> None:
        for chunk in _chunks(ids, self.batch_size):
            fetched = self._batch_get(chunk, fmt="minimal", fields="id,labelIds")
            self._follow_labels(sink, {mid: list(item.get("labelIds") or []) for mid, item in fetched.items()})

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
        self._label_names = {
            str(label["id"]): str(label.get("name") or label["id"])
            for label in response.get("labels") or []
            if label.get("id") and label.get("type") == "user"
        }
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
        sink.ensure_folder(ALL_MAIL)

    def _full_sync(self, sink: SyncSink) -> None:
        # Taken before listing: whatever changes while we list is replayed by the next history sync.
        profile = _execute(self._users().getProfile(userId="me"))
        history_id = str(profile["historyId"])
        listed: set[str] = set()
        # All mail but spam and trash, then the trash (the mirror keeps it; spam stays outside).
        for options in ({"includeSpamTrash": False}, {"includeSpamTrash": True, "labelIds": ["TRASH"]}):
            page_token: str | None = None
            while True:
                response = _execute(
                    self._users()
                    .messages()
                    .list(userId="me", maxResults=self.list_page_size, pageToken=page_token, **options)
                )
                ids = [str(item["id"]) for item in response.get("messages") or []]
                listed.update(ids)
                known = sink.places_of(ids)
                self._store_new(sink, [mid for mid in ids if mid not in known])
                self._refresh_known(sink, [mid for mid in ids if mid in known])
                page_token = response.get("nextPageToken")
                if not page_token:
                    break
        # What is stored but no longer listed was deleted (or marked spam) while the history was out of reach.
        gone = [
            place.location_id
            for folder in sink.known_folders()
            for mid, place in sink.folder_places(folder.name).items()
            if mid not in listed
        ]
        if gone:
            sink.remove_places(gone)
        sink.store_batch([], Checkpoint(account_cursor=history_id))

    def _incremental_sync(self, sink: SyncSink, start: str) -> bool:
        """False when the history id has expired (the caller falls back to a full sync)."""
        from googleapiclient.errors import HttpError

        # Gmail id → its labels after the last change seen, or None once deleted; the feed is in order.
        latest_state: dict[str, list[str] | None] = {}
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
                for key in ("messagesAdded", "labelsAdded", "labelsRemoved", "messagesDeleted"):
                    for item in record.get(key) or []:
                        message = item.get("message") or {}
                        if not message.get("id"):
                            continue
                        mid = str(message["id"])
                        latest_state.pop(mid, None)  # keep the order of last changes
                        latest_state[mid] = None if key == "messagesDeleted" else list(message.get("labelIds") or [])
            latest = str(response.get("historyId") or latest)
            page_token = response.get("nextPageToken")
            if not page_token:
                break
        deleted = [mid for mid, labels in latest_state.items() if labels is None]
        self._follow_labels(sink, {mid: labels for mid, labels in latest_state.items() if labels is not None})
        gone = [location for places in sink.places_of(deleted).values() for _, location in places]
        if gone:
            sink.remove_places(gone)
        sink.store_batch([], Checkpoint(account_cursor=latest))
        return True

    def write_back(self, *, kind: str, places: list[WriteBackPlace], target: str = "", tag: str = "") -> str:
        """messages.modify / trash / untrash per Gmail id. Moves: the target label is added and the label of the
        folder the message is in removed (archive = remove INBOX, as Gmail's Archive button does)."""
        from googleapiclient.errors import HttpError

        folder_of: dict[str, str] = {}
        for place in places:
            folder_of.setdefault(place.provider_id, place.folder)
        said: list[str] = []
        with self._session():
            messages = self._users().messages()
            write: Callable[[str, str], str]
            if kind in ("tag", "untag"):
                label_id = self._user_label_id(tag, create=kind == "tag")
                if label_id is None:
                    return f"Gmail has no label {tag!r}: nothing to take off"
                add, remove = ([label_id], []) if kind == "tag" else ([], [label_id])

                def write(mid: str, _folder: str) -> str:
                    return self._modify(messages, mid, add=add, remove=remove)
            else:

                def write(mid: str, folder: str) -> str:
                    return self._write_one(messages, mid, kind=kind, folder=folder, target=target)

            for mid, folder in folder_of.items():
                try:
                    said.append(f"{mid}: {write(mid, folder)}")
                except HttpError as exc:
                    if exc.resp.status == 404:
                        said.append(f"{mid}: already gone from Gmail")
                        continue
                    raise
        return "\n".join(said) or "nothing to change"

    def _user_label_id(self, tag: str, *, create: bool) -> str | None:
        """The id of the user label named like the tag (as tags compare), created when asked and missing."""
        response = _execute(self._users().labels().list(userId="me"))
        for label in response.get("labels") or []:
            if tag_key(str(label.get("name") or "")) != tag_key(tag):
                continue
            if label.get("type") == "user":
                return str(label["id"])
            raise ProviderError(
                f"The tag {tag!r} is Gmail's own {label.get('name')} label, which says what a message is rather than "
                "labelling it: it is kept here only. Choose another name to have it in Gmail.",
                category="unsupported",
            )
        if not create:
            return None
        created = _execute(self._users().labels().create(userId="me", body={"name": tag}))
        return str(created["id"])

    def _write_one(self, messages: Any, mid: str, *, kind: str, folder: str, target: str) -> str:
        if kind in FLAG_LABELS:
            add, remove = FLAG_LABELS[kind]
            return self._modify(messages, mid, add=add, remove=remove)
        if kind not in ("move", "archive", "trash"):
            raise ProviderError(f"Unknown write-back {kind!r}", category="unsupported")
        if folder == target:
            return "already there"
        if kind == "move" and target in ("SENT", "DRAFT", "SPAM"):
            # Gmail refuses to put these labels on a message (they say what it is, not where it is).
            raise ProviderError(f"Gmail cannot move mail into {target}", category="unsupported")
        if kind == "trash" or target == "TRASH":
            labels = _execute(messages.trash(userId="me", id=mid)).get("labelIds") or []
            return f"messages.trash → labels {', '.join(labels) or '(none)'}"
        steps: list[str] = []
        if folder == "TRASH":
            _execute(messages.untrash(userId="me", id=mid))
            steps.append("messages.untrash")
        if kind == "archive":  # Gmail's Archive: out of the inbox, every other label kept
            add, remove = [], ["INBOX"]
        else:
            add = [target] if target else []
            # The label that put it in its old folder goes (not Sent/Drafts: those say what it is, not where).
            remove = [folder] if folder and folder not in ("TRASH", "SENT", "DRAFT") else []
        if add or remove:
            steps.append(self._modify(messages, mid, add=add, remove=remove))
        return "; ".join(steps) or "nothing to change"

    def _modify(self, messages: Any, mid: str, *, add: list[str], remove: list[str]) -> str:
        body = {"addLabelIds": add, "removeLabelIds": remove}
        labels = _execute(messages.modify(userId="me", id=mid, body=body)).get("labelIds") or []
        change = " ".join([*(f"+{label}" for label in add), *(f"-{label}" for label in remove)])
        return f"messages.modify {change} → labels {', '.join(labels) or '(none)'}"

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
