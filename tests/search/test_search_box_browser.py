"""The search box in real Chromium: typing searches (debounced, htmx) and shows highlighted snippets; the
search page with an operator query, its help and its count at 1280 and 390 px, nothing scrolling sideways."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser import horizontal_overflow, screenshot
from tests.conftest import USER_PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def indexed_mail(make_message: Any, index_all: Any) -> None:
    # Before the browser starts: Playwright's sync API runs an event loop, where the ORM refuses to work.
    make_message("Turbine maintenance invoice", "The turbine overhaul is invoiced at 12,000 USD.")
    make_message("Lunch", "Sandwiches at noon.")
    make_message(
        "Quarterly generator maintenance schedule with a deliberately long subject line that has to wrap on a phone",
        "Overhaul of generator 7: https://example.com/a/very/long/link/without/any/break/points/at/all/0123456789abcdef",
        sender=("Lena Hoffmann", "lena.hoffmann@nordlicht-retail.example"),
    )
    index_all(embeddings=False)


@pytest.fixture
def server_with_mail(indexed_mail: None, asgi_server: str) -> str:
    return asgi_server


@pytest.fixture
def search_session(server_with_mail: str, browser_page: Any) -> tuple[str, Any]:
    return server_with_mail, browser_page


def test_typing_in_the_search_box_shows_highlighted_results(user: Any, search_session: tuple[str, Any]) -> None:
    asgi_server, page = search_session
    page.goto(f"{asgi_server}/accounts/login/?next=/search/")
    page.fill("input[name=login]", user.email)
    page.fill("input[name=password]", USER_PASSWORD)
    page.click("form button[type=submit]")
    page.wait_for_url(f"{asgi_server}/search/")
    page.select_option("select[name=mode]", "keyword")
    page.locator("[data-testid=search-input]").press_sequentially("turb", delay=40)
    result = page.locator("[data-testid=search-result]")
    result.first.wait_for(timeout=10_000)
    assert result.count() == 1
    assert "Turbine maintenance invoice" in result.first.inner_text()
    assert page.locator("[data-testid=search-result] mark").first.inner_text().lower().startswith("turb")
    assert "/search/" in page.url  # the page itself did not navigate
    # The search page with operators: help on the page, the count, the row; nothing scrolls sideways.
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{asgi_server}/search/?q=from%3Alena+overhaul&mode=keyword")
        help_panel = page.locator("[data-testid=search-help]")
        assert help_panel.is_visible() and "is:unread" in help_panel.inner_text()
        assert page.locator("[data-testid=search-count]").inner_text().startswith("1 match")
        assert page.locator("[data-testid=search-result]").count() == 1
        screenshot(page, f"search-operators-{width}")
        assert horizontal_overflow(page) == 0, width
