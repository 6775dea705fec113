"""A reply in Debian Chromium against the production web server: "Reply…" on a run's item opens the editor,
Send… shows the confirmation with the signature, Confirm and send delivers it through a real SMTP server
(aiosmtpd in this process) and lands on the conversation; the Drafts and SMTP settings pages; at 1280 and 390 px,
nothing scrolls sideways."""

from __future__ import annotations

from typing import Any

import pytest

from apps.accounts.actions import create_imap_account
from apps.accounts.models import Message
from apps.accounts.providers.base import RemoteMessage
from apps.accounts.store import store_remote_messages
from apps.orchestration import actions as orchestration_actions
from apps.workspaces import actions as workspace_actions
from tests.browser import console_errors, horizontal_overflow, login, screenshot
from tests.replies.conftest import original_raw

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS:UserWarning"),
]


def test_reply_editor_confirm_and_send_at_two_widths(
    asgi_server: str, chromium: Any, user: Any, smtp_server: Any
) -> None:
    account = create_imap_account(
        owner=user, name="work", address="owner@example.com", display_name="Owner Person", host="127.0.0.1",
        port=1, security="none", username="owner@example.com", password="imap-secret",
    )  # fmt: skip
    account.smtp_host, account.smtp_port, account.smtp_security = "127.0.0.1", smtp_server.port, "none"
    account.smtp_username, account.smtp_password = "owner@example.com", "smtp-secret-42"
    account.signature_text = "Owner Person\nExample Ltd"
    account.save()
    raw = original_raw(
        subject="Quarterly numbers for the board meeting next week, with the long appendix attached",
        to="Owner <owner@example.com>, Bob Averyveryverylongname <bob.averyveryverylongname@example.com>",
    )
    stored = store_remote_messages(account=account, messages=[RemoteMessage(provider_id="INBOX:1:1", raw=raw)])
    message = Message.objects.get(pk=stored.created_ids[0])
    director = orchestration_actions.create_director(owner=user, name="Triage")
    (run_id,) = orchestration_actions.create_runs(
        requests=[orchestration_actions.RunRequest(message_id=message.pk, director_id=director.pk)],
        fetch_cycle_id=None,
    )
    workspace = workspace_actions.open_workspace(
        owner=user, run_id=run_id, message_id=message.pk, director_id=director.pk, director_name="Triage",
        title=message.subject,
    )  # fmt: skip
    for text in ("Hi Alice,\n\nThe numbers are in the shared folder.", "Hi all,\n\nSee you on Monday."):
        workspace_actions.add_item(workspace=workspace, data=text, label="Suggested reply")

    for index, width in enumerate((1280, 390)):
        # Notifications already decided: the one-time notification prompt (a fixed bar) stays away.
        context = chromium.new_context(viewport={"width": width, "height": 900}, permissions=["notifications"])
        page = context.new_page()
        errors = console_errors(page)
        login(page, asgi_server, user)
        page.goto(f"{asgi_server}/runs/{run_id}/")
        page.locator("[data-testid=reply-item]").nth(index).click()
        page.wait_for_selector("#reply-form")
        assert horizontal_overflow(page) == 0, f"editor scrolls sideways at {width}px"
        screenshot(page, f"replies-editor-{width}")
        body = page.locator("textarea[name=body]")
        body.fill(body.input_value() + "\n\nBest wishes")
        page.click("[data-testid=send]")
        page.wait_for_selector("[data-testid=confirm-send]")
        preview = page.locator("[data-testid=confirm-body]").inner_text()
        assert "Best wishes" in preview and "Owner Person\nExample Ltd" in preview
        assert len(smtp_server.received) == index  # nothing sent by Send… alone
        assert horizontal_overflow(page) == 0, f"confirmation scrolls sideways at {width}px"
        screenshot(page, f"replies-confirm-{width}")
        page.click("[data-testid=confirm-send]")
        page.wait_for_url(f"{asgi_server}/mail/threads/**")
        assert "Reply sent to alice@example.com" in page.locator(".flash").inner_text()
        assert len(smtp_server.received) == index + 1
        page.goto(f"{asgi_server}/replies/")
        assert horizontal_overflow(page) == 0, f"drafts page scrolls sideways at {width}px"
        screenshot(page, f"replies-drafts-{width}")
        page.goto(f"{asgi_server}/replies/accounts/{account.pk}/smtp/")
        assert page.locator("[data-testid=smtp-password-stored]").is_visible()
        assert "smtp-secret-42" not in page.content()  # the password is write-only
        assert horizontal_overflow(page) == 0, f"SMTP settings scroll sideways at {width}px"
        screenshot(page, f"replies-smtp-{width}")
        assert errors == []
        context.close()
    assert Message.objects.filter(account=account, folder="").exclude(pk=message.pk).count() == 2
