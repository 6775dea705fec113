"""“Run director…” and “Ask about this thread” on a mail thread page, through the real URLconf."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from apps.accounts.demo_mailbox.importing import import_demo_mailbox
from apps.accounts.models import Message, Thread
from apps.llm.models import ApiConfig
from apps.orchestration import actions as orchestration_actions
from apps.orchestration.models import Conversation, Director, Run, RunStatus, ThreadKind
from apps.routing.models import Filter
from tests.fakes.openai_server import FakeOpenAI, Reply

pytestmark = pytest.mark.django_db


@pytest.fixture
def fake_llm() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(default=Reply.text("Handled: the client wants a status update.")) as server:
        yield server  # type: ignore[misc]


@pytest.fixture
def demo_thread(user: Any) -> Thread:
    import_demo_mailbox(owner=user, stdout=io.StringIO())
    thread = Thread.objects.filter(account__owner=user, message_count__gte=2).order_by("pk").first()
    assert thread is not None
    return thread


@pytest.fixture
def assistant(user: Any, fake_llm: FakeOpenAI) -> Director:
    config = ApiConfig.objects.create(
        owner=user, name="fake", base_url=fake_llm.base_url, api_key="sk-fake", model="fake-model", timeout_seconds=10
    )
    return Director.objects.create(owner=user, name="Assistant", api_config=config, step_limit=4)


def page_url(thread: Thread) -> str:
    return reverse("routing:thread_run_director", args=[thread.pk])


def test_run_director_on_a_demo_thread_creates_a_run_that_completes_and_reruns_only_on_request(
    logged_in_client: Client,
    demo_thread: Thread,
    assistant: Director,
    fake_llm: FakeOpenAI,
    django_capture_on_commit_callbacks: Any,
) -> None:
    assert not Filter.objects.exists()  # no filter routes anything: the run comes from the button alone
    newest = Message.objects.filter(thread=demo_thread).order_by("-date", "-pk").first()
    assert newest is not None

    thread_page = logged_in_client.get(reverse("mail:thread", args=[demo_thread.pk])).content.decode()
    assert f'href="{page_url(demo_thread)}"' in thread_page

    page = logged_in_client.get(page_url(demo_thread))
    assert page.status_code == 200
    html = page.content.decode()
    assert "Assistant" in html and 'data-testid="run-director"' in html
    assert newest.subject in html

    with django_capture_on_commit_callbacks(execute=True):  # the run's task is enqueued on commit
        response = logged_in_client.post(page_url(demo_thread), {"director": assistant.pk}, follow=True)
    run = Run.objects.get()
    assert (run.message_id, run.director_id, run.trigger) == (newest.pk, assistant.pk, "manual")
    # Q_CLUSTER sync in tests: the task ran on commit, against the fake OpenAI server over HTTP.
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, (run.status, run.error, run.status_reason)
    assert response.redirect_chain[-1][0] == reverse("runs:detail", args=[run.pk])
    assert "“Assistant” started on this email." in response.content.decode()
    assert (
        "Handled: the client wants a status update."
        in logged_in_client.get(response.redirect_chain[-1][0]).content.decode()
    )
    assert any(newest.subject in str(request) for request in fake_llm.chat_requests())
    assert Conversation.objects.filter(run=run, kind=ThreadKind.DIRECTOR).count() == 1

    # A plain second click after completion does not start it again; it says so and offers "Run again".
    again = logged_in_client.post(page_url(demo_thread), {"director": assistant.pk}, follow=True)
    assert again.redirect_chain[-1][0] == page_url(demo_thread)
    text = again.content.decode()
    assert "already ran on this email (completed)" in text and 'data-testid="run-again"' in text
    assert Run.objects.count() == 1
    assert Conversation.objects.filter(run=run, kind=ThreadKind.DIRECTOR).count() == 1

    # The explicit re-run: the same run is queued again and completes with a second director thread.
    with django_capture_on_commit_callbacks(execute=True):
        rerun = logged_in_client.post(page_url(demo_thread), {"director": assistant.pk, "again": "1"}, follow=True)
    assert "“Assistant” started again on this email." in rerun.content.decode()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED and Run.objects.count() == 1
    assert Conversation.objects.filter(run=run, kind=ThreadKind.DIRECTOR).count() == 2


@pytest.mark.parametrize("status", [RunStatus.QUEUED, RunStatus.RUNNING])
def test_a_second_click_while_the_run_is_queued_or_running_says_so_and_starts_nothing(
    logged_in_client: Client,
    demo_thread: Thread,
    assistant: Director,
    fake_llm: FakeOpenAI,
    status: str,
    django_capture_on_commit_callbacks: Any,
) -> None:
    newest = Message.objects.filter(thread=demo_thread).order_by("-date", "-pk").first()
    assert newest is not None
    # A run already exists (e.g. routed by a filter, or a first click), not executed yet or mid-way.
    orchestration_actions.create_runs(
        requests=[orchestration_actions.RunRequest(message_id=newest.pk, director_id=assistant.pk)],
        fetch_cycle_id=None,
    )
    Run.objects.update(status=status)
    requests_before = len(fake_llm.chat_requests())

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = logged_in_client.post(page_url(demo_thread), {"director": assistant.pk, "again": "1"}, follow=True)
    assert callbacks == []  # nothing enqueued
    run = Run.objects.get()
    assert response.redirect_chain[-1][0] == reverse("runs:detail", args=[run.pk])
    assert f"“Assistant” is already {status} on this email; no second run was started." in response.content.decode()
    assert run.status == status and len(fake_llm.chat_requests()) == requests_before
    page = logged_in_client.get(page_url(demo_thread)).content.decode()
    assert 'data-testid="run-director"' not in page and "disabled" in page


def test_another_users_thread_or_director_is_404(
    logged_in_client: Client, demo_thread: Thread, assistant: Director
) -> None:
    stranger = get_user_model().objects.create_user(username="s", email="s@example.com", password="x-Pass-12345")
    foreign = Director.objects.create(owner=stranger, name="Foreign")
    assert logged_in_client.post(page_url(demo_thread), {"director": foreign.pk}).status_code == 404
    assert logged_in_client.post(page_url(demo_thread), {"director": "nope"}).status_code == 404
    other = Client()
    other.force_login(stranger)
    assert other.get(page_url(demo_thread)).status_code == 404
    assert other.post(page_url(demo_thread), {"director": assistant.pk}).status_code == 404
    assert not Run.objects.exists()


def test_no_directors_says_what_to_do(logged_in_client: Client, demo_thread: Thread) -> None:
    html = logged_in_client.get(page_url(demo_thread)).content.decode()
    assert 'data-testid="no-directors"' in html and reverse("settings:directors") in html


def test_ask_about_this_thread_lands_on_ask_with_the_thread_as_context(
    logged_in_client: Client, demo_thread: Thread, user: Any
) -> None:
    thread_page = logged_in_client.get(reverse("mail:thread", args=[demo_thread.pk])).content.decode()
    link = f"{reverse('ask:panel')}?thread={demo_thread.pk}"
    assert f'href="{link}"' in thread_page
    ask = logged_in_client.get(link)
    assert ask.status_code == 200
    html = ask.content.decode()
    assert 'data-testid="ask-about-thread"' in html
    assert reverse("mail:thread", args=[demo_thread.pk]) in html
    assert f"About “{demo_thread.subject}”: </textarea>" in html.replace("&quot;", '"')
    stranger = get_user_model().objects.create_user(username="t", email="t@example.com", password="x-Pass-12345")
    other = Client()
    other.force_login(stranger)
    assert other.get(link).status_code == 404
