"""The More menu with approvals waiting, in Chromium: the count shows on More, on the phone's Menu button and
on Approvals, the bar keeps one row at laptop widths and the phone menu does not scroll sideways."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser import console_errors, horizontal_overflow, login, screenshot
from tests.setup.test_newcomer_trial import TOPBAR_ROWS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def waiting(user: Any) -> Any:
    from apps.accounts.actions import create_local_account
    from apps.orchestration.models import Approval

    account = create_local_account(owner=user, name="inbox", address="owner@example.com")
    for n in range(12):
        Approval.objects.create(owner=user, account=account, summary=f"Send reply {n}", request={})
    return user


def test_the_count_on_more_and_approvals_at_1024_1280_and_390(waiting: Any, asgi_server: str, browser_page: Any):
    page = browser_page
    errors = console_errors(page)
    login(page, asgi_server, waiting)
    for width in (1024, 1280):
        page.set_viewport_size({"width": width, "height": 800})
        page.goto(f"{asgi_server}/")
        assert page.locator("[data-testid=more-approvals]").inner_text() == "12"
        assert page.evaluate(TOPBAR_ROWS)["rows"] == 1, width
        page.click(".nav-more-toggle")
        approvals = page.locator(".nav-more-list a[href='/runs/approvals/']")
        assert approvals.is_visible() and "12" in approvals.inner_text()
        screenshot(page, f"nav-approvals-{width}")
        assert horizontal_overflow(page) == 0, width
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(f"{asgi_server}/")
    # On a phone the Menu button carries the count, so what waits is seen before the menu is opened.
    menu_count = page.locator(".nav-toggle [data-testid=menu-approvals]")
    assert menu_count.is_visible() and menu_count.inner_text() == "12"
    screenshot(page, "nav-approvals-menu-closed-390")
    page.click(".nav-toggle")
    screenshot(page, "nav-approvals-390")
    assert horizontal_overflow(page) == 0
    page.click(".nav-more-list a[href='/runs/approvals/'], a[href='/runs/approvals/']")
    page.wait_for_url(f"{asgi_server}/runs/approvals/")
    assert errors == []
