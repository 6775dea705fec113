"""POST /api/ask, GET /api/ask/<runId>, `manage.py ask --json`, the Ask page, its composer and the mailbox
launcher. Without an event loop (the test client is WSGI) runs execute during the request."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from apps.ask.models import AskRun
from tests.ask.conftest import KEY_QUESTION, AskMailbox

pytestmark = pytest.mark.django_db


@pytest.fixture
def client_for(ask_mailbox_text: AskMailbox) -> Client:
    client = Client()
    client.force_login(ask_mailbox_text.user)
    return client


def test_api_starts_a_run_and_returns_it(client_for: Client) -> None:
    started = client_for.post("/api/ask", {"question": KEY_QUESTION}, content_type="application/json")
    assert started.status_code == 202, started.content
    body = started.json()
    assert body["websocket"] == f"/ws/ask/{body['runId']}/"

    run = client_for.get(f"/api/ask/{body['runId']}").json()
    assert run["status"] == "done"
    assert run["conversationId"] == body["conversationId"]
    assert "11/05/2026" in run["answer"]
    top = run["evidence"][0]
    assert top["message_id"] == "qnb-e-ekstre-2026-04@qnbfinansbank.example"
    assert "attachment_text" in top["sources"]
    assert top["attachment"] == "QNB_E-Ekstre_2026-04.pdf"
    assert run["scope"]["sources"]["local_vector"]["hits"] == 0  # this mailbox has no embeddings
    assert [step["stepId"] for step in run["steps"]][:2] == ["classify", "plan"]

    follow = client_for.post(
        "/api/ask",
        {"question": "and the one before that?", "conversationId": body["conversationId"]},
        content_type="application/json",
    ).json()
    assert follow["conversationId"] == body["conversationId"]
    assert "11/04/2026" in client_for.get(f"/api/ask/{follow['runId']}").json()["answer"]


def test_api_checks_input_and_ownership(client_for: Client, ask_mailbox_text: AskMailbox) -> None:
    assert client_for.post("/api/ask", {"question": ""}, content_type="application/json").status_code == 422
    assert (
        client_for.post("/api/ask", {"question": "x", "account": "nope"}, content_type="application/json").status_code
        == 422
    )
    run_id = client_for.post("/api/ask", {"question": "hello"}, content_type="application/json").json()["runId"]
    stranger = get_user_model().objects.create_user(username="stranger", email="s@example.com", password="pw-123456789")
    other = Client()
    other.force_login(stranger)
    assert other.get(f"/api/ask/{run_id}").status_code == 404
    payload = {"question": "and?", "conversationId": str(AskRun.objects.get(pk=run_id).conversation_id)}
    assert other.post("/api/ask", payload, content_type="application/json").status_code == 404
    assert Client().get(f"/api/ask/{run_id}").status_code == 401


def test_command_prints_json(ask_mailbox_text: AskMailbox) -> None:
    out = io.StringIO()
    call_command("ask", KEY_QUESTION, "--json", "--account", "Demo", stdout=out)
    data: dict[str, Any] = json.loads(out.getvalue())
    assert set(data) >= {"answer", "evidence", "scope", "timings"}
    assert "11/05/2026" in data["answer"]
    top = data["evidence"][0]
    assert top["message_id"] == "qnb-e-ekstre-2026-04@qnbfinansbank.example"  # no angle brackets
    assert set(top) == {"message_id", "sources", "score", "snippet", "attachment"}
    assert data["timings"]["total"] >= 0


def test_command_prints_text(ask_mailbox_text: AskMailbox) -> None:
    out = io.StringIO()
    call_command(
        "ask",
        "how much is the Schreiber invoice?",
        "--user",
        ask_mailbox_text.user.email,
        stdout=out,
        stderr=io.StringIO(),
    )
    text = out.getvalue()
    assert "1.428,00 EUR" in text
    assert "<schreiber-rechnung-2026-1187@demo.mailagent.example>" in text


def test_panel_composer_and_launcher(client_for: Client) -> None:
    mailbox_page = client_for.get("/mail/")
    assert b'data-testid="ask-launcher"' in mailbox_page.content

    # The launcher posts a plain form: a new conversation, then the panel with the transcript.
    response = client_for.post("/ask/runs/", {"question": KEY_QUESTION})
    assert response.status_code == 302
    assert response["Location"].startswith("/ask/?c=")
    page = client_for.get(response["Location"])
    html = page.content.decode()
    assert 'data-testid="ask-run"' in html
    assert "11/05/2026" in html
    assert 'data-source="attachment_text"' in html
    assert "/mail/threads/" in html  # evidence rows open the thread
    assert "ws-connect" not in html  # finished runs hold no socket

    # The composer (htmx) appends one transcript item to the same conversation.
    conversation = response["Location"].split("c=")[1].split("#")[0]
    item = client_for.post(
        "/ask/runs/", {"question": "and the one before that?", "conversation": conversation}, HTTP_HX_REQUEST="true"
    )
    assert item.status_code == 200
    assert item.content.decode().count('data-testid="ask-run"') == 1
    assert "11/04/2026" in item.content.decode()
    error = client_for.post("/ask/runs/", {"question": "  "}, HTTP_HX_REQUEST="true")
    assert error.status_code == 422 and b"Ask a question first" in error.content
