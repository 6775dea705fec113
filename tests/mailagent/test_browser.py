"""Real Chromium (Debian's, via Playwright) logs in through the form and lands on the home page."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import USER_PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_login_through_the_form_lands_on_home(user: Any, asgi_server: str, browser_page: Any) -> None:
    page = browser_page
    page.goto(f"{asgi_server}/")
    assert "/accounts/login/" in page.url
    page.fill("input[name=login]", user.email)
    page.fill("input[name=password]", USER_PASSWORD)
    page.click("form button[type=submit]")
    page.wait_for_url(f"{asgi_server}/")
    assert page.locator("h1").inner_text().startswith("Welcome")
    assert page.locator("[data-testid=current-user]").inner_text() == user.email
    # htmx 2 is served from django-htmx's static files
    assert page.evaluate("typeof htmx !== 'undefined' && htmx.version.startsWith('2')")


def test_wrong_password_stays_on_the_form(user: Any, asgi_server: str, browser_page: Any) -> None:
    page = browser_page
    page.goto(f"{asgi_server}/accounts/login/")
    page.fill("input[name=login]", user.email)
    page.fill("input[name=password]", "not the password")
    page.click("form button[type=submit]")
    page.wait_for_load_state()
    assert "/accounts/login/" in page.url
    assert "not correct" in page.content()
