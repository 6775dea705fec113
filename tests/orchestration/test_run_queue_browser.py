"""The run page of a director run waiting for its model, in real Chromium against the production server
(1280 and 390 px): "Waiting for the model: N ahead" in the status row, updated by the page's 2 s poll as the
line moves, gone once the run generates."""

from __future__ import annotations

from typing import Any

import pytest

from apps.llm.configs import concurrency_key
from apps.llm.models import GenerationTicket
from apps.orchestration.models import Run, RunStatus
from tests.browser import console_errors, horizontal_overflow, login, screenshot
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.orchestration.conftest import is_director

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ANOTHER_MACHINE = "another-machine|00000000-0000-0000-0000-000000000000|4242|99"


@pytest.mark.parametrize("width", [1280, 390])
def test_the_run_page_shows_the_place_in_the_line_as_it_moves(
    width: int, client_manager: Any, fake_llm: FakeOpenAI, store_mail: Any, asgi_server: str, chromium: Any
) -> None:
    fake_llm.when(is_director, Reply.text("Nothing to do."))
    run = Run.objects.get(message=store_mail(subject="Where is my order?", sender="client1@domain.com"))
    assert run.director.api_config is not None
    key = concurrency_key(run.director.api_config)
    # As the page meets the run: its model call waits behind one generating and one waiting request.
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, finished_at=None)
    generating = GenerationTicket.objects.create(key=key, holder=ANOTHER_MACHINE, active=True)
    waiting = GenerationTicket.objects.create(key=key, holder=ANOTHER_MACHINE)
    mine = GenerationTicket.objects.create(key=key, holder=ANOTHER_MACHINE, requester=run.queue_requester)
    page = chromium.new_page(viewport={"width": width, "height": 900})
    errors = console_errors(page)
    login(page, asgi_server, client_manager.owner)
    page.goto(f"{asgi_server}/runs/{run.pk}/")
    place = page.locator("[data-testid=run-queue]")
    assert place.inner_text() == "Waiting for the model: 2 ahead (1 generating)"
    screenshot(page, f"run-queue-{width}")
    assert horizontal_overflow(page) == 0
    generating.delete()
    GenerationTicket.objects.filter(pk=waiting.pk).update(active=True)
    page.get_by_text("Waiting for the model: 1 ahead (1 generating)").wait_for(timeout=10_000)  # the 2 s poll
    waiting.delete()
    GenerationTicket.objects.filter(pk=mine.pk).update(active=True)  # its turn: generating
    place.wait_for(state="detached", timeout=10_000)
    assert errors == []
