"""IMAP mailboxes (any server: Dovecot, Fastmail, Exchange IMAP, …) through imapclient.

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

import binascii
import datetime as dt
import errno
import logging
import socket
import ssl
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from email.parser import BytesHeaderParser
from typing import Any

from django.conf import settings
from imapclient import IMAPClient, SocketTimeout
from imapclient.exceptions import IMAPClientAbortError, IMAPClientError, LoginError

from apps.accounts.labels import keyword_refusal, keyword_to_tag, label_keywords, tag_key, tag_to_keyword
from apps.accounts.locations import HeaderFacts, KnownPlace, Place
from apps.accounts.models import Attachment, ImapSecurity, MailAccount, MailFolder
from apps.accounts.parsing import parse_message
from apps.accounts.providers.base import (
    Checkpoint,
    FolderInfo,
    MailProvider,
    ProviderError,
    RemoteMessage,
    SyncSink,
    WriteBackPlace,
)

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_SECONDS = 30.0
READ_TIMEOUT_SECONDS = 120.0
# A batch is bounded by count (MAILAGENT_SYNC_BATCH) and by bytes; a larger single message goes alone.
MAX_BATCH_BYTES = 25 * 1024 * 1024
# UIDs per command when only small items (sizes, flags) are fetched.
SMALL_FETCH_CHUNK = 1000
# UIDs per command when whole headers are fetched to recognise messages already stored.
HEADER_FETCH_CHUNK = 200
# Stored UIDs whose Message-ID must match in a folder with the UIDVALIDITY of a vanished one for a rename.
RENAME_SAMPLE = 20

SPECIAL_USE_ROLES = {
    b"\\sent": "sent",
    b"\\drafts": "drafts",
    b"\\trash": "trash",
    b"\\junk": "spam",
    b"\\archive": "archive",
}
# Servers without SPECIAL-USE: the usual names.
WELL_KNOWN_NAMES = {
    "sent": "sent",
    "sent items": "sent",
    "sent messages": "sent",
    "sent mail": "sent",
    "drafts": "drafts",
    "trash": "trash",
    "deleted items": "trash",
    "deleted messages": "trash",
    "junk": "spam",
    "junk e-mail": "spam",
    "spam": "spam",
    "archive": "archive",
    "archives": "archive",
}
MODSEQ_PREFIX = "modseq:"


@dataclass(frozen=True, slots=True)
class ImapMessageRef:
    """Where a stored message lives on the server: parsed back from RemoteMessage.provider_id."""

    folder: str
    uidvalidity: int
    uid: int

    @property
    def provider_id(self) -> str:
        return f"{self.folder}:{self.uidvalidity}:{self.uid}"

    @classmethod
    def parse(cls, provider_id: str) -> ImapMessageRef:
        # Folder names may contain ":", the two numbers never do.
        folder, uidvalidity, uid = provider_id.rsplit(":", 2)
        return cls(folder=folder, uidvalidity=int(uidvalidity), uid=int(uid))


def folder_role(name: str, flags: Sequence[bytes], delimiter: str | None) -> str:
    if name.upper() == "INBOX":
        return "inbox"
    lowered = {flag.lower() for flag in flags}
    for flag, role in SPECIAL_USE_ROLES.items():
        if flag in lowered:
            return role
    # By name only at the top level (or directly under INBOX, as Courier-style servers nest them):
    # "Projects/Archive" is a user's folder, not the archive.
    parent, _, leaf = name.rpartition(delimiter) if delimiter else ("", "", name)
    if parent and parent.upper() != "INBOX":
        return ""
    return WELL_KNOWN_NAMES.get(leaf.strip().lower(), "")


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


def decode_part(mime_headers: bytes, body: bytes) -> bytes:
    """Undo a body part's Content-Transfer-Encoding (base64, quoted-printable, uuencode; else as is)."""
    headers = BytesHeaderParser().parsebytes(mime_headers or b"")
    encoding = str(headers.get("Content-Transfer-Encoding", "") or "").strip().lower()
    if encoding == "base64":
        compact = b"".join(body.split())
        compact = compact.rstrip(b"=")
        compact += b"=" * (-len(compact) % 4)
        try:
            return binascii.a2b_base64(compact)
        except binascii.Error:
            # A truncated final quantum: decode what is whole.
            whole = compact.rstrip(b"=")
            return binascii.a2b_base64(whole[: len(whole) - len(whole) % 4])
    if encoding == "quoted-printable":
        return binascii.a2b_qp(body)
    if encoding in {"x-uuencode", "uuencode", "x-uue", "uue"}:
        return _decode_uuencode(body)
    return body


def _decode_uuencode(body: bytes) -> bytes:
    out = bytearray()
    started = False
    for line in body.splitlines():
        if not started:
            started = line.startswith(b"begin ")
            continue
        if line.strip() in {b"end", b"`"} or not line.strip():
            if line.strip() == b"end":
                break
            continue
        try:
            out += binascii.a2b_uu(line)
        except binascii.Error:
            # Some encoders pad badly; the line length byte still says how much is real.
            length = ((line[0] - 32) & 63) * 4 // 3
            out += binascii.a2b_uu(line[: length + 1])
    return bytes(out)


def _has_flag(flags: Sequence[bytes], flag: bytes) -> bool:
    wanted = flag.lower()
    return any(item.lower() == wanted for item in flags)


class ImapProvider(MailProvider):
    # Some servers advertise CONDSTORE but keep bad MODSEQs; a subclass (or a test) can turn it off.
    use_condstore: bool = True

    def __init__(self, account: MailAccount) -> None:
        super().__init__(account)
        self._client: IMAPClient | None = None

    # -- connection ------------------------------------------------------------------------------------

    def _connect(self) -> IMAPClient:
        account = self.account
        if not account.imap_host:
            raise ProviderError("No IMAP server is configured for this account", category="other")
        security = account.imap_security or ImapSecurity.SSL
        port = account.imap_port or (993 if security == ImapSecurity.SSL else 143)
        password = str((account.credentials or {}).get("password") or "")
        username = account.imap_username or account.address
        context = ssl.create_default_context()
        timeout = SocketTimeout(connect=CONNECT_TIMEOUT_SECONDS, read=READ_TIMEOUT_SECONDS)
        with _imap_errors(account.imap_host, port):
            client = IMAPClient(
                account.imap_host,
                port=port,
                ssl=security == ImapSecurity.SSL,
                ssl_context=context,
                timeout=timeout,
            )
            self._client = client
            if security == ImapSecurity.STARTTLS:
                client.starttls(context)
            client.login(username, password)
        return client

    def connect(self) -> IMAPClient:
        """A logged-in connection (closed by `close()`), for callers that hold it open, such as IDLE."""
        with _imap_errors(self.account.imap_host, self.account.imap_port):
            return self._connect()

    def close(self) -> None:
        client, self._client = self._client, None
        if client is None:
            return
        try:
            client.logout()
        except Exception:
            try:
                client.shutdown()
            except Exception:
                logger.debug("IMAP connection for account %s was already closed", self.account.pk)

    @contextmanager
    def _session(self) -> Iterator[IMAPClient]:
        try:
            client = self._connect()
            with _imap_errors(self.account.imap_host, self.account.imap_port):
                yield client
        finally:
            self.close()

    # -- MailProvider ----------------------------------------------------------------------------------

    def test_connection(self) -> None:
        with self._session() as client:
            client.noop()

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

    def append_sent_copy(self, raw: bytes) -> SentCopy:
        """APPEND the exact bytes a reply was sent with (by SMTP) to the account's Sent folder, flagged \\Seen,
        so the user's other mail clients show it. The folder is the one the server marks SPECIAL-USE \\Sent,
        else the one called by a usual name (Sent, Sent Items, …); none is created."""
        with self._session() as client:
            folder = sent_folder(self._list_folders_with_flags(client))
            if not folder:
                raise ProviderError(
                    "the IMAP server has no Sent folder (none marked \\Sent, none named Sent, Sent Items, Sent "
                    "Messages or Sent Mail), and mailagent does not create one",
                    category="other",
                )
            response = client.append(folder, raw, flags=(b"\\Seen",))
        return SentCopy(folder=folder, provider_id=_appended_ref(folder, response))

    def write_back(self, *, kind: str, places: list[WriteBackPlace], target: str = "", tag: str = "") -> str:
        """STORE flags or keywords (a tag), or MOVE (UID MOVE where the server has it, else COPY + \\Deleted +
        UID EXPUNGE), per folder, in a read-write SELECT. A folder whose UIDVALIDITY changed since the last sync
        is refused (its UIDs name other messages now); UIDs already gone are reported, not an error. A tag is
        written only where the folder's PERMANENTFLAGS accept new keywords (\\*) or already list it."""
        if kind == "tag" and keyword_refusal(tag):
            raise ProviderError(keyword_refusal(tag), category="unsupported")
        by_folder: dict[str, list[int]] = {}
        for place in places:
            ref = ImapMessageRef.parse(place.provider_id)
            by_folder.setdefault(place.folder, []).append(ref.uid)
        stored_uidvalidity = {place.folder: ImapMessageRef.parse(place.provider_id).uidvalidity for place in places}
        said: list[str] = []
        refused: list[str] = []
        with self._session() as client:
            for folder, uids in by_folder.items():
                if kind in MOVE_KINDS and folder == target:
                    continue
                selected = client.select_folder(folder)
                uidvalidity = int(selected[b"UIDVALIDITY"])
                if uidvalidity != stored_uidvalidity[folder]:
                    raise ProviderError(
                        f"Folder {folder!r} changed on the server (UIDVALIDITY {stored_uidvalidity[folder]} → "
                        f"{uidvalidity}) since the last sync; the next sync re-reads it and the action is retried",
                        category="other",
                    )
                present = sorted(int(uid) for uid in client.search(["UID", ",".join(str(u) for u in uids)]))
                if not present:
                    said.append(f"{folder}: already gone from the server")
                    continue
                if kind in FLAG_CHANGES:
                    flag, add = FLAG_CHANGES[kind]
                    (client.add_flags if add else client.remove_flags)(present, [flag])
                    said.append(f"{folder}: UID STORE {_uid_set(present)} {'+' if add else '-'}FLAGS ({flag.decode()})")
                elif kind == "tag":
                    keyword = tag_to_keyword(tag)
                    permanent = {bytes(flag).lower() for flag in selected.get(b"PERMANENTFLAGS", ())}
                    if b"\\*" not in permanent and keyword.lower().encode() not in permanent:
                        said.append(f"{folder}: not tagged, the folder does not accept keywords (PERMANENTFLAGS)")
                        refused.append(folder)
                        continue
                    client.add_flags(present, [keyword.encode("ascii")])
                    said.append(f"{folder}: UID STORE {_uid_set(present)} +FLAGS ({keyword})")
                elif kind == "untag":
                    # Every keyword that stands for this tag, however the server or another client spelled it.
                    spelled = {tag_to_keyword(tag).encode("ascii")}
                    for data in client.fetch(present, ["FLAGS"]).values():
                        for flag in data.get(b"FLAGS", ()):
                            name = keyword_to_tag(bytes(flag).decode("ascii", "replace"))
                            if name is not None and tag_key(name) == tag_key(tag):
                                spelled.add(bytes(flag))
                    client.remove_flags(present, sorted(spelled))
                    words = " ".join(sorted(item.decode("ascii", "replace") for item in spelled))
                    said.append(f"{folder}: UID STORE {_uid_set(present)} -FLAGS ({words})")
                elif kind in MOVE_KINDS:
                    if client.has_capability("MOVE"):
                        client.move(present, target)
                        said.append(f"{folder}: UID MOVE {_uid_set(present)} to {target}")
                    else:
                        client.copy(present, target)
                        client.add_flags(present, [b"\\Deleted"])
                        if client.has_capability("UIDPLUS"):
                            client.uid_expunge(present)
                        else:
                            client.expunge()
                        said.append(f"{folder}: UID COPY {_uid_set(present)} to {target}, then expunged")
                else:
                    raise ProviderError(f"Unknown write-back {kind!r}", category="unsupported")
        if refused and len(refused) == len(by_folder):
            raise ProviderError(
                f"The tag {tag!r} cannot be stored on the server: "
                + ", ".join(repr(f) for f in refused)
                + " accept no new keywords (the server's PERMANENTFLAGS lack \\*); it is kept here only",
                category="unsupported",
            )
        return "\n".join(said) or "nothing to change"

    def _list_folders_with_flags(self, client: IMAPClient) -> list[tuple[str, str]]:
        """(name, role) of the selectable folders, the role by SPECIAL-USE flag or usual name."""
        return [
            (name, "sent!" if b"\\sent" in {flag.lower() for flag in flags} else folder_role(name, flags, sep))
            for name, sep, flags in _selectable_folders(client)
        ]

    def fetch_attachment(self, attachment: Attachment) -> bytes:
        part = (attachment.provider_ref or "").strip()
        if not part or not all(piece.isdigit() for piece in part.split(".")):
            raise ProviderError(f"Attachment {attachment.pk} has no IMAP part number", category="other")
        try:
            ref = ImapMessageRef.parse(attachment.message.provider_id)
        except ValueError as exc:
            raise ProviderError(
                f"Message {attachment.message.pk} has no IMAP location ({attachment.message.provider_id!r})"
            ) from exc
        with self._session() as client:
            selected = client.select_folder(ref.folder, readonly=True)
            uidvalidity = int(selected[b"UIDVALIDITY"])
            if uidvalidity != ref.uidvalidity:
                raise ProviderError(
                    f"Folder {ref.folder!r} changed on the server (UIDVALIDITY {ref.uidvalidity} → {uidvalidity}): "
                    "a resync is needed. Sync the account again, then retry; if this persists, the message is "
                    "no longer in that folder on the server",
                    category="other",
                )
            header_item, body_item = f"BODY.PEEK[{part}.MIME]", f"BODY.PEEK[{part}]"
            response = client.fetch([ref.uid], [header_item, body_item]).get(ref.uid)
            if response is None:
                raise ProviderError(
                    f"The message is no longer in {ref.folder!r} on the server (UID {ref.uid})", category="other"
                )
            body = response.get(f"BODY[{part}]".encode())
            mime_headers = response.get(f"BODY[{part}.MIME]".encode()) or b""
            if body is None:
                raise ProviderError(f"The server returned no data for part {part} of UID {ref.uid}", category="other")
            if not mime_headers.strip() and part == "1":
                # A single-part message: the part's encoding is in the message header.
                header = client.fetch([ref.uid], ["BODY.PEEK[HEADER]"]).get(ref.uid, {})
                mime_headers = header.get(b"BODY[HEADER]") or b""
        return decode_part(bytes(mime_headers), bytes(body))

    # -- sync steps ------------------------------------------------------------------------------------

    def _list_folders(self, client: IMAPClient) -> list[FolderInfo]:
        folders: list[FolderInfo] = []
        for name, sep, flags in _selectable_folders(client):
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


FLAG_CHANGES = {
    "read": (b"\\Seen", True),
    "unread": (b"\\Seen", False),
    "flag": (b"\\Flagged", True),
    "unflag": (b"\\Flagged", False),
}
MOVE_KINDS = {"move", "archive", "trash"}


def _uid_set(uids: list[int]) -> str:
    return ",".join(str(uid) for uid in uids)


def _aware(value: Any) -> dt.datetime | None:
    if not isinstance(value, dt.datetime):
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


def _selectable_folders(client: IMAPClient) -> Iterator[tuple[str, Any, Any]]:
    """(name, hierarchy delimiter, flags) of every folder that can be selected (not \\Noselect/\\NonExistent)."""
    for flags, delimiter, raw_name in client.list_folders():
        lowered = {flag.lower() for flag in flags}
        if b"\\noselect" in lowered or b"\\nonexistent" in lowered:
            continue
        name = raw_name.decode("utf-8", "replace") if isinstance(raw_name, bytes) else str(raw_name)
        sep = delimiter.decode("ascii", "replace") if isinstance(delimiter, bytes) else delimiter
        yield name, sep, flags


@dataclass(frozen=True, slots=True)
class SentCopy:
    folder: str
    provider_id: str  # ImapMessageRef.provider_id of the copy when the server answered APPENDUID, else ""


def sent_folder(folders: Sequence[tuple[str, str]]) -> str:
    """The Sent folder among (name, role) pairs: SPECIAL-USE \\Sent ("sent!") first, then a usual name."""
    for wanted in ("sent!", "sent"):
        for name, role in folders:
            if role == wanted:
                return name
    return ""


def _appended_ref(folder: str, response: Any) -> str:
    """UIDPLUS: "[APPENDUID <uidvalidity> <uid>] …" names the copy exactly."""
    text = response.decode("ascii", "replace") if isinstance(response, bytes) else str(response or "")
    if "APPENDUID" not in text.upper():
        return ""
    parts = text[text.upper().index("APPENDUID") :].split("]", 1)[0].split()
    if len(parts) < 3 or not (parts[1].isdigit() and parts[2].isdigit()):
        return ""
    return ImapMessageRef(folder=folder, uidvalidity=int(parts[1]), uid=int(parts[2])).provider_id


@contextmanager
def _imap_errors(host: str, port: Any) -> Iterator[None]:
    """Translate imapclient/socket failures into categorised ProviderErrors; everything else passes through."""
    where = f"{host}:{port}"
    try:
        yield
    except ProviderError:
        raise
    except LoginError as exc:
        detail = str(exc)
        if "UNAVAILABLE" in detail.upper():
            raise ProviderError(
                f"IMAP server {where} is temporarily unavailable: {detail}", category="network"
            ) from exc
        raise ProviderError(f"IMAP login to {where} failed: {detail}", category="auth") from exc
    except IMAPClientAbortError as exc:
        raise ProviderError(f"IMAP connection to {where} was dropped: {exc}", category="network") from exc
    except TimeoutError as exc:
        raise ProviderError(f"IMAP server {where} timed out", category="network") from exc
    except ssl.SSLError as exc:
        raise ProviderError(f"TLS with IMAP server {where} failed: {exc}", category="network") from exc
    except IMAPClientError as exc:
        raise ProviderError(f"IMAP error from {where}: {exc}", category="other") from exc
    except OSError as exc:
        # Only socket-level failures are "network"; a local OSError (disk, permissions) is something else.
        category = "network" if _is_network_error(exc) else "other"
        raise ProviderError(f"Cannot talk to IMAP server {where}: {exc}", category=category) from exc


NETWORK_ERRNOS = {
    errno.ENETUNREACH,
    errno.EHOSTUNREACH,
    errno.ENETDOWN,
    errno.EHOSTDOWN,
    errno.EADDRNOTAVAIL,
    errno.EPIPE,
}


def _is_network_error(exc: OSError) -> bool:
    return isinstance(exc, ConnectionError | socket.gaierror | socket.herror) or exc.errno in NETWORK_ERRNOS


__all__ = ["ImapMessageRef", "ImapProvider", "SentCopy", "decode_part", "folder_role", "plan_batches", "sent_folder"]
