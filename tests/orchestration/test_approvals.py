"""Approval for anything that reaches other people: a director's calendar_add with attendees stores the
exact request and sends nothing; the user sees it on the run page and in the Inbox; only approval
performs it (once, however often it is clicked); rejection sends nothing; other users get 404."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from apps.orchestration.models import Approval, ApprovalStatus, Director, Run
from apps.workspaces.models import InboxEntry
from tests.fakes.google_server import FakeGoogleServer
from tests.fakes.graph_server import FakeGraphServer, connect_outlook
from tests.fakes.openai_server import FakeOpenAI, Reply

pytestmark = pytest.mark.django_db

EVENTS = "/v1.0/me/events"
GOOGLE_EVENTS = "/calendar/v3/calendars/primary/events"


def invite(account_id: int, title: str) -> Reply:
    return Reply.calls(
        (
            "calendar_add",
            {
                "accountId": account_id,
                "event": {
                    "title": title,
                    "start": "2026-12-02T10:00:00Z",
                    "end": "2026-12-02T10:30:00Z",
                    "attendees": ["client7@domain.com", "boss@domain.com"],
                },
            },
        )
    )


def director_invites(
    fake_llm: FakeOpenAI, store_mail: Any, account_id: int, title: str, sender: str
) -> tuple[Run, Approval]:
    fake_llm.script(invite(account_id, title), Reply.text("Proposed the meeting."))
    run = Run.objects.get(message=store_mail(subject=title, sender=sender))
    assert run.status == "completed"
    return run, Approval.objects.get(run=run)


def test_invitations_wait_for_approval_and_are_sent_once(
    client_manager: Director, fake_llm: FakeOpenAI, store_mail: Any, graph: FakeGraphServer, logged_in_client: Any
) -> None:
    outlook = connect_outlook(logged_in_client, graph)
    run, approval = director_invites(fake_llm, store_mail, outlook.pk, "Call Client Seven", "client7@domain.com")

    # Nothing reached Graph's events endpoint: no event, no invitation.
    assert graph.calls("POST", EVENTS) == 0 and graph.events == []
    assert approval.status == ApprovalStatus.PENDING
    assert approval.attendees == ["client7@domain.com", "boss@domain.com"]
    assert approval.request["path"] == "/me/events"
    assert approval.request["json"]["attendees"][0] == {
        "emailAddress": {"address": "client7@domain.com"},
        "type": "required",
    }
    # The model was told it waits, not that it was done.
    tool_answer = next(
        m for m in fake_llm.chat_requests()[-1]["messages"] if m["role"] == "tool" and "approval" in m["content"]
    )
    assert "nothing was created or sent" in tool_answer["content"]

    # The user sees exactly what would be sent: in the Inbox and on the run page.
    assert approval.inbox_entry_id is not None
    entry = InboxEntry.objects.get(pk=approval.inbox_entry_id)
    assert entry.run_id == run.pk and "client7@domain.com" in entry.comments
    assert reverse("runs:approval", args=[approval.pk]) in entry.comments
    page = logged_in_client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    assert 'data-testid="approval"' in page and "boss@domain.com" in page and "Approve and send" in page
    assert logged_in_client.get(reverse("runs:approval", args=[approval.pk])).status_code == 200
    assert graph.calls("POST", EVENTS) == 0

    approve_url = reverse("runs:approval_approve", args=[approval.pk])
    response = logged_in_client.post(approve_url, {"back": "run"})
    assert response.status_code == 302 and response["Location"] == reverse("runs:detail", args=[run.pk])
    assert graph.calls("POST", EVENTS) == 1
    assert graph.events[0]["subject"] == "Call Client Seven"
    assert [a["emailAddress"]["address"] for a in graph.events[0]["attendees"]] == [
        "client7@domain.com",
        "boss@domain.com",
    ]
    approval.refresh_from_db()
    assert approval.status == ApprovalStatus.DONE and approval.result["id"] == graph.events[0]["id"]

    logged_in_client.post(approve_url)  # a second click (or a replayed form) performs nothing
    assert graph.calls("POST", EVENTS) == 1
    assert logged_in_client.post(reverse("runs:approval_reject", args=[approval.pk])).status_code == 302
    approval.refresh_from_db()
    assert approval.status == ApprovalStatus.DONE


def test_reject_sends_nothing_and_a_failure_is_retryable(
    client_manager: Director, fake_llm: FakeOpenAI, store_mail: Any, graph: FakeGraphServer, logged_in_client: Any
) -> None:
    outlook = connect_outlook(logged_in_client, graph)
    _run, rejected = director_invites(fake_llm, store_mail, outlook.pk, "Kick-off", "client1@domain.com")
    logged_in_client.post(reverse("runs:approval_reject", args=[rejected.pk]))
    logged_in_client.post(reverse("runs:approval_approve", args=[rejected.pk]))  # too late: rejected
    rejected.refresh_from_db()
    assert rejected.status == ApprovalStatus.REJECTED and graph.calls("POST", EVENTS) == 0

    _run, failing = director_invites(fake_llm, store_mail, outlook.pk, "Review", "client2@domain.com")
    graph.tools_forbidden = True  # the account lost its calendar permission
    logged_in_client.post(reverse("runs:approval_approve", args=[failing.pk]))
    failing.refresh_from_db()
    assert failing.status == ApprovalStatus.FAILED and "without calendar/to-do permission" in failing.error
    page = logged_in_client.get(reverse("runs:approval", args=[failing.pk])).content.decode()
    assert 'data-testid="approval-error"' in page and "Try again" in page
    graph.tools_forbidden = False
    logged_in_client.post(reverse("runs:approval_approve", args=[failing.pk]))
    failing.refresh_from_db()
    assert failing.status == ApprovalStatus.DONE and failing.attempts == 2
    assert [e["subject"] for e in graph.events] == ["Review"]


def test_events_without_attendees_are_created_at_once(
    client_manager: Director, fake_llm: FakeOpenAI, store_mail: Any, graph: FakeGraphServer, logged_in_client: Any
) -> None:
    outlook = connect_outlook(logged_in_client, graph)
    alone = {"title": "Focus time", "start": "2026-12-02T10:00:00Z", "end": "2026-12-02T11:00:00Z"}
    fake_llm.script(Reply.calls(("calendar_add", {"accountId": outlook.pk, "event": alone})), Reply.text("ok"))
    run = Run.objects.get(message=store_mail(subject="Block time", sender="client3@domain.com"))
    assert run.status == "completed" and not Approval.objects.filter(run=run).exists()
    assert [e["subject"] for e in graph.events] == ["Focus time"]


def test_google_calendar_mails_attendees_only_after_approval(
    client_manager: Director,
    fake_llm: FakeOpenAI,
    store_mail: Any,
    google: FakeGoogleServer,
    user: Any,
    logged_in_client: Any,
) -> None:
    from apps.accounts.oauth_connect import connect_oauth_account

    gmail, _ = connect_oauth_account(
        owner=user, provider="gmail", address=google.address, display_name="", credentials=google.token_set()
    )
    # Without attendees: created at once, and Google is told to mail no one (sendUpdates=none).
    alone = {"title": "Focus time", "start": "2026-12-02T10:00:00Z", "end": "2026-12-02T11:00:00Z"}
    fake_llm.script(Reply.calls(("calendar_add", {"accountId": gmail.pk, "event": alone})), Reply.text("ok"))
    run = Run.objects.get(message=store_mail(subject="Block time", sender="client3@domain.com"))
    assert run.status == "completed" and not Approval.objects.filter(run=run).exists()
    assert [e["summary"] for e in google.calendar_events] == ["Focus time"]
    assert google.calendar_send_updates == ["none"]

    # With attendees: an approval, and Google sees no request at all until the user approves.
    _run, approval = director_invites(fake_llm, store_mail, gmail.pk, "Call Client Seven", "client7@domain.com")
    assert google.calls("POST", GOOGLE_EVENTS) == 1  # the event without attendees only
    assert approval.status == ApprovalStatus.PENDING
    assert approval.request["api"] == "calendar" and approval.request["path"] == "/calendars/primary/events"
    # stored as it will be sent on approval, and shown so: Google mails the invitations
    assert approval.request["params"] == {"sendUpdates": "all"}
    card = logged_in_client.get(reverse("runs:approval", args=[approval.pk])).content.decode()
    assert "POST /calendars/primary/events?sendUpdates=all" in card and "Google emails the invitations" in card
    assert approval.request["json"]["attendees"] == [{"email": "client7@domain.com"}, {"email": "boss@domain.com"}]

    logged_in_client.post(reverse("runs:approval_approve", args=[approval.pk]))
    done = Approval.objects.get(pk=approval.pk)
    assert done.status == ApprovalStatus.DONE, done.error
    assert google.calls("POST", GOOGLE_EVENTS) == 2
    invited = google.calendar_events[-1]
    assert invited["summary"] == "Call Client Seven" and done.result["id"] == invited["id"]
    assert [a["email"] for a in invited["attendees"]] == ["client7@domain.com", "boss@domain.com"]
    assert google.calendar_send_updates == ["none", "all"]  # approved: now Google invites them


def test_approvals_of_other_users_are_404(
    client_manager: Director, fake_llm: FakeOpenAI, store_mail: Any, graph: FakeGraphServer, logged_in_client: Any
) -> None:
    outlook = connect_outlook(logged_in_client, graph)
    _run, approval = director_invites(fake_llm, store_mail, outlook.pk, "Private", "client4@domain.com")
    intruder = get_user_model().objects.create_user(username="intruder", email="intruder@example.com")
    logged_in_client.force_login(intruder)
    assert logged_in_client.get(reverse("runs:approval", args=[approval.pk])).status_code == 404
    assert logged_in_client.post(reverse("runs:approval_approve", args=[approval.pk])).status_code == 404
    assert logged_in_client.post(reverse("runs:approval_reject", args=[approval.pk])).status_code == 404
    approval.refresh_from_db()
    assert approval.status == ApprovalStatus.PENDING and graph.calls("POST", EVENTS) == 0


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_approval_on_the_run_page_and_its_own_page_in_chromium(
    asgi_server: str,
    chromium: Any,
    client_manager: Director,
    fake_llm: FakeOpenAI,
    store_mail: Any,
    graph: FakeGraphServer,
    logged_in_client: Any,
) -> None:
    from tests.browser import horizontal_overflow, login, screenshot

    outlook = connect_outlook(logged_in_client, graph)
    run, approval = director_invites(fake_llm, store_mail, outlook.pk, "Quarterly review", "client5@domain.com")
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    login(page, asgi_server, client_manager.owner)
    page.goto(f"{asgi_server}/runs/{run.pk}/")
    css = page.request.get(f"{asgi_server}/static/orchestration/orchestration.css")
    app_css = page.request.get(f"{asgi_server}/static/mailagent/app.css")
    assert (css.status, app_css.status) == (200, 200), (css.status, app_css.status, app_css.text()[:300])
    card = page.locator("[data-testid=approval]")
    assert "boss@domain.com" in card.inner_text() and "client7@domain.com" in page.inner_text(
        "[data-testid=approval-json]"
    )
    screenshot(page, "approval-run-1280")
    page.set_viewport_size({"width": 390, "height": 844})
    card.get_by_role("link", name="Open").click()
    page.wait_for_url(f"{asgi_server}/runs/approvals/{approval.pk}/")
    assert horizontal_overflow(page) == 0
    screenshot(page, "approval-390")
    prompt = page.locator("#notify-prompt")
    if prompt.is_visible():  # the one-time browser-notification offer floats over the page bottom
        prompt.get_by_role("button", name="Not now").click()
    page.click("[data-testid=reject]")
    page.locator("[data-testid=approval-status]").filter(has_text="Rejected").wait_for()
    assert graph.calls("POST", EVENTS) == 0


def test_the_approvals_page_lists_what_waits_from_every_run_and_the_home_page_counts_it(
    client_manager: Director, fake_llm: FakeOpenAI, store_mail: Any, graph: FakeGraphServer, logged_in_client: Any
) -> None:
    empty = logged_in_client.get(reverse("runs:approvals")).content.decode()
    assert 'data-testid="no-pending-approvals"' in empty
    outlook = connect_outlook(logged_in_client, graph)
    first_run, first = director_invites(fake_llm, store_mail, outlook.pk, "Kick-off", "client1@domain.com")
    _run, second = director_invites(fake_llm, store_mail, outlook.pk, "Review", "client2@domain.com")
    home = logged_in_client.get("/").content.decode()
    assert (
        f'data-kind="approvals">\n      <a href="{reverse("runs:approvals")}"><span class="attention-count">2</span> '
        "requests waiting for your approval" in home
    )
    page = logged_in_client.get(reverse("runs:approvals")).content.decode()
    assert "Waiting for you (2)" in page
    assert page.index(f'id="approval-{first.pk}"') < page.index(f'id="approval-{second.pk}"')  # oldest first
    assert 'name="back" value="list"' in page
    # Deciding from the list comes back to the list, where the request has moved to "Decided".
    rejected = logged_in_client.post(reverse("runs:approval_reject", args=[first.pk]), {"back": "list"})
    assert rejected["Location"] == reverse("runs:approvals")
    page = logged_in_client.get(reverse("runs:approvals")).content.decode()
    assert "Waiting for you (1)" in page and f'id="approval-{first.pk}"' not in page
    assert 'data-testid="decided-approvals"' in page and reverse("runs:detail", args=[first_run.pk]) in page
    assert '<span class="attention-count">1</span> request waiting for your approval' in (
        logged_in_client.get("/").content.decode()
    )
    assert graph.calls("POST", EVENTS) == 0
    stranger = get_user_model().objects.create_user(username="s", email="s@example.com", password="pw-123456789")
    logged_in_client.force_login(stranger)
    theirs = logged_in_client.get(reverse("runs:approvals")).content.decode()
    assert 'data-testid="no-pending-approvals"' in theirs and "Review" not in theirs
