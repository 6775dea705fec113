"""/api/inbox/conversations in the conversational seed's shapes, through the real URLconf: create with a first
question, append a follow-up, read the messages back (question and answer with its evidence), list by status,
archive (kept and readable, closed to questions, out of the Ask panel), other users' conversations 404."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from apps.ask.models import AskConversation, AskRun
from tests.ask.conftest import KEY_QUESTION, AskMailbox

pytestmark = pytest.mark.django_db
API = "/api/inbox/conversations"


@pytest.fixture
def client_for(ask_mailbox_text: AskMailbox) -> Client:
    client = Client()
    client.force_login(ask_mailbox_text.user)
    return client


def test_a_conversation_from_first_question_to_archive(client_for: Client, ask_mailbox_text: AskMailbox) -> None:
    created = client_for.post(API, {"message": KEY_QUESTION}, content_type="application/json")
    assert created.status_code == 201, created.content
    body = created.json()
    conversation_id = body["conversation"]["id"]
    assert body["websocket"] == f"/ws/ask/{body['runId']}/"
    assert body["conversation"]["status"] == "active" and body["conversation"]["summary"] == KEY_QUESTION

    follow = client_for.post(
        f"{API}/{conversation_id}/messages",
        {"type": "text", "content": {"text": "and the one before that?"}},
        content_type="application/json",
    )
    assert follow.status_code == 202, follow.content
    assert follow.json()["messageId"] == f"{follow.json()['runId']}:question"

    detail = client_for.get(f"{API}/{conversation_id}").json()
    assert [(m["role"], m["type"]) for m in detail["messages"]] == [("user", "text"), ("agent", "text")] * 2
    first_answer = detail["messages"][1]
    assert "11/05/2026" in first_answer["content"]["text"]
    assert first_answer["content"]["evidence"][0]["message_id"] == "qnb-e-ekstre-2026-04@qnbfinansbank.example"
    assert first_answer["metadata"]["runId"] == body["runId"] and first_answer["metadata"]["status"] == "done"
    assert "11/04/2026" in detail["messages"][3]["content"]["text"]
    assert detail["messageCount"] == 4 and not detail["truncated"]
    assert detail["summary"] == f"{KEY_QUESTION} … and the one before that? (2 questions)"
    latest = client_for.get(f"{API}/{conversation_id}", {"limit": 1}).json()
    assert latest["truncated"] and [m["id"] for m in latest["messages"]] == [f"{follow.json()['runId']}:answer"]

    # Listed as active now; half an hour later, completed.
    listed = client_for.get(API).json()["conversations"]
    assert [(c["id"], c["status"], c["messageCount"]) for c in listed] == [(conversation_id, "active", 4)]
    AskRun.objects.filter(conversation_id=conversation_id).update(created_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    assert client_for.get(API, {"status": "active"}).json()["conversations"] == []
    assert client_for.get(API, {"status": "completed"}).json()["conversations"][0]["id"] == conversation_id

    # Archived: readable, listed only when asked for, no longer in the Ask panel, closed to questions.
    archived = client_for.post(f"{API}/{conversation_id}/archive")
    assert archived.status_code == 200 and archived.json()["status"] == "archived"
    assert client_for.get(API).json()["conversations"] == []
    assert client_for.get(API, {"status": "archived"}).json()["conversations"][0]["id"] == conversation_id
    assert len(client_for.get(f"{API}/{conversation_id}").json()["messages"]) == 4
    closed = client_for.post(
        f"{API}/{conversation_id}/messages", {"content": {"text": "one more?"}}, content_type="application/json"
    )
    assert closed.status_code == 409 and "archived" in closed.json()["error"]
    panel = client_for.get(reverse("ask:panel")).content.decode()
    assert conversation_id not in panel


def test_bad_input_and_other_users(client_for: Client, ask_mailbox_text: AskMailbox) -> None:
    empty = client_for.post(API, {}, content_type="application/json")
    assert empty.status_code == 201 and empty.json()["runId"] is None
    conversation_id = empty.json()["conversation"]["id"]
    assert empty.json()["conversation"]["messageCount"] == 0
    blank = client_for.post(
        f"{API}/{conversation_id}/messages", {"content": {"text": "  "}}, content_type="application/json"
    )
    assert blank.status_code == 422 and "content.text is required" in blank.json()["error"]
    wrong_type = client_for.post(
        f"{API}/{conversation_id}/messages", {"type": "file", "content": {"text": "x"}}, content_type="application/json"
    )
    assert wrong_type.status_code == 422
    assert client_for.get(API, {"status": "done"}).status_code == 422
    assert client_for.get(API, {"cursor": "abc"}).status_code == 422
    assert not AskRun.objects.exists()

    stranger = get_user_model().objects.create_user(
        username="stranger", email="s@example.com", password="pw-1234567890"
    )
    other = Client()
    other.force_login(stranger)
    assert other.get(f"{API}/{conversation_id}").status_code == 404
    assert other.post(f"{API}/{conversation_id}/archive").status_code == 404
    refused = other.post(
        f"{API}/{conversation_id}/messages", {"content": {"text": "hi"}}, content_type="application/json"
    )
    assert refused.status_code == 404
    assert other.get(API).json()["conversations"] == []
    assert AskConversation.objects.get(pk=conversation_id).archived_at is None


def test_pages_of_conversations(client_for: Client, ask_mailbox_text: AskMailbox) -> None:
    made = [client_for.post(API, {}, content_type="application/json").json()["conversation"]["id"] for _ in range(5)]
    first = client_for.get(API, {"limit": 2}).json()
    second = client_for.get(API, {"limit": 2, "cursor": first["nextCursor"]}).json()
    third = client_for.get(API, {"limit": 2, "cursor": second["nextCursor"]}).json()
    seen = [c["id"] for page in (first, second, third) for c in page["conversations"]]
    assert sorted(seen) == sorted(made) and len(set(seen)) == 5
    assert third["nextCursor"] is None
