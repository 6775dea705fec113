"""IMAP mailboxes (any server: Dovecot, Fastmail, Exchange IMAP, …) through imapclient.

Per folder the cursor is (UIDVALIDITY, last stored UID), written by the sink together with each batch, so
an interrupted sync resumes after the last committed batch. A changed UIDVALIDITY invalidates every UID:
the folder is reset and read again from UID 1, and the store's Message-ID dedupe turns the replay into
duplicates instead of new rows. With CONDSTORE the folder's HIGHESTMODSEQ is kept as its sync_token so
flag changes on stored mail are found with one SEARCH MODSEQ instead of a FLAGS fetch over the folder.
"""

from __future__ import annotations

import binascii
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

from apps.accounts.models import Attachment, ImapSecurity, MailAccount, MailFolder
from apps.accounts.providers.base import Checkpoint, FolderInfo, MailProvider, ProviderError, RemoteMessage, SyncSink

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_SECONDS = 30.0
READ_TIMEOUT_SECONDS = 120.0
# A batch is bounded by count (MAILAGENT_SYNC_BATCH) and by bytes; a larger single message goes alone.
MAX_BATCH_BYTES = 25 * 1024 * 1024
# UIDs per command when only small items (sizes, flags) are fetched.
SMALL_FETCH_CHUNK = 1000
# Without CONDSTORE, flags are re-read for at most this many of the newest stored messages per folder.
FLAG_REFRESH_LIMIT = 5000

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

    def _sync_folder(self, client: IMAPClient, sink: SyncSink, name: str, *, condstore: bool) -> None:
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
        uidnext = selected.get(b"UIDNEXT")
        highest_modseq = selected.get(b"HIGHESTMODSEQ") if condstore else None

        state = sink.folder_state(name)
        stored_last_uid, stored_modseq = self._cursor(sink, name, state, uidvalidity)

        new_uids: list[int] = []
        if exists and (uidnext is None or int(uidnext) - 1 > stored_last_uid):
            # "n:*" always matches the last message even when its UID is below n.
            found = client.search(["UID", f"{stored_last_uid + 1}:*"])
            new_uids = sorted(int(uid) for uid in found if int(uid) > stored_last_uid)

        if new_uids:
            self._fetch_new(client, sink, name, uidvalidity, new_uids)
        elif state is None or state.uidvalidity != uidvalidity:
            # Nothing to store, but remember the UIDVALIDITY so a later change is noticed.
            sink.store_batch([], Checkpoint(folder=name, uidvalidity=uidvalidity, last_uid=stored_last_uid))

        if stored_last_uid:
            self._refresh_flags(
                client, sink, name, uidvalidity, stored_last_uid, exists=exists, since_modseq=stored_modseq
            )
        if highest_modseq is not None and highest_modseq != stored_modseq:
            # Everything up to the HIGHESTMODSEQ seen at SELECT time has been applied now.
            sink.store_batch([], Checkpoint(folder=name, sync_token=f"{MODSEQ_PREFIX}{int(highest_modseq)}"))

    def _cursor(self, sink: SyncSink, name: str, state: MailFolder | None, uidvalidity: int) -> tuple[int, int | None]:
        """(last stored UID, stored HIGHESTMODSEQ) valid for this UIDVALIDITY; resets the folder when it changed."""
        if state is None:
            return 0, None
        if state.uidvalidity is not None and state.uidvalidity != uidvalidity:
            logger.warning(
                "account %s: UIDVALIDITY of %r changed (%s → %s): resyncing the folder",
                self.account.pk,
                name,
                state.uidvalidity,
                uidvalidity,
            )
            sink.reset_folder(name, uidvalidity=uidvalidity)
            return 0, None
        if state.uidvalidity is None:
            # UIDs without a known UIDVALIDITY cannot be trusted.
            return 0, None
        modseq: int | None = None
        if state.sync_token.startswith(MODSEQ_PREFIX):
            try:
                modseq = int(state.sync_token[len(MODSEQ_PREFIX) :])
            except ValueError:
                modseq = None
        return int(state.last_uid or 0), modseq

    def _fetch_new(self, client: IMAPClient, sink: SyncSink, name: str, uidvalidity: int, uids: list[int]) -> None:
        sizes: dict[int, int] = {}
        for start in range(0, len(uids), SMALL_FETCH_CHUNK):
            chunk = uids[start : start + SMALL_FETCH_CHUNK]
            for uid, data in client.fetch(chunk, ["RFC822.SIZE"]).items():
                sizes[int(uid)] = int(data.get(b"RFC822.SIZE", 0) or 0)
        # Messages expunged since the SEARCH have no size and are skipped.
        batches = plan_batches(sizes, max_count=max(1, int(settings.MAILAGENT_SYNC_BATCH)), max_bytes=MAX_BATCH_BYTES)
        for batch_uids in batches:
            response = client.fetch(batch_uids, ["BODY.PEEK[]", "FLAGS", "RFC822.SIZE"])
            batch: list[RemoteMessage] = []
            for uid in batch_uids:
                data = response.get(uid)
                raw = data.get(b"BODY[]") if data else None
                if data is None or raw is None:
                    # Expunged meanwhile, or a body the server cannot produce: not retried past this checkpoint.
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
                    )
                )
            sink.store_batch(batch, Checkpoint(folder=name, uidvalidity=uidvalidity, last_uid=max(batch_uids)))
            sink.heartbeat()

    def _refresh_flags(
        self,
        client: IMAPClient,
        sink: SyncSink,
        name: str,
        uidvalidity: int,
        last_uid: int,
        *,
        exists: int,
        since_modseq: int | None,
    ) -> None:
        """Push \\Seen / \\Flagged of already-stored messages (UID ≤ last_uid) to the sink."""
        if not exists:
            return
        if since_modseq is not None:
            # CONDSTORE: only what changed since the stored HIGHESTMODSEQ, however many (the modseq advances).
            found = client.search(["MODSEQ", since_modseq + 1, "UID", f"1:{last_uid}"])
            uids = sorted(int(uid) for uid in found if int(uid) <= last_uid)
        else:
            found = client.search(["UID", f"1:{last_uid}"])
            uids = sorted(int(uid) for uid in found if int(uid) <= last_uid)[-FLAG_REFRESH_LIMIT:]
        for start in range(0, len(uids), SMALL_FETCH_CHUNK):
            chunk = uids[start : start + SMALL_FETCH_CHUNK]
            changes: dict[str, tuple[bool, bool]] = {}
            for uid, data in client.fetch(chunk, ["FLAGS"]).items():
                flags = tuple(data.get(b"FLAGS", ()))
                changes[ImapMessageRef(name, uidvalidity, int(uid)).provider_id] = (
                    _has_flag(flags, b"\\Seen"),
                    _has_flag(flags, b"\\Flagged"),
                )
            sink.update_flags(changes)
            sink.heartbeat()


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
