"""Gmail: connect flow, first sync, history sync, resync, rate limits and tokens, against a local fake Google.

The real google-auth-oauthlib / googleapiclient / google-auth code talks HTTP to tests/fakes/google_server.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from email.message import EmailMessage
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.db import connection

from apps.accounts import oauth
from apps.accounts.actions import fetch_attachment_bytes
from apps.accounts.models import Attachment, MailAccount, MailFolder, Message
from apps.accounts.oauth import connect_oauth_account
from apps.accounts.providers import oauth_http
from apps.accounts.providers.gmail.provider import GmailProvider
from apps.accounts.sync import sync_account
from tests.conftest import _serve_fake
from tests.fakes.google_server import GMAIL_SCOPES, FakeGoogleServer

pytestmark = pytest.mark.django_db


def creds(account: MailAccount) -> dict[str, Any]:
    """The decrypted credentials, as the providers read them."""
    assert isinstance(account.credentials, dict)
    return account.credentials


def mail(n: int, *, subject: str | None = None, attachment: bytes | None = None) -> bytes:
    message = EmailMessage()
    message["From"] = f"Sender {n} <sender{n}@example.com>"
    message["To"] = "owner@gmail.test"
    message["Subject"] = subject or f"Message {n}"
    message["Message-ID"] = f"<gmail-{n}@example.com>"
    message["Date"] = f"Mon, 02 Nov 2026 10:{n % 60:02d}:00 +0000"
    message.set_content(f"Body of message {n}\n")
    if attachment is not None:
        message.add_attachment(attachment, maintype="application", subtype="pdf", filename="report.pdf")
    return bytes(message)


@pytest.fixture
def google(settings: Any) -> Iterator[FakeGoogleServer]:
    # Small pages: listing and history must follow page tokens.
    yield from _serve_fake(FakeGoogleServer(max_page_size=3), settings)


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    recorded: list[float] = []
    monkeypatch.setattr(oauth_http, "backoff_sleep", recorded.append)
    return recorded


@pytest.fixture(autouse=True)
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(GmailProvider, "batch_size", 2)


def gmail_account(user: Any, google: FakeGoogleServer, **token_options: Any) -> MailAccount:
    account, _ = connect_oauth_account(
        owner=user,
        provider="gmail",
        address=google.address,
        display_name="",
        credentials=google.token_set(**token_options),
    )
    return account


def raw_fetches(google: FakeGoogleServer) -> int:
    """messages.get calls (inside batches) so far."""
    with google.lock:
        return sum(1 for method, p in google.log if method == "GET" and p.startswith("/gmail/v1/users/me/messages/"))


def stored_credentials_column(account: MailAccount) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT credentials FROM mail_mailaccount WHERE id = %s", [account.pk])
        return str(cursor.fetchone()[0])


def seed_mailbox(google: FakeGoogleServer) -> dict[str, str]:
    google.add_label("Label_7", "Projects")
    return {
        "unread": google.add_message(mail(1), labels=["INBOX", "UNREAD", "CATEGORY_PERSONAL"]),
        "starred": google.add_message(mail(2), labels=["INBOX", "STARRED"], thread_id="thread-a"),
        "reply": google.add_message(mail(3, subject="Re: Message 2"), labels=["INBOX"], thread_id="thread-a"),
        "sent": google.add_message(mail(4), labels=["SENT"]),
        "archived": google.add_message(mail(5), labels=["Label_7"]),
        "spam": google.add_message(mail(6), labels=["SPAM", "UNREAD"]),
        "all_mail": google.add_message(mail(7), labels=[]),
    }


def test_first_sync_lists_all_mail_and_stores_each_message_once(user: Any, google: FakeGoogleServer) -> None:
    ids = seed_mailbox(google)
    account = gmail_account(user, google)

    outcome = sync_account(account.pk)

    assert (outcome.status, outcome.error_message) == ("ok", "")
    assert (outcome.created, outcome.duplicates) == (6, 0)  # everything but spam
    assert Message.objects.filter(account=account).count() == 6
    assert not Message.objects.filter(provider_id=ids["spam"]).exists()
    unread = Message.objects.get(provider_id=ids["unread"])
    assert (unread.folder, unread.seen, unread.flagged, unread.subject) == ("INBOX", False, False, "Message 1")
    assert unread.labels == ["INBOX", "UNREAD", "CATEGORY_PERSONAL"]
    starred = Message.objects.get(provider_id=ids["starred"])
    assert (starred.seen, starred.flagged) == (True, True)
    assert Message.objects.get(provider_id=ids["sent"]).folder == "SENT"
    assert Message.objects.get(provider_id=ids["archived"]).folder == "Label_7"
    assert Message.objects.get(provider_id=ids["all_mail"]).folder == ""
    reply = Message.objects.get(provider_id=ids["reply"])
    assert reply.thread_id == starred.thread_id and reply.thread is not None
    assert reply.thread.provider_thread_id == "thread-a"
    account.refresh_from_db()
    assert account.sync_cursor == str(google.history_id)
    assert account.provider_signature == google.signature
    roles = dict(MailFolder.objects.filter(account=account).values_list("name", "role"))
    assert roles["INBOX"] == "inbox" and roles["SENT"] == "sent" and roles["Label_7"] == ""
    assert MailFolder.objects.get(account=account, name="Label_7").display_name == "Projects"
    # Raw messages come through Gmail's batch endpoint: two listing pages of 3, two per batch.
    assert google.calls("POST", "/batch/gmail/v1") == 4
    assert raw_fetches(google) == 6


def test_incremental_sync_stores_only_new_mail_and_follows_label_changes(user: Any, google: FakeGoogleServer) -> None:
    ids = seed_mailbox(google)
    account = gmail_account(user, google)
    assert sync_account(account.pk).created == 6
    fetched_before = raw_fetches(google)
    lists_before = google.calls("GET", "/gmail/v1/users/me/messages") - fetched_before

    new_one = google.add_message(mail(11), labels=["INBOX", "UNREAD"])
    new_two = google.add_message(mail(12), labels=["INBOX", "UNREAD", "STARRED"])
    google.add_message(mail(13), labels=["SPAM"])
    google.modify_labels(ids["unread"], add=["STARRED"], remove=["UNREAD"])
    google.modify_labels(ids["starred"], remove=["STARRED"])

    outcome = sync_account(account.pk)

    assert (outcome.status, outcome.created, outcome.duplicates) == ("ok", 2, 0)
    assert raw_fetches(google) - fetched_before == 2  # only the new messages were downloaded
    assert google.calls("GET", "/gmail/v1/users/me/messages") - raw_fetches(google) == lists_before  # no listing
    assert google.calls("GET", "/gmail/v1/users/me/history") >= 2  # paged (3 per page, 7 records)
    assert set(Message.objects.filter(account=account).values_list("provider_id", flat=True)) >= {new_one, new_two}
    assert Message.objects.filter(account=account).count() == 8
    relabelled = Message.objects.get(provider_id=ids["unread"])
    assert (relabelled.seen, relabelled.flagged) == (True, True)
    assert Message.objects.get(provider_id=ids["starred"]).flagged is False
    assert Message.objects.get(provider_id=new_two).flagged is True
    account.refresh_from_db()
    assert account.sync_cursor == str(google.history_id)

    quiet = sync_account(account.pk)
    assert (quiet.status, quiet.created, quiet.duplicates) == ("ok", 0, 0)


def test_expired_history_id_falls_back_to_a_full_resync_without_duplicates(user: Any, google: FakeGoogleServer) -> None:
    seed_mailbox(google)
    account = gmail_account(user, google)
    assert sync_account(account.pk).created == 6
    stale_cursor = MailAccount.objects.get(pk=account.pk).sync_cursor
    newcomer = google.add_message(mail(21), labels=["INBOX", "UNREAD"])
    google.expire_history()
    fetched_before = raw_fetches(google)

    outcome = sync_account(account.pk)

    assert (outcome.status, outcome.created) == ("ok", 1)
    assert Message.objects.filter(account=account).count() == 7
    assert Message.objects.filter(account=account, provider_id=newcomer).count() == 1
    assert raw_fetches(google) - fetched_before - 6 == 1  # 6 minimal (flag) reads of known ids + 1 raw
    account.refresh_from_db()
    assert account.sync_cursor != stale_cursor
    # Back on the history feed afterwards.
    google.add_message(mail(22), labels=["INBOX"])
    history_calls = google.calls("GET", "/gmail/v1/users/me/history")
    assert sync_account(account.pk).created == 1
    assert google.calls("GET", "/gmail/v1/users/me/history") == history_calls + 1


@pytest.mark.parametrize(
    ("status", "reason"), [(429, "rateLimitExceeded"), (403, "userRateLimitExceeded"), (403, "rateLimitExceeded")]
)
def test_rate_limits_wait_for_retry_after_then_succeed(
    user: Any, google: FakeGoogleServer, waits: list[float], status: int, reason: str
) -> None:
    seed_mailbox(google)
    account = gmail_account(user, google)
    google.rate_limit_next(1, status=status, retry_after="1", reason=reason)

    outcome = sync_account(account.pk)

    assert (outcome.status, outcome.created) == ("ok", 6)
    assert waits == [1.0]


def test_rate_limit_inside_a_batch_retries_only_the_throttled_part(
    user: Any, google: FakeGoogleServer, waits: list[float]
) -> None:
    google.add_message(mail(1))
    google.add_message(mail(2))
    account = gmail_account(user, google)
    provider = GmailProvider(account)
    ids = list(google.messages)
    # Only the first part of the batch is throttled (not the envelope, not the other part).
    google.rate_limits.clear()
    original = google._rate_limited
    calls = {"n": 0}

    def throttle_first_inner_get() -> Any:
        calls["n"] += 1
        if calls["n"] == 2:  # 1 = the batch envelope, 2 = its first part
            google.rate_limit_next(1, retry_after="2")
        return original()

    google._rate_limited = throttle_first_inner_get  # type: ignore[method-assign]
    with closing(provider):
        found = provider._batch_get(ids, fmt="raw")
    assert set(found) == set(ids)
    assert waits == [2.0]


def test_rate_limit_that_does_not_clear_gives_up_as_rate_limited(
    user: Any, google: FakeGoogleServer, waits: list[float]
) -> None:
    seed_mailbox(google)
    account = gmail_account(user, google)
    google.rate_limit_next(50, retry_after="1")
    with pytest.raises(oauth.ProviderError) as caught, closing(GmailProvider(account)) as provider:
        provider.test_connection()
    assert caught.value.category == "rate_limited"
    assert waits == [1.0] * (oauth.RATE_LIMIT_MAX_ATTEMPTS - 1)

    waits.clear()
    google.rate_limits.clear()
    google.rate_limit_next(1, retry_after="3600")  # longer than we are willing to hold the sync lock
    with pytest.raises(oauth.ProviderError) as caught, closing(GmailProvider(account)) as provider:
        provider.test_connection()
    assert (caught.value.category, caught.value.retry_after, waits) == ("rate_limited", 3600.0, [])
    google.rate_limit_next(1, retry_after="3600")
    outcome = sync_account(account.pk)
    assert outcome.status == "error" and "rate limit" in outcome.error_message


def test_expired_access_token_is_refreshed_and_the_new_one_persisted_encrypted(
    user: Any, google: FakeGoogleServer
) -> None:
    google.add_message(mail(1))
    account = gmail_account(user, google, expires_in=-60)
    old_token = creds(account)["token"]

    assert sync_account(account.pk).created == 1

    assert google.token_grants == ["refresh_token"]
    account.refresh_from_db()
    assert creds(account)["token"] != old_token
    assert creds(account)["refresh_token"]
    assert set(creds(account)) == {"token", "refresh_token", "token_uri", "client_id", "scopes", "expiry"}
    raw_column = stored_credentials_column(account)
    assert raw_column.startswith("enc1:")
    assert creds(account)["refresh_token"] not in raw_column


def test_access_token_rejected_by_the_api_is_refreshed_on_401(user: Any, google: FakeGoogleServer) -> None:
    google.add_message(mail(1))
    account = gmail_account(user, google)
    google.expire_access_tokens()  # still "valid" locally; the API answers 401

    assert sync_account(account.pk).created == 1
    assert "refresh_token" in google.token_grants
    account.refresh_from_db()
    assert creds(account)["token"] in google.access_tokens


def test_attachments_are_fetched_on_demand_from_the_raw_message(user: Any, google: FakeGoogleServer) -> None:
    payload = b"%PDF-1.4 fake report " * 50
    google.add_message(mail(1, attachment=payload))
    account = gmail_account(user, google)
    assert sync_account(account.pk).created == 1
    attachment = Attachment.objects.get(message__account=account)
    assert attachment.filename == "report.pdf" and not attachment.cache_path

    assert fetch_attachment_bytes(attachment=attachment) == payload
    attachment.refresh_from_db()
    assert attachment.cache_path and attachment.size == len(payload)


def test_default_signature_is_the_default_send_as_identity(user: Any, google: FakeGoogleServer) -> None:
    account = gmail_account(user, google)
    with closing(GmailProvider(account)) as provider:
        assert provider.default_signature() == '<div dir="ltr">Best,<br>Owner</div>'


# --- connect flow ----------------------------------------------------------------------------------


def follow_consent(google: FakeGoogleServer, location: str) -> str:
    """The browser's trip to Google's consent page, which (being a fake) redirects straight back."""
    assert location.startswith(f"https://127.0.0.1:{google.port}/o/oauth2/auth?")
    answer = requests.get(location, allow_redirects=False, timeout=10)
    assert answer.status_code == 302
    back = urlsplit(answer.headers["Location"])
    assert back.netloc == "testserver"
    return f"{back.path}?{back.query}"


def test_connect_flow_end_to_end_creates_the_account_with_encrypted_tokens(
    logged_in_client: Any, user: Any, google: FakeGoogleServer
) -> None:
    response = logged_in_client.get("/mail/oauth/gmail/connect/")
    assert response.status_code == 302
    query = parse_qs(urlsplit(response["Location"]).query)
    assert query["access_type"] == ["offline"] and query["prompt"] == ["consent"]
    assert query["code_challenge_method"] == ["S256"] and query["code_challenge"][0]
    assert query["redirect_uri"] == ["http://testserver/mail/oauth/gmail/callback/"]
    assert sorted(query["scope"][0].split()) == sorted(GMAIL_SCOPES)  # gmail.modify (write-back), no send

    callback = logged_in_client.get(follow_consent(google, response["Location"]))

    assert callback.status_code == 302 and callback["Location"] == "/"
    account = MailAccount.objects.get(owner=user, provider="gmail")
    assert (account.address, account.name) == ("owner@gmail.test", "owner@gmail.test")
    assert creds(account)["refresh_token"] in google.refresh_tokens
    assert creds(account)["token_uri"] == f"https://127.0.0.1:{google.port}/token"
    assert creds(account)["client_id"] == google.client_id
    assert sorted(creds(account)["scopes"]) == sorted(GMAIL_SCOPES)
    assert creds(account)["expiry"].endswith("Z")
    assert stored_credentials_column(account).startswith("enc1:")
    assert google.token_grants == ["authorization_code"]
    with closing(GmailProvider(account)) as provider:
        provider.test_connection()

    # Connecting the same mailbox again updates it instead of adding a second account.
    again = logged_in_client.get("/mail/oauth/gmail/connect/")
    logged_in_client.get(follow_consent(google, again["Location"]))
    assert MailAccount.objects.filter(owner=user).count() == 1


def test_callback_rejects_a_state_that_is_not_this_sessions(
    logged_in_client: Any, user: Any, google: FakeGoogleServer
) -> None:
    response = logged_in_client.get("/mail/oauth/gmail/connect/")
    back = follow_consent(google, response["Location"])
    forged = back.replace("state=", "state=x")
    assert logged_in_client.get(forged).status_code == 400
    assert not MailAccount.objects.filter(owner=user).exists()
    # The pending flow was consumed: replaying the genuine answer does not work either.
    assert logged_in_client.get(back).status_code == 400


def test_denied_consent_creates_nothing(logged_in_client: Any, user: Any, google: FakeGoogleServer) -> None:
    google.deny_consent = True
    response = logged_in_client.get("/mail/oauth/gmail/connect/?next=/diagnostics/")
    callback = logged_in_client.get(follow_consent(google, response["Location"]))
    assert callback.status_code == 302
    assert not MailAccount.objects.filter(owner=user).exists()


def test_consent_without_gmail_read_access_is_refused(
    logged_in_client: Any, user: Any, google: FakeGoogleServer
) -> None:
    google.granted_scopes = [GMAIL_SCOPES[1]]
    response = logged_in_client.get("/mail/oauth/gmail/connect/")
    callback = logged_in_client.get(follow_consent(google, response["Location"]))
    assert callback.status_code == 302
    assert not MailAccount.objects.filter(owner=user).exists()


def test_connect_without_configuration_explains_instead_of_crashing(logged_in_client: Any, settings: Any) -> None:
    settings.GMAIL_CLIENT_ID = ""
    response = logged_in_client.get("/mail/oauth/gmail/connect/")
    assert response.status_code == 302 and response["Location"] == "/"


def test_connect_views_need_a_login(client: Any, google: FakeGoogleServer) -> None:
    response = client.get("/mail/oauth/gmail/connect/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
