"""The navigation bar: exactly one section lit per page, the favicon on every page."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.staticfiles import finders
from django.test import Client

pytestmark = pytest.mark.django_db

NAV = re.compile(r'<nav class="nav"[^>]*>(.*?)</nav>', re.S)
LINK = re.compile(r'<a href="([^"]+)"([^>]*)>([^<]+)')

# (page, the nav label that must be the only one lit)
PAGES = [
    ("/", "Home"),
    ("/mail/", "Mailbox"),
    ("/mail/accounts/", "Settings"),  # a configuration page: reached from Settings
    ("/search/", "Search"),
    ("/inbox/", "Inbox"),
    ("/runs/", "Runs"),
    ("/runs/memory/", "Settings"),  # a configuration page: reached from Settings
    ("/settings/filters/", "Settings"),
    ("/routing/fetcher/", "Settings"),  # a configuration page: reached from Settings
    ("/ask/", "Ask"),
    ("/organize/", "Organize"),
    ("/runs/diagnostics/", "Diagnostics"),
    ("/replies/", "Drafts"),  # under "More"
    ("/settings/", "Settings"),
    ("/prompts/", "Settings"),
]


def lit_entries(html: str) -> list[str]:
    nav = NAV.search(html)
    assert nav, "no navigation bar"
    return [label.strip() for _, attrs, label in LINK.findall(nav.group(1)) if 'aria-current="page"' in attrs]


@pytest.mark.parametrize(("url", "label"), PAGES)
def test_exactly_one_nav_entry_is_lit(staff_client: Client, url: str, label: str) -> None:
    response = staff_client.get(url)
    assert response.status_code == 200, url
    assert lit_entries(response.content.decode()) == [label]


def test_the_bar_keeps_to_daily_sections_and_settings_links_the_rest(client: Client, user: Any) -> None:
    client.force_login(user)
    nav = NAV.search(client.get("/").content.decode())
    assert nav
    labels = [label.strip() for _, _, label in LINK.findall(nav.group(1))]
    assert "Settings" in labels and not {"Accounts", "Prompts", "Memory", "Filters", "Fetcher"} & set(labels)
    hub = client.get("/settings/").content.decode()
    for url in ("/mail/accounts/", "/prompts/", "/runs/memory/", "/settings/filters/", "/routing/fetcher/"):
        assert f'href="{url}"' in hub, url


def test_pages_outside_every_section_light_nothing(staff_client: Client) -> None:
    response = staff_client.get("/no-such-page/")
    assert response.status_code == 404
    html = response.content.decode()
    if NAV.search(html):  # the 404 page may or may not carry the bar; when it does, nothing is lit
        assert lit_entries(html) == []


def test_one_diagnostics_entry_for_staff_and_none_for_others(staff_user: Any, user: Any) -> None:
    staff_client, user_client = Client(), Client()
    staff_client.force_login(staff_user)
    user_client.force_login(user)
    staff_nav = NAV.search(staff_client.get("/").content.decode())
    user_nav = NAV.search(user_client.get("/").content.decode())
    assert staff_nav and user_nav
    assert [label.strip() for _, _, label in LINK.findall(staff_nav.group(1))].count("Diagnostics") == 1
    assert "Diagnostics" not in [label.strip() for _, _, label in LINK.findall(user_nav.group(1))]


def test_favicon_is_linked_and_served(staff_client: Client) -> None:
    client = Client()
    hrefs = set()
    for response in (client.get("/accounts/login/"), staff_client.get("/mail/")):
        match = re.search(r'<link rel="icon" href="([^"]+)" type="image/svg\+xml">', response.content.decode())
        assert match, "no favicon link"
        hrefs.add(match.group(1))
    assert len(hrefs) == 1
    found = finders.find("mailagent/favicon.svg")
    assert found, "favicon.svg is not among the static files"
    served = client.get(hrefs.pop())
    assert served.status_code == 200
    body = b"".join(served.streaming_content) if served.streaming else served.content  # type: ignore[attr-defined]
    assert body.lstrip().startswith(b"<svg") and b"</svg>" in body


MORE = re.compile(
    r'<div class="nav-more( has-current)?">\s*<button type="button" class="nav-more-toggle"[^>]*>(.*?)</button>'
    r"(.*?)</div>",
    re.S,
)


def test_the_bar_keeps_seven_sections_and_puts_the_rest_under_more(staff_client: Client) -> None:
    nav = NAV.search(staff_client.get("/").content.decode())
    assert nav
    more = MORE.search(nav.group(1))
    assert more, "no More menu in the bar"
    toggle = re.search(r'<button type="button" class="nav-more-toggle"[^>]*>', nav.group(1))
    assert toggle and 'aria-expanded="false"' in toggle.group(0) and 'aria-controls="nav-more-list"' in toggle.group(0)
    inline = [label.strip() for _, _, label in LINK.findall(nav.group(1)[: more.start()])]
    under_more = [label.strip() for _, _, label in LINK.findall(more.group(3))]
    assert inline == ["Home", "Mailbox", "Search", "Inbox", "Runs", "Ask", "Results"]
    assert under_more == ["Approvals", "Organize", "Drafts", "Settings", "Diagnostics", "Admin"]
    assert more.group(1) is None  # Home is lit, not a section under More


def test_the_more_button_is_lit_when_the_page_is_under_it(staff_client: Client) -> None:
    nav = NAV.search(staff_client.get("/settings/models/").content.decode())
    assert nav
    more = MORE.search(nav.group(1))
    assert more and more.group(1) == " has-current"
    assert "the current page is in this menu" in more.group(2)


def test_one_diagnostics_page_the_old_address_redirects_for_good(staff_client: Client) -> None:
    old = staff_client.get("/diagnostics/")
    assert old.status_code == 301 and old["Location"] == "/runs/diagnostics/"
    page = staff_client.get("/runs/diagnostics/").content.decode()
    # The runtime facts and the run audit trail on one page.
    for heading in ("<h1>Diagnostics</h1>", ">Runs</h2>", ">System</h2>", "<h3>Runtime</h3>", "<h3>Versions</h3>"):
        assert heading in page, heading
    assert 'data-testid="diagnostics-tree"' in page and "Job broker" in page


def test_approvals_are_in_the_more_menu_with_the_count_waiting(user: Any, staff_user: Any) -> None:
    """Issue 38: an Approvals page reachable from the navigation, with how many wait for you — also on the
    More button, so a pending send or mail change is seen without opening the menu."""
    from apps.accounts.actions import create_local_account
    from apps.orchestration.models import Approval

    accounts = {who: create_local_account(owner=who, name="inbox", address=f"{who.pk}@example.com")
                for who in (user, staff_user)}  # fmt: skip
    for owner, summary in ((user, "first"), (user, "second"), (staff_user, "someone else's")):
        Approval.objects.create(owner=owner, account=accounts[owner], summary=summary, request={})
    Approval.objects.create(owner=user, account=accounts[user], summary="decided", request={}, status="approved")
    client = Client()
    client.force_login(user)
    html = client.get("/").content.decode()
    link = r'<a href="/runs/approvals/"[^>]*>Approvals<span[^>]*data-testid="approvals-pending"[^>]*>2<'
    assert re.search(link, html)
    assert re.search(r'data-testid="more-approvals"[^>]*>2<', html)
    page = client.get("/runs/approvals/")
    assert page.status_code == 200 and lit_entries(page.content.decode()) == ["Approvals"]
    Approval.objects.filter(owner=user).update(status="rejected")
    html = client.get("/").content.decode()
    assert 'data-testid="more-approvals"' not in html
    assert re.search(r'data-testid="approvals-pending"[^>]*></span>', html)
