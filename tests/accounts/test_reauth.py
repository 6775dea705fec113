"""Re-authorization: GET /api/accounts/{id}/test categorizes token failures and hands out the connect URL
that restarts consent; following it re-authorizes the same account. Real OAuth libraries, fake servers."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.contrib.auth import get_user_model

from apps.accounts.actions import create_imap_account, create_local_account
from apps.accounts.models import MailAccount
from apps.accounts.oauth import connect_oauth_account
from apps.accounts.sync import sync_account
from tests.fakes.google_server import FakeGoogleServer
from tests.fakes.graph_server import FakeGraphServer
from tests.services import free_port

pytestmark = pytest.mark.django_db


def gmail_account(user: Any, google: FakeGoogleServer, **token_options: Any) -> MailAccount:
    account, _ = connect_oauth_account(
        owner=user,
        provider="gmail",
        address=google.address,
        display_name="",
        credentials=google.token_set(**token_options),
    )
    return account


def consent(client: Any, server: FakeGoogleServer | FakeGraphServer, connect_url: str) -> Any:
    """Browser: our connect view → provider consent (fake: immediate redirect) → our callback."""
    started = client.get(connect_url)
    assert started.status_code == 302, started.content
    answer = requests.get(started["Location"], allow_redirects=False, timeout=10)
    back = urlsplit(answer.headers["Location"])
    return started, client.get(f"{back.path}?{back.query}")


def connect_outlook(client: Any, graph: FakeGraphServer) -> MailAccount:
    _, callback = consent(client, graph, "/mail/oauth/outlook/connect/")
    assert callback.status_code == 302, callback.content
    return MailAccount.objects.get(provider="outlook", address=graph.address)


def probe(client: Any, account: MailAccount, kind: str = "test") -> dict[str, Any]:
    response = client.get(f"/api/accounts/{account.pk}/{kind}")
    assert response.status_code == 200, response.content
    return dict(response.json())


# --- Gmail ------------------------------------------------------------------------------------------


def test_healthy_gmail_account_answers_ok_only(logged_in_client: Any, user: Any, google: FakeGoogleServer) -> None:
    account = gmail_account(user, google)
    assert probe(logged_in_client, account) == {"ok": True}
    assert probe(logged_in_client, account, "gmail-test") == {"ok": True}
    assert MailAccount.objects.get(pk=account.pk).last_error_category == ""


def test_revoked_gmail_grant_is_invalid_grant_and_the_authorize_url_reconnects_the_same_account(
    logged_in_client: Any, user: Any, google: FakeGoogleServer
) -> None:
    account = gmail_account(user, google)
    google.revoke()

    answer = probe(logged_in_client, account)

    assert answer["message"]  # the cause, as a failed sync records it (Test connection shows it)
    assert {key: value for key, value in answer.items() if key != "message"} == {
        "ok": False,
        "error": "invalid_grant",
        "authorizeUrl": f"http://testserver/mail/oauth/gmail/connect/?account={account.pk}",
    }
    account.refresh_from_db()
    assert account.last_error_category == "invalid_grant"

    # The user follows authorizeUrl and consents again (Google issues fresh grants).
    google.revoked = False
    started, callback = consent(logged_in_client, google, answer["authorizeUrl"])
    query = parse_qs(urlsplit(started["Location"]).query)
    assert query["login_hint"] == [google.address] and query["prompt"] == ["consent"]
    assert callback.status_code == 302
    assert MailAccount.objects.filter(owner=user).count() == 1
    account.refresh_from_db()
    assert account.last_error_category == ""
    assert probe(logged_in_client, account) == {"ok": True}


def test_expired_gmail_token_with_revoked_refresh_is_invalid_grant(
    logged_in_client: Any, user: Any, google: FakeGoogleServer
) -> None:
    account = gmail_account(user, google, expires_in=-60)
    google.revoke()
    assert probe(logged_in_client, account)["error"] == "invalid_grant"


def test_gmail_account_without_refresh_token_is_missing_refresh_token(
    logged_in_client: Any, user: Any, google: FakeGoogleServer
) -> None:
    account = gmail_account(user, google, refresh_token=False)
    answer = probe(logged_in_client, account)
    assert answer["ok"] is False and answer["error"] == "missing_refresh_token"
    assert answer["authorizeUrl"].endswith(f"/mail/oauth/gmail/connect/?account={account.pk}")
    assert MailAccount.objects.get(pk=account.pk).last_error_category == "missing_refresh_token"


def test_gmail_consent_without_refresh_token_is_reported_after_connecting(
    logged_in_client: Any, user: Any, google: FakeGoogleServer
) -> None:
    google.issue_refresh_token = False
    consent(logged_in_client, google, "/mail/oauth/gmail/connect/")
    account = MailAccount.objects.get(owner=user, provider="gmail")
    assert probe(logged_in_client, account)["error"] == "missing_refresh_token"


def test_unreachable_google_is_network(logged_in_client: Any, user: Any, google: FakeGoogleServer) -> None:
    expired, _ = connect_oauth_account(  # needs the token endpoint first
        owner=user,
        provider="gmail",
        address="a@gmail.test",
        display_name="",
        credentials=google.token_set(expires_in=-60),
    )
    fresh, _ = connect_oauth_account(  # goes straight to the API
        owner=user, provider="gmail", address="b@gmail.test", display_name="", credentials=google.token_set()
    )
    google.stop()
    answer = probe(logged_in_client, expired)
    assert (answer["ok"], answer["error"]) == (False, "network")
    assert answer["authorizeUrl"]
    assert probe(logged_in_client, fresh)["error"] == "network"


def test_sync_with_a_revoked_gmail_grant_records_invalid_grant(user: Any, google: FakeGoogleServer) -> None:
    account = gmail_account(user, google)
    google.revoke()
    outcome = sync_account(account.pk)
    assert (outcome.status, outcome.error_category) == ("error", "invalid_grant")
    assert MailAccount.objects.get(pk=account.pk).last_error_category == "invalid_grant"


# --- Outlook ----------------------------------------------------------------------------------------


def test_healthy_outlook_account_answers_ok(logged_in_client: Any, graph: FakeGraphServer) -> None:
    account = connect_outlook(logged_in_client, graph)
    assert probe(logged_in_client, account) == {"ok": True}
    assert probe(logged_in_client, account, "outlook-test") == {"ok": True}


def test_revoked_outlook_grant_is_invalid_grant_and_the_authorize_url_reconnects(
    logged_in_client: Any, user: Any, graph: FakeGraphServer
) -> None:
    account = connect_outlook(logged_in_client, graph)
    graph.revoke()

    answer = probe(logged_in_client, account)

    assert answer["message"]  # the cause, as a failed sync records it (Test connection shows it)
    assert {key: value for key, value in answer.items() if key != "message"} == {
        "ok": False,
        "error": "invalid_grant",
        "authorizeUrl": f"http://testserver/mail/oauth/outlook/connect/?account={account.pk}",
    }
    assert MailAccount.objects.get(pk=account.pk).last_error_category == "invalid_grant"
    graph.revoked = False
    started, callback = consent(logged_in_client, graph, answer["authorizeUrl"])
    assert parse_qs(urlsplit(started["Location"]).query)["login_hint"] == [graph.address]
    assert callback.status_code == 302
    assert MailAccount.objects.filter(owner=user).count() == 1
    assert probe(logged_in_client, account) == {"ok": True}


def test_outlook_without_refresh_token_is_missing_refresh_token(logged_in_client: Any, graph: FakeGraphServer) -> None:
    graph.issue_refresh_token = False
    account = connect_outlook(logged_in_client, graph)
    answer = probe(logged_in_client, account)
    assert (answer["ok"], answer["error"]) == (False, "missing_refresh_token")
    assert answer["authorizeUrl"].endswith(f"/mail/oauth/outlook/connect/?account={account.pk}")


def test_unreachable_microsoft_is_network(logged_in_client: Any, graph: FakeGraphServer) -> None:
    account = connect_outlook(logged_in_client, graph)
    graph.stop()
    answer = probe(logged_in_client, account)
    assert (answer["ok"], answer["error"]) == (False, "network")
    assert MailAccount.objects.get(pk=account.pk).last_error_category == "network"


def test_sync_with_a_revoked_outlook_grant_records_invalid_grant(logged_in_client: Any, graph: FakeGraphServer) -> None:
    account = connect_outlook(logged_in_client, graph)
    graph.revoke()
    outcome = sync_account(account.pk)
    assert (outcome.status, outcome.error_category) == ("error", "invalid_grant")
    assert MailAccount.objects.get(pk=account.pk).last_error_category == "invalid_grant"


# --- other providers, access ------------------------------------------------------------------------


def test_imap_and_local_accounts_have_no_authorize_url(logged_in_client: Any, user: Any) -> None:
    local = create_local_account(owner=user, name="archive")
    assert probe(logged_in_client, local) == {"ok": True}
    imap = create_imap_account(
        owner=user,
        name="imap",
        address="me@example.test",
        host="127.0.0.1",
        port=free_port(),  # nothing listens there
        security="none",
        username="me",
        password="secret",
    )
    answer = probe(logged_in_client, imap)
    assert answer["ok"] is False and answer["error"]
    assert "authorizeUrl" in answer and answer["authorizeUrl"] is None


def test_probe_needs_login_and_ownership(client: Any, user: Any, google: FakeGoogleServer) -> None:
    account = gmail_account(user, google)
    assert client.get(f"/api/accounts/{account.pk}/test").status_code == 401
    stranger = get_user_model().objects.create_user(username="other", email="other@example.com", password="x" * 20)
    client.force_login(stranger)
    assert client.get(f"/api/accounts/{account.pk}/test").status_code == 404
    assert client.get("/api/accounts/999999/test").status_code == 404


def test_provider_specific_probes_404_for_the_other_provider(
    logged_in_client: Any, user: Any, google: FakeGoogleServer
) -> None:
    account = gmail_account(user, google)
    assert logged_in_client.get(f"/api/accounts/{account.pk}/outlook-test").status_code == 404


def test_reauthorizing_someone_elses_account_is_404(client: Any, user: Any, google: FakeGoogleServer) -> None:
    account = gmail_account(user, google)
    stranger = get_user_model().objects.create_user(username="other", email="other@example.com", password="x" * 20)
    client.force_login(stranger)
    assert client.get(f"/mail/oauth/gmail/connect/?account={account.pk}").status_code == 404


def test_reauthorizing_with_a_different_mailbox_is_refused(
    logged_in_client: Any, user: Any, google: FakeGoogleServer
) -> None:
    account = gmail_account(user, google)
    MailAccount.objects.filter(pk=account.pk).update(address="someone-else@gmail.test")
    _, callback = consent(logged_in_client, google, f"/mail/oauth/gmail/connect/?account={account.pk}")
    assert callback.status_code == 302
    account.refresh_from_db()
    assert account.address == "someone-else@gmail.test"
    assert MailAccount.objects.filter(owner=user).count() == 1
