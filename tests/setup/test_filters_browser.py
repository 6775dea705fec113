"""Settings → Filters in real Chromium against the production server, at 1280 and 390 px: a long description
without spaces stays inside the row, the dry run lists an email two directors would get once, and a pattern is
tried before saving on as many of the newest emails as chosen."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser import console_errors, horizontal_overflow, login, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG_DESCRIPTION = "invoices-from-" + "acme" * 60  # 254 characters, no space to wrap at

# Every element of the filters list whose right edge passes its row's (a clipped description still has a box
# wider than the row): the text must wrap inside the row instead.
PAST_THE_ROW = """() => [...document.querySelectorAll('[data-testid=filter-list] .sortable-item')].flatMap(row => {
  const right = row.getBoundingClientRect().right;
  return [...row.querySelectorAll('*')].filter(el => el.getBoundingClientRect().right > right + 1)
    .map(el => el.tagName + ': ' + el.textContent.slice(0, 40));
})"""


def test_long_descriptions_wrap_and_the_dry_run_lists_each_email_once(
    user: Any, director: Any, add_filter: Any, store_mail: Any, asgi_server: str, chromium: Any
) -> None:
    support, billing = director("Support"), director("Billing")
    add_filter(support, "subject", "Invoice", description=LONG_DESCRIPTION)
    add_filter(billing, "subject", "Invoice")
    store_mail(subject="Invoice 12", sender="billing@acme.example")
    store_mail(subject="Lunch?", sender="friend@example.com")
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    errors = console_errors(page)
    login(page, asgi_server, user)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{asgi_server}/settings/filters/")
        assert LONG_DESCRIPTION in page.locator("[data-testid=filter-list]").inner_text()
        assert page.evaluate(PAST_THE_ROW) == [], width
        page.click("[data-testid=test-form] button")
        page.wait_for_selector("[data-testid=test-summary]")
        assert page.locator("[data-testid=test-row]").count() == 1
        row = page.locator("[data-testid=test-row]").inner_text()
        assert "Invoice 12" in row and "Support" in row and "Billing" in row
        # An unsaved pattern, tried on as many of the newest emails as chosen in the form.
        form = page.locator("[data-testid=filter-form]")
        form.locator("select[name=field]").select_option("subject")
        form.locator("input[name=regex]").fill("invoice|lunch")
        form.locator("[data-testid=try-pattern-last]").fill("1")
        form.locator("[data-testid=try-pattern]").click()
        tried = form.locator(".pattern-try-results [data-testid=test-summary]")
        tried.wait_for()
        assert tried.inner_text().startswith("1 email checked, 1 matches this pattern (not saved yet)")
        screenshot(page, f"settings-filters-{width}")
        assert horizontal_overflow(page) == 0, width
    assert errors == []
