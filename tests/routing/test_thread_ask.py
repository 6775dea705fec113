"""“Ask about this thread” through the real views: the question asked from a thread reads only that thread's
messages (and says so), the same question can be widened to the whole mailbox, another user's thread is 404."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from apps.accounts.demo_mailbox.importing import import_demo_mailbox
from apps.accounts.models import Message, Thread
from apps.ask.models import AskRun, RunStatus

pytestmark = pytest.mark.django_db


@pytest.fixture
def support_thread(user: Any, django_capture_on_commit_callbacks: Any) -> Thread:
    with django_capture_on_commit_callbacks(execute=True):  # the search index is written on commit
        import_demo_mailbox(owner=user, stdout=io.StringIO())
    thread = Thread.objects.get(account__owner=user, subject__startswith="Complaint: standing desk")
    assert thread.message_count >= 3
    return thread


def _ask(client: Client, question: str, **extra: str) -> AskRun:
    before = set(AskRun.objects.values_list("pk", flat=True))
    response = client.post(reverse("ask:run_create"), {"question": question, **extra})
    assert response.status_code == 302, response.content.decode()[:500]
    (run,) = AskRun.objects.exclude(pk__in=before)
    assert run.status == RunStatus.DONE, run.error
    return run


def test_a_question_from_a_thread_reads_only_that_thread_and_can_be_widened(
    logged_in_client: Client, support_thread: Thread
) -> None:
    panel = logged_in_client.get(f"{reverse('ask:panel')}?thread={support_thread.pk}").content.decode()
    assert f'name="thread" value="{support_thread.pk}" checked' in panel
    assert f"({support_thread.message_count} messages in " in panel and "Untick to ask the whole mailbox" in panel

    # The credit card statements are elsewhere in the mailbox: asked from the desk thread, they are not evidence.
    question = "when do I need to pay my QNB credit card bill"
    scoped = _ask(logged_in_client, question, thread=str(support_thread.pk))
    assert scoped.thread == support_thread
    thread_messages = set(Message.objects.filter(thread=support_thread).values_list("pk", flat=True))
    assert scoped.evidence, "the thread's own messages are the candidates"
    assert {row["thread_id"] for row in scoped.evidence} == {support_thread.pk}
    assert {row["message_pk"] for row in scoped.evidence} <= thread_messages
    assert scoped.scope["thread"] == {
        "id": support_thread.pk,
        "subject": support_thread.subject,
        "messages": support_thread.message_count,
        "read": support_thread.message_count,
    }
    assert scoped.scope["sources"]["provider_search"] == {}
    steps = {step["stepId"]: step for step in scoped.steps}
    assert steps["provider_search"]["detail"] == "one thread only"
    read = f"read {support_thread.message_count} messages of 1 thread, best: "  # all of it (up to 12)
    assert steps["read_evidence"]["detail"].startswith(read)
    page = logged_in_client.get(f"{reverse('ask:panel')}?c={scoped.conversation_id}").content.decode()
    page = page.replace("&quot;", '"').replace("&#x27;", "'")
    assert (
        f'Answering from the thread “<a href="{reverse("mail:thread", args=[support_thread.pk])}">'
        f"{support_thread.subject}</a>” ({support_thread.message_count} messages)." in page
    )
    assert 'data-testid="ask-widen"' in page

    # “Ask the whole mailbox”: the same question in the same conversation, without the thread.
    wide = _ask(logged_in_client, question, conversation=str(scoped.conversation_id))
    assert wide.thread is None and "thread" not in wide.scope
    assert wide.conversation_id == scoped.conversation_id
    assert any("QNB" in row["subject"] or "qnb" in row["sender"].lower() for row in wide.evidence[:3])
    assert support_thread.pk not in {row["thread_id"] for row in wide.evidence[:3]}

    # A question the thread answers is answered from it.
    ticket = _ask(logged_in_client, "what is the ticket number", thread=str(support_thread.pk))
    assert "77104" in ticket.answer and ticket.answer_mode == "extractive"
    assert {row["thread_id"] for row in ticket.evidence} == {support_thread.pk}


def test_another_users_thread_is_404_and_starts_nothing(logged_in_client: Client, support_thread: Thread) -> None:
    stranger = get_user_model().objects.create_user(username="s", email="s@example.com", password="x-Pass-12345")
    other = Client()
    other.force_login(stranger)
    response = other.post(reverse("ask:run_create"), {"question": "what is this about", "thread": support_thread.pk})
    assert response.status_code == 404
    assert other.get(f"{reverse('ask:panel')}?thread={support_thread.pk}").status_code == 404
    assert not AskRun.objects.exists()
