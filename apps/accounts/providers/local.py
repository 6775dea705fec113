"""Local archives (mbox, Maildir, .eml trees): imported explicitly, attachments cached at import time."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from apps.accounts.models import Attachment
from apps.accounts.providers.base import MailProvider, ProviderError, SyncSink


class LocalProvider(MailProvider):
    def test_connection(self) -> None:
        return None

    def sync(self, sink: SyncSink) -> None:
        # Nothing to pull: local mail arrives through `manage.py import_mail` or the upload form.
        return None

    def fetch_attachment(self, attachment: Attachment) -> bytes:
        if not attachment.cache_path:
            raise ProviderError("This imported attachment has no stored bytes", category="other")
        path = Path(settings.ATTACHMENT_CACHE_DIR) / attachment.cache_path
        try:
            return path.read_bytes()
        except FileNotFoundError as exc:
            raise ProviderError(f"Cached attachment file is missing: {attachment.cache_path}") from exc
