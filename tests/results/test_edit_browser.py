"""Editing and adding workspace items in Results, in Debian Chromium against the production web server: open
an item, edit its text, save (a new revision shows), meet a conflict when an agent saved meanwhile, then add
a written item to the run. Screenshots at 1280 and 390 px; no sideways scroll, no console errors."""

from __future__ import annotations

from typing import Any

import pytest

from apps.orchestration.models import Director
from apps.workspaces.actions import update_item
from apps.workspaces.models import WorkspaceItem
from tests.browser import console_errors, horizontal_overflow, login, screenshot
from tests.results.conftest import make_run, store_message

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("width", [1280, 390])
def test_edit_an_item_meet_a_conflict_and_add_one(asgi_server: str, chromium: Any, user: Any, width: int) -> None:
    result = make_run(
        user,
        message=store_message(user, subject="Quote for the new office"),
        director=Director.objects.create(owner=user, name="Assistant"),
        items=[{"label": "Reply draft", "mime_type": "text/markdown", "data": "Dear Ann,\n\nthanks for the quote."}],
    )
    item = result.items[0]
    context = chromium.new_context(viewport={"width": width, "height": 900})
    try:
        page = context.new_page()
        errors = console_errors(page)
        login(page, asgi_server, user)
        page.goto(f"{asgi_server}/results/?node=item-{item.pk}")
        page.click("[data-testid=edit-item]")
        editor = page.locator("[data-testid=item-edit-form] textarea[name=data]")
        editor.fill("Dear Ann,\n\nthanks, we accept the quote.")
        screenshot(page, f"results-edit-{width}")
        assert horizontal_overflow(page) == 0
        page.click("[data-testid=item-save]")
        page.locator("[data-testid=item-pane]").wait_for()
        assert "revision 2" in page.locator("[data-testid=item-pane]").inner_text()
        assert "we accept the quote" in page.locator("[data-testid=item-pane]").inner_text()

        # An agent saves while the form is open: saving shows both texts and overwrites nothing.
        page.click("[data-testid=edit-item]")
        page.locator("[data-testid=item-edit-form] textarea[name=data]").fill("my second thought")
        update_item(
            item_id=item.pk, workspace=item.workspace, patch={"data": "agent text"}, expected_revision=2, actor={}
        )
        page.click("[data-testid=item-save]")
        conflict = page.locator("[data-testid=edit-conflict]")
        conflict.wait_for()
        assert "agent text" in conflict.inner_text()
        assert page.locator("[data-testid=item-edit-form] textarea[name=data]").input_value() == "my second thought"
        screenshot(page, f"results-conflict-{width}")
        assert horizontal_overflow(page) == 0
        item.refresh_from_db()
        assert item.data == "agent text"

        # Add a written item to the run.
        page.goto(f"{asgi_server}/results/?node=run-{result.run.pk}")
        page.click("[data-testid=add-item]")
        form = page.locator("[data-testid=item-add-form]")
        form.locator("input[name=label]").fill("Call notes")
        form.locator("textarea[name=data]").fill("- Ann prefers Tuesday")
        screenshot(page, f"results-add-{width}")
        assert horizontal_overflow(page) == 0
        page.click("[data-testid=item-add-save]")
        page.locator("[data-testid=item-pane]").wait_for()
        assert "Call notes" in page.locator("[data-testid=item-pane] h2").inner_text()
        page.locator(".rtree-link", has_text="Call notes").first.wait_for()  # the tree refreshed
        assert WorkspaceItem.objects.filter(workspace__run_id=result.run.pk, label="Call notes").exists()
        # The conflict answers 409 on purpose (Chromium logs every 4xx answer); nothing else may fail.
        assert [e for e in errors if "status of 409" not in e] == []
    finally:
        context.close()
