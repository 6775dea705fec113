"""The Ask settings page in real Chromium against the production server: pick a model, save, "Test
connection" against the scripted OpenAI-compatible server; both widths, nothing scrolls sideways."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from apps.llm.actions import create_api_config
from tests.browser import horizontal_overflow, login, screenshot
from tests.conftest import USER_PASSWORD
from tests.fakes.openai_server import FakeOpenAI, Reply

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI(default=Reply.text("OK"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def owner(transactional_db: Any, fake: FakeOpenAI) -> Any:
    user = get_user_model().objects.create_user(username="asker", email="asker@example.com", password=USER_PASSWORD)
    create_api_config(owner=user, name="Local fake", base_url=fake.base_url, api_key="sk-browser", model="fake-model")
    return user


def test_pick_and_test_the_ask_model(owner: Any, asgi_server: str, chromium: Any) -> None:
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    login(page, asgi_server, owner)
    page.goto(f"{asgi_server}/ask/")
    assert "No language model" in page.locator("[data-testid=ask-model]").inner_text()
    page.click("[data-testid=ask-settings-link]")
    page.wait_for_url(f"{asgi_server}/ask/settings/")
    page.select_option("#ask-api-config", label="Local fake (fake-model)")
    page.click("[data-testid=ask-test-connection]")  # the choice is tested before it is saved
    page.locator("[data-testid=probe-result]").filter(has_text="Connection works").wait_for(timeout=20_000)
    screenshot(page, "ask-settings-unsaved-test-1280")
    assert horizontal_overflow(page) == 0
    page.click("[data-testid=ask-model-form] button[type=submit]")
    page.wait_for_url(f"{asgi_server}/ask/settings/?saved=1")
    assert "Local fake (fake-model)" in page.locator("[data-testid=ask-model-in-use]").inner_text()
    page.click("[data-testid=ask-test-connection]")
    result = page.locator("[data-testid=probe-result]")
    result.wait_for(timeout=20_000)
    assert "Connection works" in result.inner_text()
    screenshot(page, "ask-settings-1280")
    assert horizontal_overflow(page) == 0
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "ask-settings-390")
    assert horizontal_overflow(page) == 0
    page.goto(f"{asgi_server}/ask/")
    assert "Model: Local fake (fake-model)." in page.locator("[data-testid=ask-model]").inner_text()
    screenshot(page, "ask-panel-model-390")
    assert horizontal_overflow(page) == 0
