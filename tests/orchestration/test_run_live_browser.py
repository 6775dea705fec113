"""The run page updated live in real Chromium against the production server (1280 and 390 px): what appears
during a run (its workspace, "Run again" once it failed) shows without a reload."""

from __future__ import annotations

from typing import Any

import pytest

from apps.orchestration.models import Run, RunStatus
from apps.workspaces.actions import open_workspace
from apps.workspaces.models import Workspace
from tests.browser import console_errors, horizontal_overflow, login, screenshot
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.orchestration.conftest import is_director

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("width", [1280, 390])
def test_the_run_page_shows_the_workspace_and_run_again_as_they_appear(
    width: int, client_manager: Any, fake_llm: FakeOpenAI, store_mail: Any, asgi_server: str, chromium: Any
) -> None:
    fake_llm.when(is_director, Reply.text("Nothing to do."))
    run = Run.objects.get(message=store_mail(subject="Where is my order?", sender="client1@domain.com"))
    # As the page meets a run still going: no workspace yet, so no button.
    Workspace.objects.filter(run_id=run.pk).delete()
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, finished_at=None)
    page = chromium.new_page(viewport={"width": width, "height": 900})
    errors = console_errors(page)
    login(page, asgi_server, client_manager.owner)
    page.goto(f"{asgi_server}/runs/{run.pk}/")
    workspace_button = page.get_by_role("link", name="Workspace & MCP token")
    assert workspace_button.count() == 0
    workspace = open_workspace(
        owner=run.director.owner,
        run_id=run.pk,
        message_id=run.message_id,
        director_id=run.director_id,
        director_name=run.director.name,
        title="Where is my order?",
    )
    workspace_button.wait_for(timeout=10_000)  # the 2 s poll, no reload
    assert workspace_button.get_attribute("href") == f"/inbox/workspaces/{workspace.pk}/"
    Run.objects.filter(pk=run.pk).update(status=RunStatus.FAILED, error="The model went away.")
    page.get_by_role("button", name="Run again").wait_for(timeout=10_000)
    assert page.locator("[data-testid=run-error]").inner_text() == "The model went away."
    screenshot(page, f"run-live-{width}")
    assert horizontal_overflow(page) == 0
    assert errors == []
