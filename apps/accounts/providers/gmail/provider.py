"""The Gmail provider: sync and write-back over one connection, plus attachments, Gmail's own search,
sending and the default signature."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from apps.accounts.providers.base import ProviderError
from apps.accounts.providers.gmail.client import error_message, execute
from apps.accounts.providers.gmail.folders import remote_message_from
from apps.accounts.providers.gmail.sync import GmailSync
from apps.accounts.providers.gmail.writeback import GmailWriteBack

if TYPE_CHECKING:
    from apps.accounts.models import Attachment


class GmailProvider(GmailSync, GmailWriteBack):
    def fetch_attachment(self, attachment: Attachment) -> bytes:
        from googleapiclient.errors import HttpError

        from apps.accounts.parsing import parse_message

        message = attachment.message
        with self._session():
            try:
                resource = execute(self._users().messages().get(userId="me", id=message.provider_id, format="raw"))
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
            response = execute(
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
                return dict(execute(self._users().messages().send(userId="me", body=body)))
        except ProviderError as exc:
            # The user needs Gmail's own words for a refused message ("Invalid To header"), not just the status.
            cause = exc.__cause__
            said = error_message(cause) if isinstance(cause, HttpError) else ""
            if said and said not in str(exc):
                raise ProviderError(f"{exc}: {said}", category=exc.category, retry_after=exc.retry_after) from cause
            raise

    def default_signature(self) -> str:
        with self._session():
            response = execute(self._users().settings().sendAs().list(userId="me"))
        identities = [item for item in response.get("sendAs") or [] if isinstance(item, dict)]
        chosen = next((item for item in identities if item.get("isDefault")), None)
        chosen = chosen or next((item for item in identities if item.get("isPrimary")), None)
        return str((chosen or {}).get("signature") or "")
