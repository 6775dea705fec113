"""The thread page's actions and the account removal page in Chromium against the production server, at
1280 and 390 px: nothing scrolls sideways, screenshots under var/screenshots/ for people to look at."""

from __future__ import annotations

import contextlib
import io
from typing import Any

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from apps.accounts.demo_mailbox.importing import import_demo_mailbox
from apps.accounts.demo_mailbox.model import DEMO_ACCOUNT_NAME
from apps.accounts.models import MailAccount, Message, Thread
from apps.orchestration.models import Director
from tests.browser import horizontal_overflow, login, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}


def settle(page: Any) -> None:
    """Once, right after a 1280 → 390 resize, a measurement caught the page 346 px wide while it was still
    being laid out; a lasting overflow still fails the assertion after this wait."""
    with contextlib.suppress(PlaywrightTimeout):  # measured and reported by the caller's assertion
        page.wait_for_function(
            "() => document.documentElement.scrollWidth <= document.documentElement.clientWidth", timeout=3000
        )


def test_thread_actions_and_account_removal_at_both_widths(asgi_server: str, chromium: Any, user: Any) -> None:
    import_demo_mailbox(owner=user, stdout=io.StringIO())
    Director.objects.create(owner=user, name="Client support", description="Answers client mail")
    account = MailAccount.objects.get(owner=user, name=DEMO_ACCOUNT_NAME)
    thread = Thread.objects.filter(account=account, message_count__gte=2).order_by("-message_count", "pk").first()
    assert thread is not None
    Message.objects.filter(thread=thread).update(seen=False)
    total = Message.objects.filter(account=account).count()

    page = chromium.new_page(viewport=SIZES["desktop"])
    login(page, asgi_server, user)
    page.goto(f"{asgi_server}/mail/threads/{thread.pk}/")
    if page.locator("#notify-prompt").count():  # the browser-notification offer: answered once, like a user
        page.click("#notify-prompt >> text=Not now")
        page.wait_for_function("() => document.getElementById('notify-prompt') === null")
    for size_name, viewport in SIZES.items():
        page.set_viewport_size(viewport)
        page.goto(f"{asgi_server}/mail/threads/{thread.pk}/")
        page.wait_for_selector("[data-testid=thread-actions]")
        settle(page)
        assert horizontal_overflow(page) == 0, size_name
        screenshot(page, f"accounts/thread-actions-{size_name}")
        page.click("[data-testid=run-director-link]")
        page.wait_for_selector("[data-testid=director-choice]")
        assert "Client support" in page.inner_text("[data-testid=director-choices]")
        settle(page)
        assert horizontal_overflow(page) == 0, size_name
        screenshot(page, f"accounts/run-director-{size_name}")
        page.goto(f"{asgi_server}/mail/accounts/{account.pk}/remove/")
        page.wait_for_selector("[data-testid=removal-inventory]")
        assert page.get_attribute("[data-testid=removal-messages]", "data-count") == str(total)
        settle(page)
        assert horizontal_overflow(page) == 0, size_name
        screenshot(page, f"accounts/account-remove-{size_name}")
    assert not Message.objects.filter(thread=thread, seen=False).exists()  # opened: read

    page.goto(f"{asgi_server}/mail/threads/{thread.pk}/")
    page.click("[data-testid=ask-thread-link]")
    page.wait_for_selector("[data-testid=ask-about-thread]")
    assert page.input_value("[data-testid=ask-input]").startswith("About “")
    page.goto(f"{asgi_server}/mail/threads/{thread.pk}/")
    page.click("[data-testid=mark-unread]")
    page.wait_for_url(f"**/mail/?account={account.pk}")
    assert Message.objects.filter(thread=thread, seen=False).count() == thread.message_count

    page.goto(f"{asgi_server}/mail/accounts/{account.pk}/remove/")
    page.fill("#confirm-name", DEMO_ACCOUNT_NAME)
    page.click("[data-testid=remove-account]")
    page.wait_for_url(f"{asgi_server}/mail/accounts/")
    assert f"“{DEMO_ACCOUNT_NAME}” removed: {total} messages" in page.inner_text("body")
    assert not MailAccount.objects.filter(pk=account.pk).exists()
    page.close()
