"""Write-back in Chromium, through the production web server and a real worker: flag and archive a
conversation, see the server changes, and find them in Dovecot."""

from __future__ import annotations

from typing import Any

import pytest

from apps.accounts.models import Message
from tests.accounts.test_imap_mirror import connect, mail, synced
from tests.browser import console_errors, horizontal_overflow, login, screenshot
from tests.fakes.dovecot import Mailbox, wait_until
from tests.services import qcluster

pytestmark = [pytest.mark.browser, pytest.mark.services]


def on_server(box: Mailbox, message_id: str) -> dict[str, tuple[bool, bool]]:
    return {
        folder: (seen, flagged)
        for folder, rows in box.doveadm_state().items()
        for mid, seen, flagged in rows
        if mid == message_id
    }


def test_flag_and_archive_from_the_conversation_page(
    asgi_server: str, browser_page: Any, imap_mailbox: Mailbox, user: Any
) -> None:
    box = imap_mailbox
    box.append("INBOX", mail(1, body="Please archive me.\n"))
    box.append("INBOX", mail(2))
    account = connect(box, user)
    synced(account)
    thread_id = Message.objects.get(message_id="m1@mirror.test").thread_id
    page = browser_page
    errors = console_errors(page)
    with qcluster():
        login(page, asgi_server, user)
        for width in (1280, 390):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(f"{asgi_server}/mail/threads/{thread_id}/?folder=INBOX")
            assert horizontal_overflow(page) == 0
        assert wait_until(lambda: on_server(box, "m1@mirror.test") == {"INBOX": (True, False)}, timeout=60)

        page.set_viewport_size({"width": 1280, "height": 900})
        page.click("[data-testid=flag]")
        page.wait_for_selector("[data-testid=unflag]")
        assert wait_until(lambda: on_server(box, "m1@mirror.test") == {"INBOX": (True, True)}, timeout=60)
        page.reload()
        assert page.locator("[data-testid=server-change][data-status=done]").count() == 2
        screenshot(page, "writeback-thread-1280")
        page.set_viewport_size({"width": 390, "height": 900})
        assert horizontal_overflow(page) == 0
        screenshot(page, "writeback-thread-390")

        page.set_viewport_size({"width": 1280, "height": 900})
        page.click("[data-testid=archive]")
        page.wait_for_url(f"{asgi_server}/mail/?account={account.pk}&folder=INBOX")
        assert wait_until(lambda: on_server(box, "m1@mirror.test") == {"Archive": (True, True)}, timeout=60)
        # The worker's sync after the move shows it in Archive here too, without downloading it again.
        assert wait_until(
            lambda: Message.objects.filter(message_id="m1@mirror.test", folder="Archive").exists(), timeout=60
        )
        page.goto(f"{asgi_server}/mail/?account={account.pk}&folder=INBOX")
        assert "Message 1" not in page.inner_text("main")
        assert "Message 2" in page.inner_text("main")
    assert errors == []
