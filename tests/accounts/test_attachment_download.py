"""Downloading attachments of locally imported mail (a real MIME corpus) as their owner, through the real URLconf."""

from __future__ import annotations

import email
import email.policy
import hashlib
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from apps.accounts.actions import create_local_account
from apps.accounts.importers import import_path
from apps.accounts.models import Attachment
from tests.services import shared_path

pytestmark = pytest.mark.django_db

CORPUS = Path(shared_path("data", "mime", "mikel-mail", "attachment_emails"))


def stdlib_attachment_digests(directory: Path) -> set[str]:
    """sha256 of every decoded non-message attachment, as Python's own email package reads the corpus."""
    digests: set[str] = set()
    for path in directory.glob("*.eml"):
        parsed = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
        for part in parsed.walk():
            if part.is_multipart() or part.get_content_maintype() == "message":
                continue
            # Inline non-text parts without a name (a pasted photo) are attachments too: the store names them.
            inline_binary = part.get_content_disposition() == "inline" and part.get_content_maintype() != "text"
            if part.get_filename() or part.get_content_disposition() == "attachment" or inline_binary:
                payload = part.get_payload(decode=True)
                if isinstance(payload, bytes):
                    digests.add(hashlib.sha256(payload).hexdigest())
    return digests


def test_owner_downloads_every_imported_attachment(logged_in_client: Client, user: Any) -> None:
    account = create_local_account(owner=user, name="MIME corpus")
    summary = import_path(account, CORPUS)
    assert summary.imported > 0, summary
    expected = stdlib_attachment_digests(CORPUS)
    attachments = list(Attachment.objects.filter(message__account=account).order_by("pk"))
    assert len(attachments) >= 5
    checked = 0
    for attachment in attachments:
        response = logged_in_client.get(reverse("mail:attachment_download", args=[attachment.pk]))
        assert response.status_code == 200, (attachment.filename, response.content[:300])
        assert response["Content-Type"].split(";")[0] == attachment.mime_type or attachment.mime_type.startswith(
            "text/"
        ), (attachment.filename, response["Content-Type"])
        assert response["Content-Disposition"].startswith("attachment;"), response["Content-Disposition"]
        assert int(response["Content-Length"]) == len(response.content) == attachment.size
        digest = hashlib.sha256(response.content).hexdigest()
        assert digest == attachment.sha256
        if not attachment.mime_type.startswith("message/"):
            assert digest in expected, attachment.filename  # the same bytes the stdlib decodes
            checked += 1
    assert checked >= 4
    # A non-ASCII name travels as RFC 5987 filename*.
    names = {a.filename for a in attachments}
    assert "Eelanalüüsi päring.jpg" in names
    accented = next(a for a in attachments if a.filename == "Eelanalüüsi päring.jpg")
    response = logged_in_client.get(reverse("mail:attachment_download", args=[accented.pk]))
    assert "filename*=utf-8''Eelanal%C3%BC%C3%BCsi%20p%C3%A4ring.jpg" in response["Content-Disposition"]


def test_someone_else_gets_404_for_the_owners_attachment(user: Any) -> None:
    account = create_local_account(owner=user, name="MIME one")
    import_path(account, CORPUS / "attachment_pdf.eml")
    attachment = Attachment.objects.get(message__account=account)
    stranger = get_user_model().objects.create_user(username="stranger", email="s@example.com", password="x" * 20)
    other = Client()
    other.force_login(stranger)
    assert other.get(reverse("mail:attachment_download", args=[attachment.pk])).status_code == 404
