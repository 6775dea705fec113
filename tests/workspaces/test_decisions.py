"""Decisions back into the run, with the scripted OpenAI-compatible server: the director pushes a question,
the user answers on the Inbox page, the director's next turn sees the answer and completes."""

from __future__ import annotations

from typing import Any

import pytest

from apps.orchestration.inbox_replies import deliver_pending_replies
from apps.orchestration.models import Conversation, Run, RunStatus, ThreadKind
from apps.workspaces.models import EntrySource, InboxEntry, WorkspaceItem
from tests.fakes.openai_server import FakeOpenAI, Reply, last_user_text
from tests.orchestration.conftest import api_config, client_manager, fake_llm, make_prompt  # noqa: F401

pytestmark = pytest.mark.django_db

CLIENT = "Client Seven <client7@domain.com>"


def test_director_question_answered_in_the_inbox_continues_the_run(
    fake_llm: FakeOpenAI,  # noqa: F811
    client_manager: Any,  # noqa: F811
    store_mail: Any,
    logged_in_client: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    def answered(body: dict[str, Any]) -> bool:
        return "answered your Inbox question" in last_user_text(body)

    fake_llm.when(answered, Reply.text("Offering the 10% discount as the user decided."))
    fake_llm.script(
        Reply.calls(
            (
                "workspace_add_item",
                {"label": "Draft", "mimeType": "text/markdown", "data": "Dear client, ...", "path": "drafts/reply.md"},
            )
        ),
        Reply.calls(
            (
                "inbox_push",
                {
                    "docs": [{"path": "drafts/reply.md"}],
                    "comments": "The client asks for a discount.",
                    "ask": {"question": "Offer a discount?", "options": ["Yes, 10%", "No"]},
                },
            )
        ),
        Reply.text("Waiting for the user's decision."),
    )
    run = Run.objects.get(message=store_mail(subject="Discount please", sender=CLIENT))
    assert run.status == RunStatus.COMPLETED
    entry = InboxEntry.objects.get(run_id=run.pk)
    assert entry.source == EntrySource.DIRECTOR
    assert entry.ask == {"question": "Offer a discount?", "options": ["Yes, 10%", "No"]}
    assert entry.workspace_label == "Discount please — Client Manager"

    page = logged_in_client.get(f"/inbox/?entry={entry.pk}")
    assert page.status_code == 200 and b"Offer a discount?" in page.content and b"Yes, 10%" in page.content
    assert b"Dear client, ..." in page.content  # the pointed doc, rendered live

    with django_capture_on_commit_callbacks(execute=True):
        answer = logged_in_client.post(f"/inbox/entries/{entry.pk}/reply/", {"text": "Yes, 10%"})
    assert answer.status_code == 200 and b"You answered" in answer.content

    run.refresh_from_db()
    entry.refresh_from_db()
    assert run.status == RunStatus.COMPLETED and entry.reply == "Yes, 10%" and entry.reply_delivered_at is not None
    final_request = fake_llm.chat_requests()[-1]
    assert "Offer a discount?" in last_user_text(final_request) and "Yes, 10%" in last_user_text(final_request)
    thread = Conversation.objects.get(run=run, kind=ThreadKind.DIRECTOR)
    assert thread.finalized and thread.messages[-1]["content"] == "Offering the 10% discount as the user decided."
    assert any(m["role"] == "user" and "Yes, 10%" in str(m.get("content")) for m in thread.messages)

    run_page = logged_in_client.get(f"/runs/{run.pk}/")
    assert b"Offer a discount?" in run_page.content and b"you answered" in run_page.content
    # Answering twice is refused; nothing is resent.
    again = logged_in_client.post(f"/inbox/entries/{entry.pk}/reply/", {"text": "No"})
    assert again.status_code == 400 and b"already answered" in again.content
    assert deliver_pending_replies() == 0


def test_reply_to_an_outside_agents_entry_lands_in_its_workspace(logged_in_client: Any, user: Any) -> None:
    from apps.workspaces import actions

    workspace = actions.create_user_workspace(owner=user, label="Claude")
    entry = actions.push_inbox_entry(workspace=workspace, comments="Which format do you want?")
    response = logged_in_client.post(f"/inbox/entries/{entry.pk}/reply/", {"text": "PDF please"})
    assert response.status_code == 200 and b"inbox/replies/" in response.content
    item = WorkspaceItem.objects.get(workspace=workspace, path=f"inbox/replies/{entry.pk}.md")
    assert "PDF please" in item.data and item.created_by == "user"
    other = actions.push_inbox_entry(workspace=workspace, comments="Anything else?")
    empty = logged_in_client.post(f"/inbox/entries/{other.pk}/reply/", {"text": "  "})
    assert empty.status_code == 400 and b"the reply is empty" in empty.content


def test_a_reply_whose_job_was_lost_is_delivered_once_by_the_sweeper(
    fake_llm: FakeOpenAI,  # noqa: F811
    client_manager: Any,  # noqa: F811
    store_mail: Any,
    logged_in_client: Any,
) -> None:
    import datetime as dt

    from apps.orchestration.inbox_replies import continue_run_task

    fake_llm.when(lambda body: "replied to your Inbox entry" in last_user_text(body), Reply.text("Noted, done."))
    fake_llm.script(Reply.calls(("inbox_push", {"comments": "Summary: the order ships Monday."})), Reply.text("ok"))
    run = Run.objects.get(message=store_mail(subject="Order status", sender=CLIENT))
    entry = InboxEntry.objects.get(run_id=run.pk)
    # The reply is stored but its on-commit job never runs (the test's transaction is not committed).
    assert (
        logged_in_client.post(f"/inbox/entries/{entry.pk}/reply/", {"text": "Also ask for the invoice"}).status_code
        == 200
    )
    assert deliver_pending_replies() == 0  # still inside the retry window
    InboxEntry.objects.filter(pk=entry.pk).update(replied_at=entry.created - dt.timedelta(hours=1))
    assert deliver_pending_replies() == 1  # django-q runs it inline in tests
    entry.refresh_from_db()
    run.refresh_from_db()
    assert entry.reply_delivered_at is not None and run.status == RunStatus.COMPLETED
    assert continue_run_task(str(entry.pk)) == "nothing to deliver"
    thread = Conversation.objects.get(run=run, kind=ThreadKind.DIRECTOR)
    replies = [
        m for m in thread.messages if m["role"] == "user" and "Also ask for the invoice" in str(m.get("content"))
    ]
    assert len(replies) == 1 and thread.messages[-1]["content"] == "Noted, done."
