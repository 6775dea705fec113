"""An answered Inbox question in real Chromium against the production server (1280 and 390 px): while the run
is still busy the answer reads "waiting for the run to take it", and once the run has taken it the page says
so without a reload."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from apps.orchestration.models import Run, RunStatus
from apps.workspaces.actions import push_inbox_entry
from apps.workspaces.models import EntrySource, InboxEntry, Workspace
from tests.browser import console_errors, horizontal_overflow, login, screenshot
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.orchestration.conftest import api_config, client_manager, fake_llm, is_director, make_prompt  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("width", [1280, 390])
def test_an_answer_the_run_takes_later_updates_without_a_reload(
    width: int,
    client_manager: Any,  # noqa: F811
    fake_llm: FakeOpenAI,  # noqa: F811
    store_mail: Any,
    asgi_server: str,
    chromium: Any,
) -> None:
    fake_llm.when(is_director, Reply.text("Nothing to do."))
    run = Run.objects.get(message=store_mail(subject="Discount please", sender="client7@domain.com"))
    entry = push_inbox_entry(
        workspace=Workspace.objects.get(run_id=run.pk),
        comments="The client asks for a discount.",
        ask={"question": "Offer a discount?", "options": ["Yes, 10%", "No"]},
        source=EntrySource.DIRECTOR,
        run_id=run.pk,
    )
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)  # busy: the answer waits for it
    page = chromium.new_page(viewport={"width": width, "height": 900})
    errors = console_errors(page)
    login(page, asgi_server, client_manager.owner)
    page.goto(f"{asgi_server}/inbox/?entry={entry.pk}")
    page.get_by_role("button", name="Yes, 10%").click()
    answered = page.locator("[data-testid=inbox-answered]")
    answered.filter(has_text="waiting for the run to take it").wait_for(timeout=10_000)
    InboxEntry.objects.filter(pk=entry.pk).update(reply_delivered_at=timezone.now())  # what the run does
    answered.filter(has_text="the run continued with it").wait_for(timeout=10_000)
    assert "Yes, 10%" in answered.inner_text()
    screenshot(page, f"inbox-reply-taken-{width}")
    assert horizontal_overflow(page) == 0
    assert errors == []
