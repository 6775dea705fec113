"""Outlook: MSAL connect flow, delta sync per folder, delta expiry, throttling and token refresh, against a
local fake identity platform + Microsoft Graph (tests/fakes/graph_server.py) spoken to by real MSAL."""

from __future__ import annotations

import json
from contextlib import closing
from email.message import EmailMessage
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.db import connection

from apps.accounts import oauth
from apps.accounts.actions import fetch_attachment_bytes, update_signature
from apps.accounts.models import Attachment, MailAccount, MailFolder, Message
from apps.accounts.providers import oauth_http
from apps.accounts.providers.base import ProviderError
from apps.accounts.providers.outlook import OutlookProvider
from apps.accounts.sync import sync_account
from tests.fakes.graph_server import FakeAttachment, FakeGraphServer, connect_outlook, follow_consent

pytestmark = pytest.mark.django_db


def creds(account: MailAccount) -> dict[str, Any]:
    """The decrypted credentials, as the providers read them."""
    assert isinstance(account.credentials, dict)
    return account.credentials


def mail(n: int, *, attachment: bytes | None = None, filename: str = "invoice.pdf") -> bytes:
    message = EmailMessage()
    message["From"] = f"Customer {n} <customer{n}@example.com>"
    message["To"] = "owner@outlook.test"
    message["Subject"] = f"Outlook message {n}"
    message["Message-ID"] = f"<outlook-{n}@example.com>"
    message["Date"] = f"Tue, 03 Nov 2026 09:{n % 60:02d}:00 +0000"
    message.set_content(f"Hello {n}\n")
    if attachment is not None:
        message.add_attachment(attachment, maintype="application", subtype="pdf", filename=filename)
    return bytes(message)


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    recorded: list[float] = []
    monkeypatch.setattr(oauth_http, "backoff_sleep", recorded.append)
    return recorded


@pytest.fixture(autouse=True)
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(OutlookProvider, "delta_page_size", 2)
    monkeypatch.setattr(OutlookProvider, "folder_page_size", 4)


@pytest.fixture
def account(logged_in_client: Any, graph: FakeGraphServer) -> MailAccount:
    return connect_outlook(logged_in_client, graph)


def value_fetches(graph: FakeGraphServer) -> int:
    with graph.lock:
        return sum(1 for method, p in graph.log if p.startswith("/v1.0/me/messages/") and p.endswith("/$value"))


def seed(graph: FakeGraphServer) -> dict[str, str]:
    inbox = graph.folder_id("inbox")
    projects = graph.add_folder("Projects", parent_id=inbox)
    graph.add_folder("2026", parent_id=projects)
    return {
        "projects": projects,
        "unread": graph.add_message(inbox, mail(1), conversation_id="conv-1"),
        "read": graph.add_message(inbox, mail(2), is_read=True, conversation_id="conv-1"),
        "flagged": graph.add_message(inbox, mail(3), flagged=True),
        "project_a": graph.add_message(projects, mail(4)),
        "project_b": graph.add_message(projects, mail(5), is_read=True),
        "sent": graph.add_message(graph.folder_id("sentitems"), mail(6), is_read=True),
    }


def test_connect_flow_end_to_end_stores_the_msal_cache_encrypted(
    logged_in_client: Any, user: Any, graph: FakeGraphServer
) -> None:
    response = logged_in_client.get("/mail/oauth/outlook/connect/")
    query = parse_qs(urlsplit(response["Location"]).query)
    assert query["code_challenge_method"] == ["S256"]
    assert set(query["scope"][0].split()) == {
        "User.Read",
        "Mail.Read",
        "Mail.ReadWrite",  # write-back (read, flag, move); requested alone when writing
        "Calendars.ReadWrite",
        "Tasks.ReadWrite",
        "offline_access",
        "openid",
        "profile",
    }
    assert query["redirect_uri"] == ["http://testserver/mail/oauth/outlook/callback/"]

    callback = logged_in_client.get(follow_consent(graph, response["Location"]))

    assert callback.status_code == 302 and callback["Location"] == "/"
    account = MailAccount.objects.get(owner=user, provider="outlook")
    assert (account.address, account.display_name) == ("owner@outlook.test", "Outlook Owner")
    cache = json.loads(creds(account)["msal_cache"])
    assert cache["RefreshToken"] and cache["AccessToken"] and cache["Account"]
    assert creds(account)["home_account_id"] in {item["home_account_id"] for item in cache["Account"].values()}
    with connection.cursor() as cursor:
        cursor.execute("SELECT credentials FROM mail_mailaccount WHERE id = %s", [account.pk])
        raw_column = str(cursor.fetchone()[0])
    assert raw_column.startswith("enc1:") and "RefreshToken" not in raw_column
    assert graph.token_grants == ["authorization_code"]
    with closing(OutlookProvider(account)) as provider:
        provider.test_connection()


def test_first_sync_walks_folders_and_stores_each_message_once(account: MailAccount, graph: FakeGraphServer) -> None:
    ids = seed(graph)

    outcome = sync_account(account.pk)

    assert (outcome.status, outcome.error_message) == ("ok", "")
    assert (outcome.created, outcome.duplicates) == (6, 0)
    assert value_fetches(graph) == 6
    unread = Message.objects.get(provider_id=ids["unread"])
    assert (unread.folder, unread.seen, unread.flagged) == (graph.folder_id("inbox"), False, False)
    assert Message.objects.get(provider_id=ids["read"]).seen is True
    assert Message.objects.get(provider_id=ids["flagged"]).flagged is True
    assert unread.thread is not None and unread.thread.provider_thread_id == "conv-1"
    assert Message.objects.get(provider_id=ids["read"]).thread_id == unread.thread_id
    folders = {folder.name: folder for folder in MailFolder.objects.filter(account=account)}
    assert len(folders) == 8  # six well-known + Projects + Projects/2026
    assert folders[graph.folder_id("inbox")].role == "inbox"
    assert folders[graph.folder_id("sentitems")].role == "sent"
    assert folders[graph.folder_id("junkemail")].role == "spam"
    assert folders[ids["projects"]].display_name == "Inbox/Projects"
    assert "Inbox/Projects/2026" in {folder.display_name for folder in folders.values()}
    # Every folder ends on its delta link (not a page link): the next sync is incremental.
    assert all("$deltatoken=" in folder.sync_token for folder in folders.values())
    assert account.signature == ""


def test_incremental_sync_fetches_only_new_mail_and_updates_flags(account: MailAccount, graph: FakeGraphServer) -> None:
    ids = seed(graph)
    assert sync_account(account.pk).created == 6
    before = value_fetches(graph)
    inbox = graph.folder_id("inbox")
    fresh = [graph.add_message(inbox, mail(10)), graph.add_message(ids["projects"], mail(11), flagged=True)]
    graph.update_message(ids["unread"], is_read=True, flagged=True)
    graph.delete_message(ids["sent"])

    outcome = sync_account(account.pk)

    assert (outcome.status, outcome.created, outcome.duplicates) == ("ok", 2, 0)
    assert value_fetches(graph) - before == 2
    assert Message.objects.filter(account=account, provider_id__in=fresh).count() == 2
    assert Message.objects.get(provider_id=fresh[1]).flagged is True
    changed = Message.objects.get(provider_id=ids["unread"])
    assert (changed.seen, changed.flagged) == (True, True)
    assert Message.objects.filter(account=account).count() == 8

    quiet = sync_account(account.pk)
    assert (quiet.status, quiet.created) == ("ok", 0)
    assert value_fetches(graph) - before == 2


def test_expired_delta_link_resyncs_the_folder_without_duplicates(account: MailAccount, graph: FakeGraphServer) -> None:
    seed(graph)
    assert sync_account(account.pk).created == 6
    newcomer = graph.add_message(graph.folder_id("inbox"), mail(20))
    graph.expire_delta_tokens()
    before = value_fetches(graph)

    outcome = sync_account(account.pk)

    assert (outcome.status, outcome.created, outcome.duplicates) == ("ok", 1, 0)
    assert value_fetches(graph) - before == 1  # stored messages were recognised, not downloaded again
    assert Message.objects.filter(account=account).count() == 7
    assert Message.objects.filter(account=account, provider_id=newcomer).count() == 1
    assert graph.calls("GET", "/v1.0/me/mailFolders/") > 0
    assert all("$deltatoken=" in f.sync_token for f in MailFolder.objects.filter(account=account))


@pytest.mark.parametrize("status", [429, 503])
def test_throttling_waits_for_retry_after_then_succeeds(
    account: MailAccount, graph: FakeGraphServer, waits: list[float], status: int
) -> None:
    seed(graph)
    graph.rate_limit_next(1, status=status, retry_after="1")

    outcome = sync_account(account.pk)

    assert (outcome.status, outcome.created) == ("ok", 6)
    assert waits == [1.0]


def test_throttling_that_does_not_clear_gives_up_as_rate_limited(
    account: MailAccount, graph: FakeGraphServer, waits: list[float]
) -> None:
    graph.rate_limit_next(50, retry_after="2")
    with pytest.raises(ProviderError) as caught, closing(OutlookProvider(account)) as provider:
        provider.test_connection()
    assert caught.value.category == "rate_limited"
    assert waits == [2.0] * (oauth.RATE_LIMIT_MAX_ATTEMPTS - 1)


def test_rejected_access_token_is_refreshed_and_the_cache_persisted(
    account: MailAccount, graph: FakeGraphServer
) -> None:
    seed(graph)
    cache_before = creds(account)["msal_cache"]
    graph.expire_access_tokens()  # MSAL's cached token still looks valid; Graph says 401

    outcome = sync_account(account.pk)

    assert (outcome.status, outcome.created) == ("ok", 6)
    assert graph.token_grants == ["authorization_code", "refresh_token"]
    account.refresh_from_db()
    assert creds(account)["msal_cache"] != cache_before
    cached_tokens = [item["secret"] for item in json.loads(creds(account)["msal_cache"])["AccessToken"].values()]
    assert any(token in graph.access_tokens for token in cached_tokens)


def test_attachments_are_fetched_from_graph_by_name_or_from_the_mime_part(
    account: MailAccount, graph: FakeGraphServer
) -> None:
    inbox = graph.folder_id("inbox")
    invoice = b"%PDF-1.7 invoice " * 40
    graph.add_message(
        inbox,
        mail(1, attachment=invoice),
        attachments=[FakeAttachment(id="att-1", name="invoice.pdf", content_type="application/pdf", content=invoice)],
    )
    # Graph lists no attachment for this one (e.g. an item attachment): the MIME part is used instead.
    graph.add_message(inbox, mail(2, attachment=b"loose bytes", filename="notes.pdf"))
    assert sync_account(account.pk).created == 2

    listed = Attachment.objects.get(message__account=account, filename="invoice.pdf")
    assert fetch_attachment_bytes(attachment=listed) == invoice
    assert graph.calls("GET", "/v1.0/me/messages/") and any(
        p.endswith("/attachments/att-1/$value") for _, p in graph.log
    )
    loose = Attachment.objects.get(message__account=account, filename="notes.pdf")
    assert fetch_attachment_bytes(attachment=loose) == b"loose bytes"


def test_outlook_signature_is_custom_text(account: MailAccount) -> None:
    with closing(OutlookProvider(account)) as provider:
        assert provider.default_signature() == ""
    update_signature(account=account, mode="custom", text="Regards,\nOwner")
    assert MailAccount.objects.get(pk=account.pk).signature == "Regards,\nOwner"
