"""Results beyond the first page: keyset paging of the tree (cursor = latest run time + message id), under
every filter including tags, a constant number of queries per page, and a live refresh that keeps the pages
already loaded."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from apps.results import selectors
from apps.results.selectors import ResultFilters, TreeCursor
from tests.results.conftest import MakeResult

pytestmark = pytest.mark.django_db
HX = {"HX-Request": "true"}


def _walk(user: Any, filters: ResultFilters, size: int, assert_queries: Any) -> list[list[str]]:
    pages: list[list[str]] = []
    before = None
    while True:
        with assert_queries(4):  # the page's emails, their runs, workspaces, items: whatever the page
            tree = selectors.results_tree(user=user, filters=filters, emails=size, before=before)
        pages.append([email.message.subject for email in tree.emails])
        if not tree.next_cursor:
            return pages
        assert tree.next_cursor == tree.emails[-1].cursor
        before = TreeCursor.parse(tree.next_cursor)


def test_pages_walk_every_email_once_newest_first(
    user: Any, make_result: MakeResult, django_assert_num_queries: Any, django_assert_max_num_queries: Any
) -> None:
    made = [make_result(subject=f"Mail {n}", items=[{"tags": ["urgent"] if n % 3 else ["later"]}]) for n in range(8)]
    # A new run on an old email moves it to the top (its latest run is the newest).
    make_result(message=made[1].message, director="Bookkeeping", items=[{"tags": ["urgent"]}])
    everything = selectors.results_tree(user=user, filters=ResultFilters(), emails=100)
    expected = [email.message.subject for email in everything.emails]
    assert expected[0] == "Mail 1" and len(expected) == 8 and not everything.next_cursor

    pages = _walk(user, ResultFilters(), 3, django_assert_num_queries)
    assert [len(page) for page in pages] == [3, 3, 2]
    assert [subject for page in pages for subject in page] == expected

    # The tag filter pages too (it used to scan the newest 500 runs and stop); the tag is matched exactly.
    tagged = _walk(user, ResultFilters(tag="urgent"), 2, django_assert_num_queries)
    untagged = ("Mail 0", "Mail 3", "Mail 6")
    assert [subject for page in tagged for subject in page] == [s for s in expected if s not in untagged]
    assert _walk(user, ResultFilters(tag="urg"), 2, django_assert_max_num_queries) == [[]]  # no email: 1 query
    # Under a tag, an email shows only the items that carry it.
    first = selectors.results_tree(user=user, filters=ResultFilters(tag="later"), emails=1)
    assert [tag for node in first.emails[0].runs for item in node.items for tag in item.tags] == ["later"]


def test_tags_with_quotes_and_accents_match_exactly(user: Any, make_result: MakeResult) -> None:
    odd = make_result(subject="Odd", items=[{"tags": ['say "hi"', "café"]}])
    make_result(subject="Plain", items=[{"tags": ["cafe", "say hi"]}])
    for tag in ('say "hi"', "café"):
        tree = selectors.results_tree(user=user, filters=ResultFilters(tag=tag))
        assert [email.message.pk for email in tree.emails] == [odd.message.pk]
    assert selectors.items_for_filters(user=user, filters=ResultFilters(tag="café")).get() == odd.items[0]


def test_a_refresh_keeps_the_loaded_pages(user: Any, make_result: MakeResult, django_assert_num_queries: Any) -> None:
    for n in range(7):
        make_result(subject=f"Mail {n}", items=[{}])
    page_one = selectors.results_tree(user=user, filters=ResultFilters(), emails=3)
    page_two = selectors.results_tree(
        user=user, filters=ResultFilters(), emails=3, before=TreeCursor.parse(page_one.next_cursor)
    )
    assert page_two.through == page_two.emails[-1].cursor
    make_result(subject="Arrived", items=[{}])
    with django_assert_num_queries(4):
        refreshed = selectors.results_tree(
            user=user, filters=ResultFilters(), emails=3, through=TreeCursor.parse(page_two.through)
        )
    shown = [email.message.subject for email in refreshed.emails]
    assert shown == ["Arrived", "Mail 6", "Mail 5", "Mail 4", "Mail 3", "Mail 2", "Mail 1"]
    assert refreshed.next_cursor == refreshed.through == refreshed.emails[-1].cursor  # "Mail 0" is still older
    # A live refresh reads only down to the end of the first page (its 3rd email here); the page keeps the rest.
    assert refreshed.top == refreshed.emails[2].cursor and page_one.top == page_one.emails[-1].cursor


def _more_button_cursor(html: str) -> str:
    found = re.search(r"hx-vals='\{\"before\": \"([0-9.]+)\"\}'", html)
    return found.group(1) if found else ""


def test_show_older_emails_appends_pages_keeping_filters(
    logged_in_client: Client, make_result: MakeResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selectors, "TREE_EMAILS", 2)
    for n in range(5):
        make_result(subject=f"Mail {n}", items=[{"tags": ["keep"] if n != 2 else ["other"]}])
    page = logged_in_client.get("/results/?tag=keep").content.decode()
    assert "Mail 4" in page and "Mail 3" in page and "Mail 1" not in page
    assert 'data-testid="tree-more"' in page and "Showing the newest" not in page
    cursor = _more_button_cursor(page)
    older = logged_in_client.get("/results/tree/", {"tag": "keep", "before": cursor}, headers=HX).content.decode()
    # Only email rows (appended to the list) and the button/refresh cursor out of band.
    assert older.lstrip().startswith("<li") and 'id="results-more" class="rtree-more" hx-swap-oob="true"' in older
    assert "Mail 1" in older and "Mail 0" in older and "Mail 2" not in older  # the filter is kept
    assert _more_button_cursor(older) == ""
    assert "That is every matching email." in older
    through = re.search(r'name="through" value="([0-9.]+)"', older)
    assert through is not None
    # The refresh (poller, Refresh, a delete) sends `through`: all four loaded emails come back, in one tree.
    refreshed = logged_in_client.get(
        "/results/tree/", {"tag": "keep", "through": through.group(1)}, headers=HX
    ).content.decode()
    loaded = ["Mail 4", "Mail 3", "Mail 1", "Mail 0"]
    assert [s for s in loaded if s in refreshed] == loaded
    assert 'data-testid="tree-more"' not in refreshed
    # Changing a filter starts from the newest page again (the filter form does not send `through`).
    assert "Mail 0" not in logged_in_client.get("/results/tree/", {"tag": "keep"}, headers=HX).content.decode()


def test_a_bad_cursor_is_a_clear_400(logged_in_client: Client) -> None:
    for name in ("before", "through"):
        response = logged_in_client.get("/results/tree/", {name: "yesterday"}, headers=HX)
        assert response.status_code == 400
        assert "1700000000000000.42" in response.content.decode() and "Reload the page" in response.content.decode()


def _bulk_results(user: Any, emails: int) -> None:
    """`emails` processed emails written in bulk (one run and one item each): enough for two pages."""
    import datetime as dt

    from django.utils import timezone

    from apps.accounts.actions import create_local_account
    from apps.accounts.models import Message
    from apps.orchestration.models import Director, Run
    from apps.workspaces.models import Workspace, WorkspaceItem

    account = create_local_account(owner=user, name="paging", address="paging@example.com")
    director = Director.objects.create(owner=user, name="Clients")
    now = timezone.now()
    messages = Message.objects.bulk_create(
        Message(
            account=account,
            provider_id=f"p:{n}",
            dedupe_key=f"p-{n}",
            subject=f"Order {n}",
            from_address="client@example.com",
            date=now - dt.timedelta(minutes=n),
        )
        for n in range(emails)
    )
    runs = Run.objects.bulk_create(
        Run(
            message=m,
            director=director,
            status="completed",
            created_at=now - dt.timedelta(hours=1, minutes=n),
            finished_at=now - dt.timedelta(hours=1),  # long done: no notification refreshes the tree meanwhile
        )
        for n, m in enumerate(messages)
    )
    workspaces = Workspace.objects.bulk_create(
        Workspace(owner=user, run_id=r.pk, message_id=r.message_id, director_name="Clients", title="t") for r in runs
    )
    WorkspaceItem.objects.bulk_create(
        WorkspaceItem(workspace=w, label="Summary", mime_type="text/plain", data="ok") for w in workspaces
    )


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_show_older_emails_from_the_keyboard_and_a_refresh_keeps_them(
    asgi_server: str, chromium: Any, user: Any
) -> None:
    from apps.accounts.models import Message
    from tests.browser import console_errors, horizontal_overflow, login, screenshot

    _bulk_results(user, 62)
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors = console_errors(page)
    login(page, asgi_server, user)
    page.goto(f"{asgi_server}/results/")
    emails = "#results-tree-list > li[role=treeitem]"
    assert page.locator(emails).count() == 50
    more = page.locator("[data-testid=tree-more]")
    more.focus()
    page.keyboard.press("Enter")
    page.wait_for_function(f"() => document.querySelectorAll('{emails}').length === 62")
    # The focus moved to the first appended email (the button is gone): the keyboard continues from there.
    assert page.evaluate("document.activeElement.closest('[role=treeitem]').dataset.node") == page.locator(emails).nth(
        50
    ).get_attribute("data-node")
    assert "Order 50" in page.evaluate("document.activeElement.textContent")
    page.keyboard.press("ArrowDown")
    assert "Clients" in page.evaluate("document.activeElement.textContent")  # its director run
    assert page.locator("[data-testid=tree-more]").count() == 0
    assert page.locator("[data-testid=tree-end]").is_visible()
    screenshot(page, "results-paging-1280")
    # A refresh (the button; the live poller and deletes send the same cursor) keeps all 62, focus kept.
    page.locator("[data-testid=results-refresh]").click()
    page.wait_for_function(f"() => document.querySelector('{emails}') && !document.querySelector('.htmx-request')")
    assert page.locator(emails).count() == 62
    # A live refresh (what a notification or the poller does) reads only the first page and keeps the older
    # ones as shown; an old email with a new run moves to the top instead of showing twice.
    from apps.orchestration.models import Director, Run

    moved = Message.objects.get(subject="Order 55")
    second = Director.objects.create(owner=user, name="Bookkeeping")
    Run.objects.create(message=moved, director=second, status="completed")
    with page.expect_response(lambda r: "/results/tree/" in r.url and "through=" in r.url) as live:
        page.evaluate("document.dispatchEvent(new CustomEvent('mailagent:result'))")
    top = page.evaluate("document.getElementById('results-top').value")
    assert live.value.url.split("through=")[1].split("&")[0] != ""
    page.wait_for_function(f"() => document.querySelector('{emails}').dataset.node === 'email-{moved.pk}'")
    assert page.locator(emails).count() == 62
    assert page.locator(f"[data-node='email-{moved.pk}']").count() == 1
    assert top
    # The kept older pages still work: a click on one of them opens it.
    page.locator(emails).nth(61).locator(".rtree-link").first.click()
    page.wait_for_selector("[data-testid=results-pane] h2")
    # A new filter starts from the newest page again.
    page.fill("#results-q", "Order 6")
    page.press("#results-q", "Enter")
    page.wait_for_function(f"() => document.querySelectorAll('{emails}').length === 3")  # 6, 60, 61
    page.fill("#results-q", "")
    page.press("#results-q", "Enter")
    page.wait_for_function(f"() => document.querySelectorAll('{emails}').length === 50")
    page.set_viewport_size({"width": 390, "height": 844})
    page.locator("[data-testid=tree-more]").scroll_into_view_if_needed()
    assert horizontal_overflow(page) == 0
    screenshot(page, "results-paging-390")
    assert errors == []
    context.close()
