"""Ask in real Chromium against the production server while every slot of the user's model is taken: the
run's status badge says "waiting for the model: 1 ahead" over the websocket, then the answer arrives once
the request ahead finishes (1280 and 390 px; screenshots in var/screenshots)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.utils import timezone

from apps.ask.actions import choose_ask_model
from apps.llm.configs import concurrency_key
from apps.llm.models import ApiConfig, GenerationTicket
from tests.ask.conftest import KEY_QUESTION, AskMailbox, build_ask_mailbox
from tests.browser import console_errors, horizontal_overflow, login, screenshot
from tests.conftest import USER_PASSWORD
from tests.fakes.openai_server import FakeOpenAI, Reply

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ANOTHER_MACHINE = "another-machine|00000000-0000-0000-0000-000000000000|4242|99"


@pytest.fixture
def mailbox(transactional_db: Any) -> AskMailbox:
    built = build_ask_mailbox(embeddings=False)
    built.user.set_password(USER_PASSWORD)
    built.user.save(update_fields=["password"])
    return built


@pytest.mark.parametrize("width", [1280, 390])
def test_the_run_says_it_waits_for_the_model_then_answers(
    width: int, mailbox: AskMailbox, asgi_server: str, chromium: Any
) -> None:
    llm = FakeOpenAI(default=Reply.text("Your QNB payment is due on 11/05/2026 [1]."))
    with llm:
        config = ApiConfig.objects.create(
            owner=mailbox.user, name="local", base_url=llm.base_url, model="fake-model", max_concurrency=1
        )
        choose_ask_model(owner=mailbox.user, api_config_id=config.pk)
        blocker = GenerationTicket.objects.create(key=concurrency_key(config), holder=ANOTHER_MACHINE, active=True)
        page = chromium.new_page(viewport={"width": width, "height": 900})
        errors = console_errors(page)
        login(page, asgi_server, mailbox.user)
        page.goto(f"{asgi_server}/ask/")
        composer = page.locator("[data-testid=ask-input]")
        composer.fill(KEY_QUESTION)
        composer.press("Enter")
        badge = page.locator("[data-testid=ask-status]").last
        deadline = time.monotonic() + 60
        while "waiting for the model" not in badge.inner_text():
            assert time.monotonic() < deadline, badge.inner_text()
            GenerationTicket.objects.filter(pk=blocker.pk).update(heartbeat_at=timezone.now())
            page.wait_for_timeout(200)
        assert badge.inner_text() == "waiting for the model: 1 ahead"
        screenshot(page, f"ask-queue-waiting-{width}")
        assert horizontal_overflow(page) == 0
        blocker.delete()  # the request ahead finishes
        answer = page.locator("[data-testid=ask-answer]").last
        answer.wait_for(timeout=60_000)
        assert "11/05/2026" in answer.inner_text()
        screenshot(page, f"ask-queue-answered-{width}")
        assert llm.chat_requests()
        assert errors == []
