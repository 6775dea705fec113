"""IMAP folder sync: the server's folders and messages mirrored into the store.

Each folder is mirrored by diffing the server's UID set (UID SEARCH ALL) against the stored locations of
the folder: expunged UIDs lose their location, new UIDs get one. A new UID whose header (Message-ID, size,
date) matches exactly one stored message is that message moved or copied here and only gets a location;
anything else is downloaded and recognised by content in the store. A changed UIDVALIDITY invalidates
every stored location of the folder: the folder is read again the same way, so flags and membership are
those of the server and no body is downloaded twice. A LIST diff finds renamed folders (same UIDVALIDITY,
same messages) and deleted ones. With CONDSTORE the folder's HIGHESTMODSEQ is kept as its sync_token:
an unchanged folder costs one SELECT, and flag changes are found with one SEARCH MODSEQ.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from imapclient import IMAPClient
from imapclient.exceptions import IMAPClientAbortError, IMAPClientError

from apps.accounts.labels import label_keywords
from apps.accounts.locations import HeaderFacts, KnownPlace, Place
from apps.accounts.models import MailFolder
from apps.accounts.parsing import parse_message
from apps.accounts.providers.base import Checkpoint, FolderInfo, RemoteMessage, SyncSink
from apps.accounts.providers.imap.connection import ImapConnection
from apps.accounts.providers.imap.folders import ImapMessageRef, folder_role, selectable_folders

logger = logging.getLogger(__name__)

# A batch is bounded by count (MAILAGENT_SYNC_BATCH) and by bytes; a larger single message goes alone.
MAX_BATCH_BYTES = 25 * 1024 * 1024
# UIDs per command when only small items (sizes, flags) are fetched.
SMALL_FETCH_CHUNK = 1000
# UIDs per command when whole headers are fetched to recognise messages already stored.
HEADER_FETCH_CHUNK = 200
# Stored UIDs whose Message-ID must match in a folder with the UIDVALIDITY of a vanished one for a rename.
RENAME_SAMPLE = 20

MODSEQ_PREFIX = "modseq:"


def plan_batches(sizes: dict[int, int], *, max_count: int, max_bytes: int) -> list[list[int]]:
    """Group UIDs (ascending) into batches of at most max_count messages and max_bytes (a big one goes alone)."""
    batches: list[list[int]] = []
    current: list[int] = []
    current_bytes = 0
    for uid in sorted(sizes):
        size = sizes[uid]
        if current and (len(current) >= max_count or current_bytes + size > max_bytes):
            batches.append(current)
            current, current_bytes = [], 0
        current.append(uid)
        current_bytes += size
    if current:
        batches.append(current)
    return batches


def _has_flag(flags: Sequence[bytes], flag: bytes) -> bool:
    wanted = flag.lower()
    return any(item.lower() == wanted for item in flags)


def _aware(value: Any) -> dt.datetime | None:
    if not isinstance(value, dt.datetime):
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


class ImapFolderSync(ImapConnection):
    # Some servers advertise CONDSTORE but keep bad MODSEQs; a subclass (or a test) can turn it off.
    use_condstore: bool = True

    def sync(self, sink: SyncSink) -> None:
        with self._session() as client:
            condstore = self.use_condstore and client.has_capability("CONDSTORE") and client.has_capability("ENABLE")
            if condstore:
                condstore = b"CONDSTORE" in {item.upper() for item in client.enable("CONDSTORE")}
            folders = self._list_folders(client)
            self._apply_folder_changes(client, sink, folders)
            # Every folder is known (and shown) before the first message arrives, even if the sync is cut short.
            for info in folders:
                sink.ensure_folder(info)
            for info in folders:
                self._sync_folder(client, sink, info.name, condstore=condstore)
                sink.heartbeat()

    # -- sync steps ------------------------------------------------------------------------------------

    def _list_folders(self, client: IMAPClient) -> list[FolderInfo]:
        folders: list[FolderInfo] = []
        for name, sep, flags in selectable_folders(client):
            role = folder_role(name, flags, sep)
            display = "Inbox" if role == "inbox" else name
            folders.append(FolderInfo(name=name, display_name=display, role=role))
        # INBOX first: new mail there matters most if a sync is cut short.
        folders.sort(key=lambda info: (info.role != "inbox", info.name.lower()))
        return folders

    def _apply_folder_changes(self, client: IMAPClient, sink: SyncSink, folders: list[FolderInfo]) -> None:
        """LIST diff: a stored folder missing from the server was renamed (a new folder with its UIDVALIDITY
        whose messages are the stored ones: the row and its locations follow, nothing is downloaded) or
        deleted (its locations go; messages still elsewhere stay)."""
        server = {info.name: info for info in folders}
        # A folder without a name holds mail stored here only (a reply sent by SMTP whose Sent copy failed).
        vanished = [folder for folder in sink.known_folders() if folder.name and folder.name not in server]
        if not vanished:
            return
        stored_names = {folder.name for folder in sink.known_folders()}
        by_uidvalidity: dict[int, list[FolderInfo]] = {}
        for info in folders:
            if info.name in stored_names:
                continue
            status = client.folder_status(info.name, [b"UIDVALIDITY"])
            by_uidvalidity.setdefault(int(status[b"UIDVALIDITY"]), []).append(info)
        for old in vanished:
            candidates = by_uidvalidity.get(int(old.uidvalidity or -1), [])
            places = sink.folder_places(old.name)
            if len(candidates) == 1 and self._holds_same_messages(client, candidates[0].name, places):
                new = candidates[0]
                uidvalidity = int(old.uidvalidity or 0)
                # ImapMessageRef.provider_id: "<folder>:<uidvalidity>:<uid>", the same UIDs under the new name.
                prefixes = (f"{old.name}:{uidvalidity}:", f"{new.name}:{uidvalidity}:")
                logger.info("account %s: folder %r was renamed to %r", self.account.pk, old.name, new.name)
                sink.rename_folder(old.name, new, prefixes)
                by_uidvalidity[uidvalidity] = []
            else:
                logger.info("account %s: folder %r is gone from the server", self.account.pk, old.name)
                sink.delete_folder(old.name)

    def _holds_same_messages(self, client: IMAPClient, name: str, places: dict[str, Place]) -> bool:
        """Sample up to RENAME_SAMPLE stored UIDs: their Message-IDs in the candidate folder must be ours."""
        sample = sorted((place for place in places.values() if place.uid is not None), key=lambda p: p.uid or 0)
        if not sample:
            return True
        step = max(1, len(sample) // RENAME_SAMPLE)
        picked = {int(place.uid or 0): place for place in sample[::step][:RENAME_SAMPLE]}
        client.select_folder(name, readonly=True)
        response = client.fetch(sorted(picked), ["BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"])
        for uid, place in picked.items():
            data = response.get(uid)
            if data is None:
                return False
            header = bytes(data.get(b"BODY[HEADER.FIELDS (MESSAGE-ID)]") or b"")
            if parse_message(header + b"\r\n").message_id != place.rfc_message_id:
                return False
        return True

    def _sync_folder(self, client: IMAPClient, sink: SyncSink, name: str, *, condstore: bool) -> None:
        """Bring one folder's locations to the server's state: expunged UIDs lose their location, new UIDs get
        one (a message already stored elsewhere is recognised from its header, without downloading it),
        and flags are re-read (only the changed ones with CONDSTORE)."""
        try:
            selected = client.select_folder(name, readonly=True)
        except IMAPClientAbortError:
            raise
        except IMAPClientError as exc:
            # Deleted or renamed since LIST, or not selectable after all: the other folders still sync.
            logger.warning("account %s: skipping folder %r: %s", self.account.pk, name, exc)
            return
        uidvalidity = int(selected[b"UIDVALIDITY"])
        exists = int(selected.get(b"EXISTS", 0))
        highest_modseq = selected.get(b"HIGHESTMODSEQ") if condstore else None

        state = sink.folder_state(name)
        stored_modseq = self._stored_modseq(sink, name, state, uidvalidity)
        current: dict[int, tuple[str, Place]] = {}
        stale: list[int] = []
        for provider_id, place in sink.folder_places(name).items():
            if place.uid is not None and provider_id == ImapMessageRef(name, uidvalidity, place.uid).provider_id:
                current[place.uid] = (provider_id, place)
            else:
                stale.append(place.location_id)  # another UIDVALIDITY: those UIDs mean nothing now
        if (
            highest_modseq is not None
            and stored_modseq is not None
            and int(highest_modseq) == stored_modseq
            and not stale
            and exists == len(current)
        ):
            # Nothing was added, expunged or re-flagged since the last sync (every change raises HIGHESTMODSEQ).
            return

        server_uids = sorted(int(uid) for uid in client.search(["ALL"])) if exists else []
        on_server = set(server_uids)
        gone = [place.location_id for uid, (_, place) in current.items() if uid not in on_server]
        if gone or stale:
            sink.remove_places(gone + stale)
        kept = sorted(uid for uid in current if uid in on_server)
        if kept:
            self._refresh_flags(client, sink, name, kept, current, since_modseq=stored_modseq)
        new_uids = [uid for uid in server_uids if uid not in current]
        if new_uids:
            self._fetch_new(client, sink, name, uidvalidity, new_uids)
        checkpoint = Checkpoint(folder=name, uidvalidity=uidvalidity, last_uid=max(server_uids, default=0))
        if highest_modseq is not None:
            # Everything up to the HIGHESTMODSEQ seen at SELECT time has been applied now.
            checkpoint.sync_token = f"{MODSEQ_PREFIX}{int(highest_modseq)}"
        sink.store_batch([], checkpoint)

    def _stored_modseq(self, sink: SyncSink, name: str, state: MailFolder | None, uidvalidity: int) -> int | None:
        """The HIGHESTMODSEQ stored for this UIDVALIDITY; a changed UIDVALIDITY resets the folder's cursor."""
        if state is None:
            return None
        if state.uidvalidity is not None and state.uidvalidity != uidvalidity:
            logger.warning(
                "account %s: UIDVALIDITY of %r changed (%s → %s): re-reading the folder",
                self.account.pk,
                name,
                state.uidvalidity,
                uidvalidity,
            )
            sink.reset_folder(name, uidvalidity=uidvalidity)
            return None
        if state.uidvalidity is None or not state.sync_token.startswith(MODSEQ_PREFIX):
            return None
        try:
            return int(state.sync_token[len(MODSEQ_PREFIX) :])
        except ValueError:
            return None

    def _fetch_new(self, client: IMAPClient, sink: SyncSink, name: str, uidvalidity: int, uids: list[int]) -> None:
        sizes: dict[int, int] = {}
        flags_of: dict[int, tuple[bytes, ...]] = {}
        arrived: dict[int, dt.datetime | None] = {}
        facts: dict[str, HeaderFacts] = {}
        for start in range(0, len(uids), HEADER_FETCH_CHUNK):
            chunk = uids[start : start + HEADER_FETCH_CHUNK]
            for uid, data in client.fetch(chunk, ["RFC822.SIZE", "FLAGS", "INTERNALDATE", "BODY.PEEK[HEADER]"]).items():
                uid = int(uid)
                sizes[uid] = int(data.get(b"RFC822.SIZE", 0) or 0)
                flags_of[uid] = tuple(data.get(b"FLAGS", ()))
                arrived[uid] = _aware(data.get(b"INTERNALDATE"))
                header = parse_message(bytes(data.get(b"BODY[HEADER]") or b"") + b"\r\n")
                when = header.date or arrived[uid]
                facts[str(uid)] = HeaderFacts(
                    message_id=header.message_id[:998],
                    size=sizes[uid],
                    date_ts=int(when.timestamp()) if when else None,
                )
        # A message already stored (moved or copied here, or this folder's UIDVALIDITY changed) only gets a
        # location: its body is not downloaded again.
        known = sink.match_known(facts)
        if known:
            sink.place_known(
                name,
                [
                    KnownPlace(
                        message_id=pk,
                        provider_id=ImapMessageRef(name, uidvalidity, int(uid)).provider_id,
                        uid=int(uid),
                        seen=_has_flag(flags_of[int(uid)], b"\\Seen"),
                        flagged=_has_flag(flags_of[int(uid)], b"\\Flagged"),
                        keywords=label_keywords(flags_of[int(uid)]),
                    )
                    for uid, pk in known.items()
                ],
            )
        wanted = {uid: size for uid, size in sizes.items() if str(uid) not in known}
        # Messages expunged since the SEARCH have no size and are skipped.
        batches = plan_batches(wanted, max_count=max(1, int(settings.MAILAGENT_SYNC_BATCH)), max_bytes=MAX_BATCH_BYTES)
        for batch_uids in batches:
            response = client.fetch(batch_uids, ["BODY.PEEK[]", "FLAGS", "RFC822.SIZE"])
            batch: list[RemoteMessage] = []
            for uid in batch_uids:
                data = response.get(uid)
                raw = data.get(b"BODY[]") if data else None
                if data is None or raw is None:
                    # Expunged meanwhile, or a body the server cannot produce: the next sync's diff decides.
                    logger.warning("account %s: no body for UID %s in %r", self.account.pk, uid, name)
                    continue
                flags = tuple(data.get(b"FLAGS", ()))
                batch.append(
                    RemoteMessage(
                        provider_id=ImapMessageRef(name, uidvalidity, uid).provider_id,
                        raw=bytes(raw),
                        folder=name,
                        seen=_has_flag(flags, b"\\Seen"),
                        flagged=_has_flag(flags, b"\\Flagged"),
                        keywords=label_keywords(flags),
                        uid=uid,
                        internal_date=arrived.get(uid),
                    )
                )
            sink.store_batch(batch)
            sink.heartbeat()

    def _refresh_flags(
        self,
        client: IMAPClient,
        sink: SyncSink,
        name: str,
        kept: list[int],
        current: dict[int, tuple[str, Place]],
        *,
        since_modseq: int | None,
    ) -> None:
        """\\Seen / \\Flagged and the label keywords (tags) of the stored locations still on the server: with
        CONDSTORE only those changed since the stored HIGHESTMODSEQ, else all of them (FLAGS is a few bytes a
        message)."""
        uids = kept
        if since_modseq is not None:
            changed = {int(uid) for uid in client.search(["MODSEQ", since_modseq + 1])}
            uids = [uid for uid in kept if uid in changed]
        for start in range(0, len(uids), SMALL_FETCH_CHUNK):
            chunk = uids[start : start + SMALL_FETCH_CHUNK]
            changes: dict[str, tuple[bool, bool]] = {}
            keyword_changes: dict[str, tuple[str, ...]] = {}
            for uid, data in client.fetch(chunk, ["FLAGS"]).items():
                flags = tuple(data.get(b"FLAGS", ()))
                entry = current.get(int(uid))
                if entry is None:
                    continue
                provider_id, place = entry
                state = (_has_flag(flags, b"\\Seen"), _has_flag(flags, b"\\Flagged"))
                if state != (place.seen, place.flagged):
                    changes[provider_id] = state
                keywords = label_keywords(flags)
                if keywords != tuple(sorted(place.keywords)):
                    keyword_changes[provider_id] = keywords
            sink.update_flags(changes, folder=name)
            sink.update_keywords(keyword_changes, folder=name)
            sink.heartbeat()
