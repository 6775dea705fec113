"""Provider-native search as an Ask source: Gmail `q=` and Graph `$search` against the local fakes; a
failing provider is reported in the run's scope while local evidence still answers."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
from django.test import Client

from apps.accounts.models import MailAccount
from apps.accounts.oauth_connect import connect_oauth_account
from apps.accounts.sync import sync_account
from apps.ask import actions
from apps.search.actions import reindex_all
from tests.ask.conftest import KEY_QUESTION, qnb_mails
from tests.fakes.google_server import FakeGoogleServer
from tests.fakes.graph_server import FakeGraphServer

pytestmark = pytest.mark.django_db


def statements() -> list[bytes]:
    return qnb_mails()


def gmail_account(user: Any, google: FakeGoogleServer) -> MailAccount:
    for raw in statements():
        google.add_message(raw, labels=["INBOX"])
    account, _ = connect_oauth_account(
        owner=user, provider="gmail", address=google.address, display_name="", credentials=google.token_set()
    )
    assert sync_account(account.pk).status == "ok"
    reindex_all()
    return account


def ask(user: Any) -> Any:
    run = actions.create_ask_run(owner=user, question=KEY_QUESTION)
    finished = actions.execute_ask_run(run_id=run.pk)
    assert finished is not None and finished.status == "done", finished.error if finished else None
    return finished


def test_gmail_search_adds_candidates(user: Any, google: FakeGoogleServer) -> None:
    account = gmail_account(user, google)
    run = ask(user)

    report = run.scope["sources"]["provider_search"][account.name]
    assert report == {"provider": "gmail", "query": "QNB", "status": "ok", "results": 3, "not_synced": 0}
    assert google.calls("GET", "/gmail/v1/users/me/messages") >= 1
    top = run.evidence[0]
    assert top["message_id"] == "qnb-e-ekstre-2026-04@qnbfinansbank.example"
    assert "provider_search" in top["sources"]
    assert "11/05/2026" in run.answer
    assert run.scope["provider_errors"] == []


def test_failing_provider_search_is_reported_and_local_evidence_answers(user: Any, google: FakeGoogleServer) -> None:
    account = gmail_account(user, google)
    ask(user)  # while Gmail works, the statement PDF is fetched once and its text cached locally
    google.revoke()
    run = ask(user)

    assert run.scope["sources"]["provider_search"][account.name]["status"] == "error"
    [error] = run.scope["provider_errors"]
    assert error["account"] == account.name
    assert error["category"] == "invalid_grant"
    assert "provider_search" not in run.evidence[0]["sources"]
    assert "11/05/2026" in run.answer  # local search and the cached attachment text still answer
    step = next(s for s in run.steps if s["stepId"] == "provider_search")
    assert step["status"] == "done" and "error" in step["detail"]


def test_outlook_search_uses_graph_search(user: Any, graph: FakeGraphServer) -> None:
    inbox = graph.folder_id("inbox")
    for raw in statements():
        graph.add_message(inbox, raw, is_read=True)
    client = Client()
    client.force_login(user)
    start = client.get("/mail/oauth/outlook/connect/")
    consent = requests.get(start["Location"], allow_redirects=False, timeout=10)
    back = urlsplit(consent.headers["Location"])
    assert client.get(f"{back.path}?{back.query}").status_code == 302
    account = MailAccount.objects.get(provider="outlook")
    assert sync_account(account.pk).status == "ok"
    reindex_all()

    run = ask(user)

    report = run.scope["sources"]["provider_search"][account.name]
    assert (report["provider"], report["query"], report["status"], report["results"]) == ("outlook", "QNB", "ok", 3)
    assert any(path == "/v1.0/me/messages" for method, path in graph.log if method == "GET")
    assert "provider_search" in run.evidence[0]["sources"]
