"""Gmail sync: a full listing once (or when the history id expired), then the history feed; labels followed
as moves, flags and tags."""

from __future__ import annotations

import logging
from collections.abc import Iterator

from apps.accounts.labels import InvalidTag, clean_tag_name, label_to_keyword
from apps.accounts.providers.base import Checkpoint, FolderInfo, SyncSink
from apps.accounts.providers.gmail.client import GmailConnection, execute
from apps.accounts.providers.gmail.folders import (
    ALL_MAIL,
    STATE_LABELS,
    SYSTEM_FOLDER_ROLES,
    folder_for_labels,
    remote_message_from,
)

logger = logging.getLogger(__name__)

HISTORY_TYPES = ["messageAdded", "messageDeleted", "labelAdded", "labelRemoved"]


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _flags(labels: list[str]) -> tuple[bool, bool]:
    return "UNREAD" not in labels, "STARRED" in labels


class GmailSync(GmailConnection):
    list_page_size = 500
    history_page_size = 500
    # Gmail allows up to 100 calls per batch but throttles large ones; 50 is Google's recommendation.
    batch_size = 50

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

    def sync(self, sink: SyncSink) -> None:
        with self._session():
            self._ensure_folders(sink)
            cursor = self.account.sync_cursor
            if cursor and self._incremental_sync(sink, cursor):
                return
            self._full_sync(sink)

    def _ensure_folders(self, sink: SyncSink) -> None:
        response = execute(self._users().labels().list(userId="me"))
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
        profile = execute(self._users().getProfile(userId="me"))
        history_id = str(profile["historyId"])
        listed: set[str] = set()
        # All mail but spam and trash, then the trash (the mirror keeps it; spam stays outside).
        for options in ({"includeSpamTrash": False}, {"includeSpamTrash": True, "labelIds": ["TRASH"]}):
            page_token: str | None = None
            while True:
                response = execute(
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
                response = execute(request)
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
