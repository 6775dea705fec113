"""IMAP mailboxes (any server: Dovecot, Fastmail, Exchange IMAP, …) through imapclient: the provider is
the connection with folder sync, write-back and attachment download."""

from __future__ import annotations

import binascii
from email.parser import BytesHeaderParser

from apps.accounts.models import Attachment
from apps.accounts.providers.base import ProviderError
from apps.accounts.providers.imap.folders import ImapMessageRef
from apps.accounts.providers.imap.sync import ImapFolderSync
from apps.accounts.providers.imap.writeback import ImapWriteBack


class ImapProvider(ImapFolderSync, ImapWriteBack):
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
