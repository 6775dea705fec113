"""The Inbox page in Debian Chromium (Playwright) against the production web server: open the Inbox, open an
entry (its row dims), Delete deletes after the undo window, a doc edited through the REST API shows its new
text when reopened, and the pages look right at 1280 and 390 px."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from apps.workspaces import actions
from apps.workspaces.models import InboxEntry
from tests.browser import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"


@pytest.fixture
def browser(chromium: Any) -> Any:
    return chromium


def test_open_read_delete_with_undo_and_live_docs(asgi_server: str, browser: Any, user: Any) -> None:
    workspace = actions.create_user_workspace(owner=user, label="Research desk")
    item = actions.add_item(
        workspace=workspace, data="# Findings\n\nFirst version.", mime_type="text/markdown", path="reports/findings.md"
    )
    keep = actions.push_inbox_entry(
        workspace=workspace, docs=[{"path": "reports/findings.md"}], comments="Report *ready*."
    )
    doomed = actions.push_inbox_entry(workspace=workspace, comments="A status check-in you can delete.")

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    login(page, asgi_server, user)
    assert page.locator("[data-testid=inbox-unread]").inner_text() == "2"
    page.click("nav >> text=Inbox")
    page.wait_for_selector("[data-testid=inbox-row]")
    assert page.locator(".inbox-day").first.inner_text().lower() == "today"
    rows = page.locator("[data-testid=inbox-row]")
    assert rows.count() == 2 and page.locator(".inbox-row.is-unread").count() == 2

    # Open an entry: the doc renders, the row dims (read), the unread count drops.
    page.click(f"#row-{keep.pk} .inbox-row-link")
    page.wait_for_selector("[data-testid=doc-body] h1")
    assert page.locator("[data-testid=doc-body]").inner_text().startswith("Findings")
    assert page.locator("[data-testid=entry-label]").inner_text() == "Research desk"
    page.wait_for_selector(f"#row-{keep.pk}.is-read")
    opacity = page.evaluate(f"getComputedStyle(document.querySelector('#row-{keep.pk}')).opacity")
    assert float(opacity) == 1.0  # the selected row stands out; it dims once another is selected
    page.wait_for_function("() => document.querySelector('[data-testid=inbox-unread]').innerText.trim() === '1'")
    page.screenshot(path=str(SHOTS / "inbox-1280.png"), full_page=True)
    assert InboxEntry.objects.get(pk=keep.pk).read_at is not None

    # Select the other entry, press Delete: gone from the list at once, undo brings it back.
    page.click(f"#row-{doomed.pk} .inbox-row-link")
    page.wait_for_selector(f"[data-entry-id='{doomed.pk}'][data-testid=inbox-detail]")
    # A long undo window first (a busy CI machine must not let it pass before the click), then the default.
    page.evaluate("document.getElementById('inbox').dataset.undoMs = '60000'")
    page.keyboard.press("Delete")
    page.wait_for_selector(f"#row-{doomed.pk}", state="hidden")
    page.click("[data-testid=undo]")
    page.wait_for_selector(f"#row-{doomed.pk}", state="visible")
    assert InboxEntry.objects.filter(pk=doomed.pk).exists()
    # Delete again and let the undo window (5 s) pass: the entry is gone for good.
    page.evaluate("delete document.getElementById('inbox').dataset.undoMs")
    page.click(f"#row-{doomed.pk} .inbox-row-link")
    page.keyboard.press("Delete")
    page.wait_for_selector("#inbox-toast", state="visible")
    page.wait_for_selector("#inbox-toast", state="hidden", timeout=15000)
    page.wait_for_function(f"() => !document.getElementById('row-{doomed.pk}')")
    assert not InboxEntry.objects.filter(pk=doomed.pk).exists()

    # The doc is a pointer: edit it through the REST API, reopen, see the new text.
    response = page.request.put(
        f"{asgi_server}/api/workspaces/{workspace.pk}/items/{item.pk}",
        data=json.dumps({"patch": {"data": "# Findings\n\nSecond version, edited."}}),
        headers={
            "content-type": "application/json",
            "X-CSRFToken": page.evaluate("document.getElementById('inbox').dataset.csrf"),
        },
    )
    assert response.status == 200, response.text()
    page.goto(f"{asgi_server}/inbox/")
    page.click(f"#row-{keep.pk} .inbox-row-link")
    page.wait_for_selector("text=Second version, edited.")
    # And a deleted doc says so instead of failing.
    actions.remove_item(item_id=item.pk, workspace=workspace, hard=False, actor={})
    page.reload()
    page.click(f"#row-{keep.pk} .inbox-row-link")
    page.wait_for_selector("[data-testid=doc-gone]")
    assert page.locator("[data-testid=doc-gone]").inner_text() == "No longer in the workspace."

    # Phone width: the sidebar stacks above the detail.
    phone = browser.new_page(viewport={"width": 390, "height": 844})
    login(phone, asgi_server, user)
    phone.goto(f"{asgi_server}/inbox/?entry={keep.pk}")
    sidebar, detail = phone.locator("#inbox-sidebar").bounding_box(), phone.locator("#inbox-detail").bounding_box()
    assert detail["y"] >= sidebar["y"] + sidebar["height"] - 1 and detail["width"] <= 390
    phone.screenshot(path=str(SHOTS / "inbox-390.png"), full_page=True)


def test_empty_inbox_and_workspace_token_pages(asgi_server: str, browser: Any, user: Any) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    login(page, asgi_server, user)
    page.goto(f"{asgi_server}/inbox/")
    assert "Nothing here yet" in page.locator("[data-testid=inbox-empty]").inner_text()
    page.click("text=Workspaces & MCP")
    page.fill("#ws-label", "Claude Desktop")
    page.click("text=Create workspace")
    page.fill("#token-name", "laptop")
    page.click("[data-testid=create-token]")
    token = page.locator("[data-testid=new-token]").inner_text().strip()
    assert token.startswith("mcpws_")
    assert page.locator("[data-testid=mcp-url]").inner_text().startswith(f"{asgi_server}/mcp/")
    page.screenshot(path=str(SHOTS / "workspace-1280.png"), full_page=True)
    phone = browser.new_page(viewport={"width": 390, "height": 844})
    login(phone, asgi_server, user)
    phone.goto(page.url.replace("/tokens/", "/"))
    phone.screenshot(path=str(SHOTS / "workspace-390.png"), full_page=True)
    assert token not in phone.content() and token[:12] in phone.content()  # shown once; the prefix stays
