"""/api/docs in Chromium with every non-loopback request blocked: Swagger UI comes from the app's own static files."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

import pytest

from tests.conftest import USER_PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_api_docs_render_with_the_network_blocked(asgi_server: str, user: Any) -> None:
    from playwright.sync_api import Route, sync_playwright

    from tests.browser import CHROMIUM_ARGS
    from tests.services import find_executable, missing_service

    executable = find_executable("chromium")
    if executable is None:
        missing_service("Debian chromium is not installed (apt-get install chromium)")
    blocked: list[str] = []
    problems: list[str] = []

    def only_loopback(route: Route) -> None:
        host = urlparse(route.request.url).hostname or ""
        if host in {"127.0.0.1", "localhost"}:
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort("internetdisconnected")

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context()
            context.route("**/*", only_loopback)
            page = context.new_page()
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.goto(f"{asgi_server}/accounts/login/")
            page.fill("input[name=login]", user.email)
            page.fill("input[name=password]", USER_PASSWORD)
            page.click("form button[type=submit]")
            page.wait_for_url(f"{asgi_server}/")
            page.goto(f"{asgi_server}/api/docs")
            # Swagger UI built the page from /api/openapi.json: the title and operations are there.
            page.wait_for_selector(".swagger-ui .opblock", timeout=30000)
            assert page.locator(".swagger-ui .opblock").count() > 5
            assert page.locator(".swagger-ui .info .title").inner_text().strip()
        finally:
            browser.close()
    assert blocked == []  # nothing was even attempted outside loopback
    assert problems == []
