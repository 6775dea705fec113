"""The Diagnostics page in Chromium against the production server: keyboard navigation (j/k, Enter, arrows,
Delete with its confirmation), the splitter (dragged, remembered), Grouped/Flat, at 1280 and 390 px without
sideways scrolling or console errors."""

from __future__ import annotations

from typing import Any

import pytest

from apps.orchestration.models import OrchLog, Run, RunStatus
from tests.browser import console_errors, horizontal_overflow, login, screenshot
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.orchestration.conftest import is_agent, is_director

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def selected(page: Any) -> str:
    return str(page.eval_on_selector('#diag-list a.diag-link[aria-current="true"]', "a => a.dataset.node"))


def shown_node(page: Any) -> str:
    return str(page.eval_on_selector("#diagnostics-detail [data-node]", "el => el.dataset.node"))


def test_diagnostics_keyboard_splitter_and_delete_at_two_widths(
    asgi_server: str, chromium: Any, user: Any, client_manager: Any, store_mail: Any, fake_llm: FakeOpenAI
) -> None:
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    fake_llm.when(
        is_agent("Psychologist"),
        Reply.calls(("memory_add", {"scope": "shared", "content": "Client One is upset <b>now</b>", "tags": ["mood"]})),
        Reply.text("The client is upset."),
    )
    fake_llm.when(is_director, Reply.calls(("agent__psychologist", {"input": "Mood?"})), Reply.text("All done."))
    run = Run.objects.get(message=store_mail(subject="Complaint about invoice 42", sender="client1@domain.com"))
    assert run.status == RunStatus.COMPLETED, run.error
    entries = list(OrchLog.objects.filter(run=run).order_by("timestamp", "pk"))

    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    errors = console_errors(page)
    page.on("dialog", lambda dialog: dialog.accept())
    login(page, asgi_server, user)
    page.goto(f"{asgi_server}/runs/diagnostics/")
    page.locator("[data-testid=diagnostics-tree]").wait_for()

    # j: the first link (the fetch cycle), j again: the director thread; each loads its detail.
    page.keyboard.press("j")
    page.wait_for_function("() => document.querySelector('#diagnostics-detail [data-node^=\"cycle:\"]')")
    page.keyboard.press("j")
    page.wait_for_function("() => document.querySelector('#diagnostics-detail [data-node^=\"dir:\"]')")
    director_node = selected(page)
    assert director_node.startswith("dir:") and shown_node(page) == director_node
    assert "Model calls" in page.inner_text("#diagnostics-detail")
    screenshot(page, "diagnostics-thread-1280")
    # Enter opens the thread (its entries become reachable) and moves the focus to the detail.
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.activeElement && document.activeElement.id === 'diag-detail-title'")
    page.keyboard.press("j")
    page.wait_for_function(f"() => document.querySelector('#diagnostics-detail [data-node=\"log:{entries[0].pk}\"]')")
    assert selected(page) == f"log:{entries[0].pk}"
    page.keyboard.press("ArrowDown")  # the focus is on the selected link now: arrows move too
    page.wait_for_function("() => document.querySelector('#diagnostics-detail [data-node^=\"agent:\"]')")
    page.keyboard.press("ArrowUp")
    page.wait_for_function(f"() => document.querySelector('#diagnostics-detail [data-node=\"log:{entries[0].pk}\"]')")
    assert f"id=log:{entries[0].pk}" in page.url  # the address follows the selection: linkable

    # The splitter: dragged 160 px wider, remembered after a reload.
    list_box = page.locator("#diag-list").bounding_box()
    handle = page.locator("[data-testid=diagnostics-splitter]").bounding_box()
    assert list_box is not None and handle is not None
    page.mouse.move(handle["x"] + handle["width"] / 2, handle["y"] + 40)
    page.mouse.down()
    page.mouse.move(handle["x"] + handle["width"] / 2 + 80, handle["y"] + 40, steps=4)
    page.mouse.move(handle["x"] + handle["width"] / 2 + 160, handle["y"] + 40, steps=4)
    page.mouse.up()
    wider = page.locator("#diag-list").bounding_box()
    assert wider is not None and abs(wider["width"] - (list_box["width"] + 160)) < 4
    page.locator("[data-testid=diagnostics-splitter]").focus()
    page.keyboard.press("ArrowLeft")
    narrower = page.locator("#diag-list").bounding_box()
    assert narrower is not None and abs(narrower["width"] - (wider["width"] - 24)) < 4
    page.reload()
    page.locator("[data-testid=diagnostics-tree]").wait_for()
    kept = page.locator("#diag-list").bounding_box()
    assert kept is not None and abs(kept["width"] - narrower["width"]) < 4
    assert horizontal_overflow(page) == 0
    screenshot(page, "diagnostics-1280")

    # Flat, then the tool call with its arguments and result, then Delete (confirmed) moves to the next entry.
    page.click("[data-testid=view-flat]")
    page.wait_for_url("**view=flat**")
    memory_add = next(e for e in entries if (e.detail or {}).get("tool") == "memory_add")
    page.click(f'#diag-list a[data-node="log:{memory_add.pk}"]')
    page.wait_for_function(f"() => document.querySelector('#diagnostics-detail [data-node=\"log:{memory_add.pk}\"]')")
    detail = page.inner_text("#diagnostics-detail")
    assert "Arguments of memory_add" in detail and "Result" in detail and "Duration" in detail
    assert '"Client One is upset <b>now</b>"' in detail  # shown as text, not markup
    screenshot(page, "diagnostics-flat-1280")
    links = page.eval_on_selector_all("#diag-list a.diag-link", "links => links.map(a => a.dataset.node)")
    following = links[links.index(f"log:{memory_add.pk}") + 1]
    page.keyboard.press("Delete")
    page.wait_for_selector(".flash")
    assert "Deleted 1 diagnostics entry." in page.inner_text(".flash")
    assert not OrchLog.objects.filter(pk=memory_add.pk).exists()
    assert selected(page) == following and shown_node(page) == following

    # Bulk: two ticked, confirmed.
    boxes = page.locator("#diag-list input.diag-check")
    boxes.nth(0).check()
    boxes.nth(1).check()
    assert page.inner_text("[data-testid=delete-selected]") == "Delete selected (2)"
    page.click("[data-testid=delete-selected]")
    page.wait_for_selector(".flash")
    assert "Deleted 2 diagnostics entries." in page.inner_text(".flash")
    assert OrchLog.objects.filter(run=run).count() == len(entries) - 3

    # A phone: the panes stack, no splitter, nothing wider than the screen, the JSON included.
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    page.locator("[data-testid=diagnostics-tree]").wait_for()
    assert not page.locator("[data-testid=diagnostics-splitter]").is_visible()
    page.keyboard.press("j")
    page.wait_for_function("() => document.querySelector('#diagnostics-detail .json-view')")
    assert horizontal_overflow(page) == 0
    screenshot(page, "diagnostics-390")
    assert errors == []
