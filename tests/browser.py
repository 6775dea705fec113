"""One way for tests to drive Debian Chromium through Playwright: launch it, log a user in, take a screenshot.

Browser tests use the `chromium` fixture (tests/conftest.py) with the `asgi_server` fixture (the production web
server in a subprocess); they are marked `browser`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.conftest import USER_PASSWORD
from tests.services import find_executable, missing_service

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    # A container's /dev/shm is often 64 MB; two suites running side by side (make test) can exhaust it and the
    # renderer dies mid-navigation ("Target page, context or browser has been closed"). Use /tmp instead.
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = Path(__file__).resolve().parents[1] / "var" / "screenshots"


@contextmanager
def launch_chromium() -> Iterator[Any]:
    """A headless Debian Chromium (never a downloaded browser); skips, or fails in CI, when it is missing."""
    executable = find_executable("chromium")
    if executable is None:
        missing_service("Debian chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def login(page: Any, base: str, user: Any, password: str = USER_PASSWORD) -> None:
    """Sign in through the real allauth form and wait for the home page."""
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=login]", user.email)
    page.fill("input[name=password]", password)
    page.click("form button[type=submit]")
    page.wait_for_url(f"{base}/")


def screenshot(page: Any, name: str) -> Path:
    """Save a full-page screenshot under var/screenshots/ (not committed) for a human to look at."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    target = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(target), full_page=True)
    return target


def horizontal_overflow(page: Any) -> int:
    """How many CSS pixels the page scrolls sideways (0 when nothing is wider than the viewport)."""
    return int(page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth"))


def console_errors(page: Any) -> list[str]:
    """A list that fills with the text of every console error the page logs from now on (CSP refusals,
    uncaught exceptions, failed loads): tests assert it stays empty."""
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    return errors
