"""The Results page in Debian Chromium against the production web server, with a real `manage.py qcluster`
worker on the ORM broker (no Redis: the push stays in the worker's process, so the page learns of the run by
polling): the tree is driven from the keyboard, a text item is copied to the clipboard, a run completing in
the worker raises the browser notification "Processing complete: <subject> — <director>", the tree shows the
new email without a reload, and clicking the notification opens the run. Screenshots at 1280 and 390 px."""

from __future__ import annotations

from typing import Any

import pytest
from django_q.conf import Conf

from apps.llm.models import ApiConfig
from apps.orchestration.actions import RunRequest, create_runs
from apps.orchestration.models import Director, Run, RunStatus
from apps.results.actions import delete_items
from apps.workspaces.models import WorkspaceItem
from tests.browser import console_errors, horizontal_overflow, login, screenshot
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.results.conftest import make_run, store_message
from tests.services import qcluster

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Every `new Notification(...)` the page makes is recorded (the real constructor still runs), so the test can
# see what the user would see and click it.
RECORD_NOTIFICATIONS = """
(() => {
  const Original = window.Notification;
  window.__notifications = [];
  window.Notification = class extends Original {
    constructor(title, options) {
      super(title, options);
      window.__notifications.push({ title, options, instance: this });
    }
  };
})();
"""
COPIED = "Dear client,\n\nThe invoice is paid.\n"


def test_tree_copy_and_a_worker_run_raises_a_notification(
    asgi_server: str, chromium: Any, user: Any, monkeypatch: Any
) -> None:
    earlier = make_run(
        user,
        message=store_message(user, subject="Invoice 17 paid"),
        director=Director.objects.create(owner=user, name="Bookkeeping"),
        items=[{"label": "Reply draft", "mime_type": "text/markdown", "data": COPIED}],
    )
    with qcluster():
        llm = FakeOpenAI()
        with llm:
            llm.script(
                Reply.calls(
                    (
                        "workspace_add_item",
                        {"label": "Summary", "mimeType": "text/markdown", "data": "The client asks for a refund."},
                    )
                ),
                Reply.text("Summarised."),
            )
            config = ApiConfig.objects.create(
                owner=user, name="fake", base_url=llm.base_url, api_key="sk-fake", model="fake", timeout_seconds=10
            )
            director = Director.objects.create(owner=user, name="Client Manager", api_config=config, step_limit=4)
            incoming = store_message(user, subject="Refund request")

            context = chromium.new_context(viewport={"width": 1280, "height": 900})
            context.grant_permissions(["notifications", "clipboard-read", "clipboard-write"])
            context.add_init_script(RECORD_NOTIFICATIONS)
            page = context.new_page()
            errors = console_errors(page)
            login(page, asgi_server, user)
            page.goto(f"{asgi_server}/results/")
            page.wait_for_selector("[data-testid=results-tree]")
            # The notifications client has read its cursor before the run exists.
            page.wait_for_function("() => localStorage.getItem('mailagent.notify.cursor') !== null")

            # Keyboard: focus the first email, ↓ to its director, ↓ to its item, Enter opens the item. A refresh
            # of the tree between the key presses (the live update) keeps the focused node and the ticked boxes.
            focused_node = "document.activeElement.closest('[role=treeitem]')?.dataset.node ?? null"
            page.locator(".rtree-link").first.focus()
            page.keyboard.press("ArrowDown")
            assert page.evaluate(focused_node) == f"run-{earlier.run.pk}"
            page.check(f"[data-node=email-{earlier.message.pk}] > .rtree-row input[type=checkbox]")
            page.focus(f"[data-node=run-{earlier.run.pk}] > .rtree-row .rtree-link")
            page.evaluate(
                "() => { document.querySelector('#results-tree ul.rtree').dataset.stale = '1';"
                " window.htmx.trigger(document.body, 'results-changed'); }"
            )
            page.wait_for_function("() => !document.querySelector('#results-tree ul.rtree[data-stale]')")
            assert page.evaluate(focused_node) == f"run-{earlier.run.pk}"
            assert page.is_checked(f"[data-node=email-{earlier.message.pk}] > .rtree-row input[type=checkbox]")
            page.uncheck(f"[data-node=email-{earlier.message.pk}] > .rtree-row input[type=checkbox]")
            page.focus(f"[data-node=run-{earlier.run.pk}] > .rtree-row .rtree-link")
            page.keyboard.press("ArrowDown")
            assert page.evaluate(focused_node) == f"item-{earlier.items[0].pk}"
            page.keyboard.press("Enter")
            page.wait_for_selector("[data-testid=item-pane]")
            page.click("[data-testid=item-pane] [data-testid=copy-item]")
            page.wait_for_function(
                # A function, not an expression string: Playwright polls an expression with eval, which the CSP refuses.
                "() => document.querySelector('[data-testid=item-pane] .copy-button').textContent === 'Copied'"
            )
            assert page.evaluate("navigator.clipboard.readText()") == COPIED
            page.focus(f"[data-node=item-{earlier.items[0].pk}] > .rtree-row .rtree-link")
            page.keyboard.press("ArrowLeft")  # the item's parent, the director
            assert page.evaluate("document.activeElement.closest('[role=treeitem]').dataset.node") == (
                f"run-{earlier.run.pk}"
            )

            # The original email is collapsed until its header button opens it.
            page.click(f"[data-node=email-{earlier.message.pk}] > .rtree-row .rtree-link")
            page.wait_for_selector("[data-testid=email-pane]")
            assert not page.is_visible(".original-email")
            page.click("[data-testid=toggle-original]")
            assert page.is_visible(".original-email")

            # Routing's call (create_runs → on commit → the broker), with this process no longer running tasks
            # synchronously: the run completes in the worker process and the page learns of it by polling.
            monkeypatch.setattr(Conf, "SYNC", False)
            create_runs(requests=[RunRequest(message_id=incoming.pk, director_id=director.pk)], fetch_cycle_id=None)
            page.wait_for_function("() => window.__notifications.length > 0", timeout=60_000)
            run = Run.objects.get(message=incoming, director=director)
            assert run.status == RunStatus.COMPLETED, run.error
            notes = page.evaluate("window.__notifications.map(n => [n.title, n.options.tag])")
            assert notes == [["Processing complete: Refund request — Client Manager", notes[0][1]]]
            assert notes[0][1].startswith(f"run:{run.pk}:completed:")
            # Live: the new email is in the tree without a reload.
            page.wait_for_selector(f"[data-node=run-{run.pk}]")

            screenshot(page, "results-1280")
            assert horizontal_overflow(page) == 0

            page.evaluate("window.__notifications[0].instance.dispatchEvent(new Event('click'))")
            page.wait_for_selector(f"[data-testid=run-pane][data-node=run-{run.pk}]")
            assert page.get_attribute(f"[role=treeitem][data-node=run-{run.pk}]", "aria-selected") == "true"
            chips = page.locator("[data-testid=run-pane] .tool-chip > summary").all_inner_texts()
            assert chips[0] == "System prompt" and "workspace_add_item" in [chip.strip() for chip in chips]
            assert page.url.endswith(f"/results/?node=run-{run.pk}")
            assert errors == []
            context.close()

            # Narrow, and a browser that was never asked: the one-time prompt, answered "Not now", stays away.
            narrow = chromium.new_context(viewport={"width": 390, "height": 844})
            phone = narrow.new_page()
            login(phone, asgi_server, user)
            phone.goto(f"{asgi_server}/results/?node=run-{run.pk}")
            phone.wait_for_selector("#notify-prompt")
            screenshot(phone, "results-390")
            assert horizontal_overflow(phone) == 0
            phone.click("#notify-prompt >> text=Not now")
            phone.wait_for_function("() => document.getElementById('notify-prompt') === null")
            phone.reload()
            phone.wait_for_selector("[data-testid=results-tree]")
            phone.wait_for_function("() => localStorage.getItem('mailagent.notify.cursor') !== null")
            assert phone.locator("#notify-prompt").count() == 0
            # Dismissed, the settings line still offers the browser's permission dialog, in words that do not
            # contradict "notifications are on".
            slot = phone.locator("[data-notification-permission]")
            assert "has not been given permission" in slot.inner_text()
            slot.get_by_role("button", name="Allow in this browser").scroll_into_view_if_needed()
            screenshot(phone, "results-390-permission")
            # Deleted items: a soft-deleted draft is listed with Restore, and restoring it brings it back.
            delete_items(user=user, item_ids=[earlier.items[0].pk], hard=False)
            phone.goto(f"{asgi_server}/results/?show=deleted")
            phone.wait_for_selector(f"[data-node=item-{earlier.items[0].pk}] [data-testid=restore-item]")
            screenshot(phone, "results-deleted-390")
            assert horizontal_overflow(phone) == 0
            phone.click(f"[data-node=item-{earlier.items[0].pk}] [data-testid=restore-item]")
            phone.wait_for_selector("[data-testid=restored]:has-text('Restored 1 item')")
            phone.wait_for_selector("[data-testid=tree-empty]")  # the list of deleted items refreshed itself
            assert WorkspaceItem.objects.filter(pk=earlier.items[0].pk, deleted=False).exists()
            narrow.close()
