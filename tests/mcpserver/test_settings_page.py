"""Settings → MCP tokens: create a mailbox token (shown once), the list with last use, revoke, the audit
ledger of calls; through the real views, and in Chromium at 1280 and 390 px."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from apps.accounts.actions import create_local_account
from apps.workspaces import actions as workspace_actions
from apps.workspaces.models import MailboxToken
from tests.browser import console_errors, horizontal_overflow, login, screenshot

TOKEN_RE = re.compile(r"mcpmb_[A-Za-z0-9_-]{40,}")


@pytest.mark.django_db
def test_create_shows_the_token_once_lists_revokes_and_shows_calls(logged_in_client: Any, user: Any) -> None:
    empty = logged_in_client.get("/settings/mcp/").content.decode()
    assert 'data-testid="no-tokens"' in empty and 'data-testid="no-calls"' in empty
    assert "/mcp/mailbox/" in empty

    refused = logged_in_client.post("/settings/mcp/", {"name": "", "scopes": []})
    assert refused.status_code == 400 and MailboxToken.objects.count() == 0

    account = create_local_account(owner=user, name="inbox", address="owner@example.com")
    made = logged_in_client.post(
        "/settings/mcp/",
        {"name": "Claude Desktop", "scopes": ["read", "draft"], "expires": "30", "account": str(account.pk)},
    )
    assert made.status_code == 200 and made["Cache-Control"] == "no-store"
    (raw,) = set(TOKEN_RE.findall(made.content.decode()))
    token = MailboxToken.objects.get()
    assert token.scopes == ["read", "draft"] and token.expires_at is not None and token.name == "Claude Desktop"
    assert token.account_id == account.pk
    assert workspace_actions.hash_token(raw) == token.token_hash

    workspace_actions.record_mcp_call(
        token_id=token.pk, owner_id=user.pk, tool="read_thread", argument_ids={"thread_id": 7}, ok=True,
        result_bytes=2048, duration_ms=12,
    )  # fmt: skip
    listed = logged_in_client.get("/settings/mcp/").content.decode()
    assert not TOKEN_RE.search(listed)  # shown only that once
    assert "inbox only" in listed
    assert "Claude Desktop" in listed and token.prefix in listed and "thread_id=7" in listed and "read_thread" in listed

    other = get_user_model().objects.create_user(username="other", email="o@example.com", password="x" * 20)
    theirs, _ = workspace_actions.issue_mailbox_token(owner=other, name="theirs", scopes="read")
    assert logged_in_client.post(f"/settings/mcp/{theirs.pk}/revoke/").status_code == 404
    assert logged_in_client.post(f"/settings/mcp/{token.pk}/revoke/").status_code == 302
    token.refresh_from_db()
    theirs.refresh_from_db()
    assert token.revoked_at is not None and theirs.revoked_at is None
    assert ">revoked<" in logged_in_client.get("/settings/mcp/").content.decode()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_page_in_chromium_at_1280_and_390(asgi_server: str, chromium: Any, user: Any) -> None:
    for width in (1280, 390):
        page = chromium.new_page(viewport={"width": width, "height": 900})
        errors = console_errors(page)
        login(page, asgi_server, user)
        page.goto(f"{asgi_server}/settings/")
        page.click(".settings-tabs >> text=MCP tokens")
        page.wait_for_selector("[data-testid=token-form]")
        page.fill("input[name=name]", f"Claude Desktop {width}")
        page.check("input[name=scopes][value=draft]")
        page.click("[data-testid=create-token]")
        page.wait_for_selector("[data-testid=new-token]")
        assert TOKEN_RE.fullmatch(page.locator("[data-testid=new-token]").inner_text().strip())
        token = MailboxToken.objects.get(name=f"Claude Desktop {width}")
        workspace_actions.record_mcp_call(
            token_id=token.pk, owner_id=user.pk, tool="search_mail", argument_ids={}, ok=False,
            error="429 Too Many Requests: this token may make 120 calls a minute; Retry-After: 12 seconds",
        )  # fmt: skip
        page.goto(f"{asgi_server}/settings/mcp/")
        page.wait_for_selector("[data-testid=call-row]")
        assert horizontal_overflow(page) == 0, width
        screenshot(page, f"mcp-tokens-{width}")
        page.click("[data-testid=token-row] >> nth=0 >> [data-testid=revoke]")
        page.wait_for_selector("text=is revoked")
        assert errors == []
        page.close()


def test_the_audit_ledger_keeps_its_retention_and_the_schedule_prunes_it(
    logged_in_client: Any, user: Any, settings: Any
) -> None:
    import datetime as dt

    from django.core.management import call_command
    from django.utils import timezone
    from django_q.models import Schedule

    from apps.workspaces.actions import issue_mailbox_token, record_mcp_call
    from apps.workspaces.apps import MCP_AUDIT_SCHEDULE_NAME
    from apps.workspaces.models import McpCall
    from apps.workspaces.tasks import prune_mcp_calls_task

    token, _ = issue_mailbox_token(owner=user, name="audit", scopes="read")
    old = record_mcp_call(token_id=token.pk, owner_id=user.pk, tool="search_mail", argument_ids={}, ok=True)
    edge = record_mcp_call(token_id=token.pk, owner_id=user.pk, tool="get_thread", argument_ids={}, ok=True)
    fresh = record_mcp_call(token_id=token.pk, owner_id=user.pk, tool="get_message", argument_ids={}, ok=True)
    now = timezone.now()
    McpCall.objects.filter(pk=old.pk).update(at=now - dt.timedelta(days=91))
    McpCall.objects.filter(pk=edge.pk).update(at=now - dt.timedelta(days=89))
    assert "Calls are kept for 90 days." in logged_in_client.get("/settings/mcp/").content.decode()
    assert prune_mcp_calls_task() == 1
    assert set(McpCall.objects.values_list("pk", flat=True)) == {edge.pk, fresh.pk}
    settings.MAILAGENT_MCP_AUDIT_DAYS = 0  # kept forever
    McpCall.objects.filter(pk=edge.pk).update(at=now - dt.timedelta(days=900))
    assert prune_mcp_calls_task() == 0 and McpCall.objects.count() == 2
    assert "Calls are kept for" not in logged_in_client.get("/settings/mcp/").content.decode()
    # The daily schedule exists after `migrate`, as the other maintenance schedules do.
    Schedule.objects.filter(name=MCP_AUDIT_SCHEDULE_NAME).delete()
    call_command("migrate", verbosity=0)
    schedule = Schedule.objects.get(name=MCP_AUDIT_SCHEDULE_NAME)
    assert (schedule.func, schedule.minutes) == ("apps.workspaces.tasks.prune_mcp_calls_task", 1440)
