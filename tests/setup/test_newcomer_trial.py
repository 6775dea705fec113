"""The newcomer trial, scripted: sign in and walk every page at 1024, 1280 and 390 px in real Chromium.

A person trying the product found the navigation wrapping to two rows at laptop widths; this walk fails on
what they would meet, on every page the navigation (and the pages it leads to) reaches with demo-like data:

- a top bar that takes more than one row (with the phone menu closed, and with the "More" menu closed);
- sideways scrolling (the document wider than the viewport);
- console errors and uncaught exceptions;
- failed requests: any page, stylesheet, script, image or htmx call answering 4xx/5xx, or not answering.

Every page is loaded fresh at each width (scripts that lay out on load run at that width). The walk follows
links the way tests/dashboard/test_mobile.py does: one page per Django view, starting at Home, so a new page
linked from anywhere joins the trial without editing this file.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Error as PlaywrightError

from tests.browser import login
from tests.dashboard.test_mobile import make_world, view_of, walkable

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = (1024, 1280, 390)
HEIGHT = 900
# The top bar's rows: the longest chain of its visible items each entirely below the previous one (an item
# centred beside two wrapped rows overlaps both, so it does not merge them).
TOPBAR_ROWS = r"""() => {
  const bar = document.querySelector('.topbar');
  if (!bar) return {rows: 0, labels: []};
  const items = [...bar.querySelectorAll('.brand, .nav-toggle, .nav > a, .nav-more-toggle, .session > *')]
    .filter(el => el.getClientRects().length && getComputedStyle(el).visibility !== 'hidden')
    .map(el => ({rect: el.getBoundingClientRect(), label: el.textContent.replace(/\s+/g, ' ').trim()}))
    .filter(item => item.rect.width > 0 && item.rect.height > 0)
    .sort((a, b) => a.rect.top - b.rect.top);
  const depth = items.map(() => 1);
  items.forEach((item, i) => items.slice(0, i).forEach((above, j) => {
    if (item.rect.top >= above.rect.bottom - 1) depth[i] = Math.max(depth[i], depth[j] + 1);
  }));
  const rows = Math.max(0, ...depth);
  const labels = [];
  for (let row = 1; row <= rows; row++) {
    labels.push(items.filter((_, i) => depth[i] === row).map(item => item.label).join(' | '));
  }
  return {rows, labels};
}"""
OVERFLOW = "document.documentElement.scrollWidth - document.documentElement.clientWidth"
LINKS = "[...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href'))"


@pytest.fixture
def world(staff_user: Any) -> Any:
    # Made before Chromium starts (Playwright's event loop in this thread would refuse the run events).
    make_world(staff_user)
    return staff_user


class Watch:
    """What one page load did wrong: console errors, uncaught exceptions, failed and refused requests."""

    def __init__(self, page: Any) -> None:
        self.problems: list[str] = []
        page.on("console", lambda message: self.record(f"console: {message.text}") if message.type == "error" else None)
        page.on("pageerror", lambda error: self.record(f"exception: {error}"))
        page.on("response", self.on_response)
        page.on("requestfailed", self.on_failed)

    def record(self, problem: str) -> None:
        self.problems.append(problem)

    def on_response(self, response: Any) -> None:
        if response.status >= 400:
            self.record(f"HTTP {response.status}: {urlsplit(response.url).path}")

    def on_failed(self, request: Any) -> None:
        # A request the next navigation cancels (a poll in flight when the page is left) is not a failure.
        if request.failure != "net::ERR_ABORTED":
            self.record(f"no answer ({request.failure}): {urlsplit(request.url).path}")

    def take(self) -> list[str]:
        found, self.problems = self.problems, []
        return found


def discover_pages(page: Any, base: str) -> list[str]:
    """The pages a signed-in user reaches from Home: one per view, in the order the links lead to them."""
    pages: list[str] = []
    seen_views: set[str] = set()
    queue = ["/", "/search/?q=invoice"]
    while queue:
        path = queue.pop(0)
        view = view_of(path)
        if view is None or view in seen_views:
            continue
        seen_views.add(view)
        try:
            response = page.goto(base + path, wait_until="load")
        except PlaywrightError:
            pages.append(path)  # the trial below records how it fails
            continue
        if response is None or not (response.headers.get("content-type") or "").startswith("text/html"):
            continue
        pages.append(path)
        for href in page.evaluate(LINKS):
            found = walkable(base, page.url, href)
            if found is not None and view_of(found) not in seen_views:
                queue.append(found)
    return pages


def trial(page: Any, watch: Watch, url: str, width: int, findings: dict[str, list[str]]) -> None:
    page.set_viewport_size({"width": width, "height": HEIGHT})
    watch.take()
    key = f"{urlsplit(url).path}{'?' + urlsplit(url).query if urlsplit(url).query else ''} @ {width}px"
    try:
        response = page.goto(url, wait_until="load")
    except PlaywrightError as exc:
        findings.setdefault(key, []).append(f"did not load: {str(exc).splitlines()[0]}")
        return
    if response is None or not (response.headers.get("content-type") or "").startswith("text/html"):
        return
    # Late errors of the load (deferred scripts, first htmx triggers) are given a moment to arrive.
    page.wait_for_timeout(150)
    problems = watch.take()
    bar = page.evaluate(TOPBAR_ROWS)
    if bar["rows"] > 1:
        problems.append(f"navigation takes {bar['rows']} rows: {bar['labels']}")
    overflow = int(page.evaluate(OVERFLOW))
    if overflow > 0:
        problems.append(f"scrolls sideways by {overflow} px")
    if problems:
        findings.setdefault(key, []).extend(problems)


def test_a_newcomer_meets_no_wrapped_menu_no_sideways_scroll_no_errors(
    world: Any, chromium: Any, asgi_server: str
) -> None:
    staff_user = world
    context = chromium.new_context(viewport={"width": WIDTHS[0], "height": HEIGHT})
    escaped: list[str] = []

    def guard(route: Any) -> None:  # nothing leaves loopback (no CDN, no web fonts)
        url = route.request.url
        if urlsplit(url).hostname in {"127.0.0.1", "localhost"} or url.startswith("data:"):
            route.continue_()
        else:
            escaped.append(url)
            route.abort()

    context.route("**/*", guard)
    page = context.new_page()
    watch = Watch(page)
    findings: dict[str, list[str]] = {}

    # The sign-in page is the first one a newcomer sees.
    for width in WIDTHS:
        trial(page, watch, f"{asgi_server}/accounts/login/", width, findings)
    login(page, asgi_server, staff_user)
    pages = discover_pages(page, asgi_server)
    watch.take()  # the discovery walk's own findings are re-checked width by width below

    for path in pages:
        for width in WIDTHS:
            trial(page, watch, asgi_server + path, width, findings)
    context.close()

    checked = (len(pages) + 1) * len(WIDTHS)
    print(f"newcomer trial: {len(pages) + 1} pages x {len(WIDTHS)} widths = {checked} page loads checked")
    assert not escaped, f"requests that tried to leave loopback: {escaped}"
    assert not findings, f"{len(findings)} of {checked} page loads failed the trial: " + "\n".join(
        f"{key}: {'; '.join(problems)}" for key, problems in sorted(findings.items())
    )
    # The walk reached every section of the navigation and the detail pages behind them.
    for expected in ("/", "/mail/", "/search/?q=invoice", "/inbox/", "/runs/", "/ask/", "/results/", "/settings/"):
        assert expected in pages, (expected, pages)
    assert len(pages) >= 25, pages
