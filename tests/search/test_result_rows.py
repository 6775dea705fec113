"""Search results and the mailbox list show mail with one row component (accounts/partials/mail_row.html): the
same grid of cells, the same link to the thread, the same date; a newcomer found search results looking
different from the mailbox."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db

ROW = r'<a class="thread-row[^"]*" href="([^"]+)"[^>]*>(.*?)</a>'
CELLS = ["thread-senders", "thread-subject", "thread-count", "thread-attachment", "thread-date"]


def rows(html: str) -> dict[str, tuple[str, str]]:
    """Each row by its subject: (link, row markup)."""
    found = {}
    for href, inner in re.findall(ROW, html, re.S):
        subject = re.search(r'<span class="thread-subject-text">(.*?)</span>', inner)
        assert subject, inner
        found[subject.group(1)] = (href, inner)
    return found


def cell_text(row: str, cell: str) -> str:
    found = re.search(rf'<span class="thread-cell {cell}"[^>]*>(.*?)</span>\n', row, re.S)
    assert found, (cell, row)
    return re.sub(r"<[^>]+>", "", found.group(1)).strip()


def test_a_search_hit_is_the_mailbox_row_of_its_thread(logged_in_client: Any, store_mail: Any) -> None:
    store_mail(subject="Turbine maintenance invoice", body="The turbine overhaul is invoiced at 12,000 USD.\n")
    store_mail(subject="Lunch", body="Sandwiches at noon.\n")
    mailbox = rows(logged_in_client.get(reverse("mail:mailbox")).content.decode())
    found = rows(logged_in_client.get(reverse("search:results"), {"q": "turbine", "mode": "keyword"}).content.decode())
    assert list(found) == ["Turbine maintenance invoice"] and set(mailbox) == {"Turbine maintenance invoice", "Lunch"}
    (hit_href, hit), (row_href, row) = found["Turbine maintenance invoice"], mailbox["Turbine maintenance invoice"]
    assert re.findall(r'<span class="thread-cell (thread-[a-z]+)"', hit) == CELLS
    assert re.findall(r'<span class="thread-cell (thread-[a-z]+)"', row) == CELLS
    assert (
        hit_href.split("#")[0] == row_href.split("?")[0] == reverse("mail:thread", args=[int(row_href.split("/")[-2])])
    )  # the hit's link also scrolls to the message that matched
    for cell in ("thread-senders", "thread-date"):  # the sender and the date read the same in both lists
        assert cell_text(hit, cell) == cell_text(row, cell) != ""
    assert "<mark>" in hit  # the search's highlighted snippet, in the row's snippet place
