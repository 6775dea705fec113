"""Tags and saved searches in Chromium against the production server, at 1280 and 390 px: a user presses `l` on a
thread, tags it, finds it by tag: and in a saved search from the mailbox sidebar; nothing scrolls sideways;
screenshots under var/screenshots/."""

from __future__ import annotations

import io
from typing import Any

import pytest

from apps.accounts.demo_mailbox.importing import import_demo_mailbox
from apps.accounts.demo_mailbox.model import DEMO_ACCOUNT_NAME
from apps.accounts.models import MailAccount, Message, Thread
from apps.accounts.selectors import tags_by_message
from tests.accounts.test_thread_actions_browser import SIZES, settle
from tests.browser import console_errors, horizontal_overflow, login, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_tag_a_thread_find_it_and_save_the_search(asgi_server: str, chromium: Any, user: Any) -> None:
    import_demo_mailbox(owner=user, stdout=io.StringIO())
    account = MailAccount.objects.get(owner=user, name=DEMO_ACCOUNT_NAME)
    thread = Thread.objects.filter(account=account, message_count__gte=2).order_by("-message_count", "pk").first()
    assert thread is not None
    message_ids = list(Message.objects.filter(thread=thread).values_list("pk", flat=True))

    page = chromium.new_page(viewport=SIZES["desktop"])
    errors = console_errors(page)
    login(page, asgi_server, user)
    page.goto(f"{asgi_server}/mail/?account={account.pk}&folder=")
    if page.locator("#notify-prompt").count():
        page.click("#notify-prompt >> text=Not now")
        page.wait_for_function("() => document.getElementById('notify-prompt') === null")
    # The empty sidebar says what to do next.
    assert "press l to tag it" in page.inner_text("[data-testid=saved-searches]").replace("\n", " ")

    page.goto(f"{asgi_server}/mail/threads/{thread.pk}/")
    page.wait_for_selector("[data-testid=thread-tags]")
    page.locator("body").press("l")  # the keyboard shortcut focuses the tag field
    assert page.evaluate("document.activeElement.id") == "tag-input"
    page.keyboard.type("Project-Ü")
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-testid=tag-chip] >> text=Project-Ü")
    assert all(tags == ["Project-Ü"] for tags in tags_by_message(message_ids=message_ids).values())
    page.fill("[data-testid=tag-input]", "two words")
    page.click("[data-testid=tag-add]")
    page.wait_for_selector("[data-testid=tag-error]")
    page.fill("[data-testid=tag-input]", "later")
    page.click("[data-testid=tag-add]")
    page.wait_for_selector("[data-testid=tag-chip] >> text=later")
    page.click("[aria-label='Remove tag later']")
    page.wait_for_function("() => !document.querySelector('#thread-tags').textContent.includes('later')")

    # Found by tag: on the search page, and saved from there.
    page.click("[data-testid=tag-chip] >> text=Project-Ü")
    page.wait_for_selector("[data-testid=search-result]")
    found = {int(node.get_attribute("href").split("/threads/")[1].split("/")[0])
             for node in page.locator("[data-testid=search-result] a[href*='/threads/']").all()}  # fmt: skip
    assert found == {thread.pk}
    page.fill("#saved-search-name", "Project")
    page.click("[data-testid=save-search]")
    page.wait_for_selector("[data-testid=saved-search-current]")

    for size_name, viewport in SIZES.items():
        page.set_viewport_size(viewport)
        page.goto(f"{asgi_server}/mail/?account={account.pk}&folder=")
        page.wait_for_selector("[data-testid=saved-search]")
        row_tags = page.locator(f"[data-thread-id='{thread.pk}'] [data-testid=row-tag]").all_inner_texts()
        assert row_tags == ["Project-Ü"]
        saved = page.inner_text("[data-testid=saved-search]")
        assert "Project" in saved and str(len(message_ids)) in saved
        settle(page)
        assert horizontal_overflow(page) == 0, size_name
        screenshot(page, f"accounts/tags-mailbox-{size_name}")
        page.goto(f"{asgi_server}/mail/threads/{thread.pk}/")
        page.wait_for_selector("[data-testid=tag-chip]")
        settle(page)
        assert horizontal_overflow(page) == 0, size_name
        screenshot(page, f"accounts/tags-thread-{size_name}")

    page.goto(f"{asgi_server}/mail/?account={account.pk}&folder=")
    page.click("[data-testid=saved-search]")
    page.wait_for_selector("[data-testid=saved-search-current]")
    assert page.locator("[data-testid=search-result]").count() == 1
    assert errors == []
