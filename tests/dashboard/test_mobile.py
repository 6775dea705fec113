"""Every page a signed-in user reaches, at phone width (390 px) in real Chromium against the production server.

One browser, one login, one page object: the walk starts at Home and follows every internal link it finds
(at most one page per Django view, so adding a page elsewhere adds it here without editing this file), and
on each page measures sideways scrolling (`scrollWidth - clientWidth`, must be 0 at 390 px) and saves
screenshots at 390 and 1280 px under var/screenshots/mobile/ for people to look at. The menu button is
driven with the keyboard, and tables must have become stacked cards.
"""

from __future__ import annotations

import io
import os
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest
from django.urls import resolve
from django.urls.exceptions import Resolver404
from playwright.sync_api import Error as PlaywrightError

from apps.accounts.actions import create_imap_account
from apps.accounts.demo_mailbox.importing import import_demo_mailbox
from apps.accounts.demo_mailbox.model import DEMO_ACCOUNT_NAME
from apps.accounts.models import MailAccount, Message
from apps.ask.actions import create_ask_run
from apps.llm.models import ApiConfig
from apps.orchestration.actions import RunRequest, create_director, create_runs
from apps.orchestration.models import Memory, Run, RunStatus
from apps.routing.actions import create_filter
from apps.workspaces.actions import add_item, create_user_workspace, open_workspace, push_inbox_entry
from tests.browser import horizontal_overflow, login, screenshot
from tests.services import free_port

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Full-page screenshots of every page at both widths take most of the walk's time: on request only.
SCREENSHOTS = os.environ.get("MAILAGENT_SCREENSHOTS") == "1"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
# Leaving the session, Django's own admin, the JSON API and its docs, static files, the mailbox OAuth
# redirects (they leave for the provider), websockets and MCP are not pages of the product to walk.
NOT_WALKED = ("/accounts/logout/", "/admin/", "/api/", "/static/", "/mail/oauth/", "/ws/", "/mcp/")
# One round trip per page: sideways overflow (the measure of tests/browser.py), whether table rows are stacked
# cards, how the Ask composer is positioned, and the links to walk next.
MEASURE = r"""() => {
  const rows = [...document.querySelectorAll('table.table:has(> thead > tr > :nth-child(3)) > tbody > tr')];
  const composer = document.querySelector('.ask-composer');
  return {
    overflow: document.documentElement.scrollWidth - document.documentElement.clientWidth,
    rows: rows.length,
    stacked: rows.filter(row => getComputedStyle(row).display === 'block').length,
    composer: composer ? getComputedStyle(composer).position : null,
    links: [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href')),
    rawTemplate: /\{[#%]|[#%]\}/.test(document.body.innerText),
  };
}"""


def make_world(owner: Any) -> None:
    """Objects of every kind the pages list, made through the product's actions."""
    import_demo_mailbox(owner=owner, stdout=io.StringIO())
    demo = MailAccount.objects.get(owner=owner, name=DEMO_ACCOUNT_NAME)
    create_imap_account(
        owner=owner,
        name="Work",
        address="a.very.long.address.that.does.not.break@subdomain.example-company.example",
        host="127.0.0.1",
        port=1,
        security="ssl",
        username="me",
        password="s3cret",
    )
    director = create_director(owner=owner, name="Client support")
    create_filter(director=director, field_name="subject", regex_text="invoice")
    first, second = Message.objects.filter(account=demo).order_by("pk")[:2]
    # Without a model the first run is skipped; with one that refuses connections the second one fails
    # (test settings run tasks at once).
    (skipped,) = create_runs(requests=[RunRequest(message_id=first.pk, director_id=director.pk)], fetch_cycle_id=None)
    director.api_config = ApiConfig.objects.create(
        owner=owner, name="local", base_url=f"http://127.0.0.1:{free_port()}/v1", model="m"
    )
    director.save(update_fields=["api_config"])
    (failed,) = create_runs(requests=[RunRequest(message_id=second.pk, director_id=director.pk)], fetch_cycle_id=None)
    assert Run.objects.get(pk=failed).status == RunStatus.FAILED
    result = open_workspace(
        owner=owner,
        run_id=skipped,
        message_id=first.pk,
        director_id=director.pk,
        director_name=director.name,
        title=first.subject,
    )
    add_item(workspace=result, data="# Summary\n\nThe client asks for a refund.\n", mime_type="text/markdown")
    Memory.objects.create(owner=owner, director=director, content="The client prefers mornings.")
    create_ask_run(owner=owner, question="When is the statement due?")
    workspace = create_user_workspace(owner=owner, label="Claude Desktop")
    add_item(workspace=workspace, data="# Notes\n", label="notes", mime_type="text/markdown", path="notes.md")
    push_inbox_entry(workspace=workspace, docs=[{"path": "notes.md"}], comments="Summary of the week.")


def walkable(base: str, page_url: str, href: str) -> str | None:
    """The path (with query) of an internal page link, or None."""
    if not href or href.startswith(("#", "mailto:", "tel:", "javascript:", "data:")):
        return None
    target = urljoin(page_url, href)
    parts = urlsplit(target)
    if f"{parts.scheme}://{parts.netloc}" != base or parts.path.startswith(NOT_WALKED):
        return None
    return parts.path + (f"?{parts.query}" if parts.query else "")


def view_of(path: str) -> str | None:
    try:
        match = resolve(urlsplit(path).path)
    except Resolver404:
        return None
    return None if "download" in match.view_name else match.view_name


def shot_name(path: str) -> str:
    return ("home" if path == "/" else path.strip("/").replace("/", "_").replace("?", "_").replace("=", "-"))[:80]


def check_menu(page: Any) -> None:
    """The phone menu: hidden sections behind a button that works with the keyboard and says its state."""
    toggle = page.locator(".nav-toggle")
    nav = page.locator("nav.nav")
    assert toggle.is_visible() and not nav.is_visible()
    assert toggle.get_attribute("aria-expanded") == "false"
    toggle.focus()
    page.keyboard.press("Enter")
    assert toggle.get_attribute("aria-expanded") == "true"
    assert nav.is_visible() and page.locator("[data-testid=current-user]").is_visible()
    assert horizontal_overflow(page) == 0
    if SCREENSHOTS:
        screenshot(page, "mobile/menu-open-390")
    page.keyboard.press("Escape")
    assert toggle.get_attribute("aria-expanded") == "false" and not nav.is_visible()
    assert page.evaluate("document.activeElement.classList.contains('nav-toggle')")
    page.keyboard.press("Space")
    assert toggle.get_attribute("aria-expanded") == "true"
    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "false"


@pytest.fixture
def world(staff_user: Any) -> Any:
    # Made before Chromium starts: Playwright's event loop in this thread would refuse the run events'
    # async_to_sync calls.
    make_world(staff_user)
    return staff_user


def test_every_page_fits_a_phone_and_the_menu_works(world: Any, chromium: Any, asgi_server: str) -> None:
    staff_user = world
    context = chromium.new_context(viewport=PHONE)
    # Nothing may leave loopback (no CDN, no fonts): a request elsewhere is aborted and recorded.
    escaped: list[str] = []

    def guard(route: Any) -> None:
        url = route.request.url
        if urlsplit(url).hostname in {"127.0.0.1", "localhost"} or url.startswith("data:"):
            route.continue_()
        else:
            escaped.append(url)
            route.abort()

    context.route("**/*", guard)
    page = context.new_page()
    login(page, asgi_server, staff_user)

    check_menu(page)
    page.set_viewport_size(DESKTOP)
    assert not page.locator(".nav-toggle").is_visible() and page.locator("nav.nav").is_visible()
    page.set_viewport_size(PHONE)

    overflowing: dict[str, int] = {}
    unstacked: dict[str, int] = {}
    sticky_composers: list[str] = []
    raw_template: list[str] = []
    failed: dict[str, int | str] = {}
    walked: list[str] = []
    seen_views: set[str] = set()
    queue = ["/", "/search/?q=invoice"]
    while queue:
        path = queue.pop(0)
        view = view_of(path)
        if view is None or view in seen_views:
            continue
        seen_views.add(view)
        try:
            # "load": every stylesheet applied, also a page's own ones linked after the deferred app.js.
            response = page.goto(asgi_server + path, wait_until="load")
        except PlaywrightError as exc:  # an error answer with an empty body: Chromium shows its error page
            failed[path] = str(exc).splitlines()[0]
            page.close()
            page = context.new_page()
            continue
        assert response is not None
        if response.status >= 400:
            failed[path] = response.status
            continue
        if not (response.headers.get("content-type") or "").startswith("text/html"):
            continue
        walked.append(path)
        layout = page.evaluate(MEASURE)
        if layout["overflow"]:
            overflowing[path] = layout["overflow"]
        # Tables of 3+ columns are stacked cards (rows are blocks); the Ask composer does not stick over text.
        if layout["rows"] and layout["rows"] != layout["stacked"]:
            unstacked[path] = layout["rows"] - layout["stacked"]
        if layout["composer"] not in (None, "static", "relative"):
            sticky_composers.append(path)
        if layout["rawTemplate"]:  # a Django comment or tag that did not parse shows as text
            raw_template.append(path)
        if SCREENSHOTS:
            screenshot(page, f"mobile/{shot_name(path)}-390")
            page.set_viewport_size(DESKTOP)
            screenshot(page, f"mobile/{shot_name(path)}-1280")
            page.set_viewport_size(PHONE)
        for href in layout["links"]:
            found = walkable(asgi_server, page.url, href)
            if found is not None and view_of(found) not in seen_views:
                queue.append(found)

    context.close()
    problems = {
        "pages that answered an error": failed,
        "pages that scroll sideways at 390 px (px)": overflowing,
        "pages whose table rows are not stacked cards at 390 px": unstacked,
        "pages whose Ask composer sticks over the text at 390 px": sticky_composers,
        "pages showing template syntax as text": raw_template,
        "requests that tried to leave loopback": escaped,
    }
    assert not any(problems.values()), {name: found for name, found in problems.items() if found}
    # The walk reached the sections every user has (and whatever other pages they link to).
    for expected in ("/", "/mail/", "/mail/accounts/", "/search/?q=invoice", "/runs/", "/inbox/", "/ask/"):
        assert expected in walked, (expected, walked)
    assert len(walked) >= 20, walked
    print(f"walked {len(walked)} pages at 390 px: {' '.join(walked)}")
