"""The Organization page in real Chromium against Daphne: upload a file, see its suggestion, choose another
folder, undo the move; screenshots at 1280 and 390 px for review."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from apps.organization import actions
from apps.organization.library import get_library
from apps.organization.models import Library
from apps.organization.roots import library_base
from tests.browser import console_errors, horizontal_overflow, login, screenshot
from tests.conftest import USER_PASSWORD
from tests.organization.conftest import SEED_FILES, write

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SCREENSHOTS = Path(os.environ.get("ORGANIZATION_SCREENSHOTS", "/tmp/organization-screenshots"))


@pytest.fixture
def prepared(user: Any, tmp_path: Path) -> Library:
    # Before the browser starts: Playwright's sync API runs an event loop, where the ORM refuses to work.
    actions.update_settings(
        owner=user, changes={"root": str(library_base(user.pk) / "library"), "suggest_threshold": 0.5}
    )
    library = get_library(owner=user)
    for relative, text in SEED_FILES.items():
        write(library.root_path, relative, text)
    actions.scan_library(library=library)
    return library


def test_upload_suggest_choose_and_undo(prepared: Library, user: Any, asgi_server: str, browser_page: Any) -> None:
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{asgi_server}/accounts/login/?next=/organize/")
    page.fill("input[name=login]", user.email)
    page.fill("input[name=password]", USER_PASSWORD)
    page.click("form button[type=submit]")
    page.wait_for_url(f"{asgi_server}/organize/")
    assert "No pending suggestions" in page.locator("[data-testid=org-pending]").inner_text()

    upload = prepared.root_path.parent / "april-statement.txt"
    upload.write_text("QNB Bank account statement for April: IBAN, card payments, closing balance.")
    page.set_input_files("[data-testid=org-file-input]", str(upload))
    page.locator("[data-testid=org-upload] button[type=submit]").click()
    card = page.locator("[data-testid=org-card]").first
    card.wait_for(timeout=30_000)
    assert card.locator("[data-testid=org-card-name]").inner_text() == "april-statement.txt"
    assert card.locator("[data-testid=org-card-folder]").inner_text() == "finance/bank"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "organize-1280.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(SCREENSHOTS / "organize-390.png"), full_page=True)
    assert horizontal_overflow(page) == 0, "the Organize page scrolls sideways at 390 px"
    page.set_viewport_size({"width": 1280, "height": 900})

    # Choose another folder (a new one) instead of the suggestion.
    card.locator("[data-testid=org-folder-input]").fill("finance/statements-2026")
    card.locator("[data-testid=org-choose]").click()
    page.locator("[data-testid=org-notice]", has_text="Moved april").wait_for(timeout=30_000)
    assert (
        "Moved april-statement.txt to finance/statements-2026" in page.locator("[data-testid=org-notice]").inner_text()
    )
    assert (prepared.root_path / "finance/statements-2026/april-statement.txt").is_file()
    history = page.locator("[data-testid=org-history]")
    assert "finance/statements-2026/april-statement.txt" in history.inner_text()

    # Undo: back in the inbox, suggested again.
    history.locator("button", has_text="Undo").first.click()
    page.locator("[data-testid=org-notice]", has_text="Moved back").wait_for(timeout=30_000)
    assert (prepared.root_path / "inbox/april-statement.txt").is_file()
    assert "undone" in history.inner_text()
    assert page.locator("[data-testid=org-card]").count() == 1
    page.screenshot(path=str(SCREENSHOTS / "organize-after-undo-1280.png"), full_page=True)


@pytest.fixture
def abstaining(prepared: Library, user: Any) -> Library:
    # A threshold no guess on twelve filed files reaches: the card abstains and lists its three best folders.
    from apps.organization.suggesting import suggest_for_file

    actions.update_settings(owner=user, changes={"suggest_threshold": 0.999})
    file = actions.save_upload(
        library=prepared,
        name="card-payment.txt",
        chunks=[b"QNB Bank card payment: SkyBridge Airlines flight ticket, seat and boarding."],
    )
    suggest_for_file(file=file)
    return prepared


def test_an_abstaining_card_shows_three_folders_with_their_evidence(
    abstaining: Library, user: Any, asgi_server: str, browser_page: Any
) -> None:
    """Issue 36, item 3: no confident folder, so the three best are listed, each with what points to it, and
    "Move here" files it in one click; readable at 1280 and 390 px."""
    page = browser_page
    errors = console_errors(page)
    page.set_viewport_size({"width": 1280, "height": 900})
    login(page, asgi_server, user)
    page.goto(f"{asgi_server}/organize/")
    card = page.locator("[data-testid=org-card]").first
    assert card.locator("[data-testid=org-card-folder]").inner_text() == "No confident folder"
    rows = card.locator("[data-testid=org-alternative]")
    assert rows.count() == 3
    travel = rows.filter(has=page.locator("button.org-alt", has_text="travel"))
    assert "skybridge" in travel.locator("[data-testid=org-alternative-evidence]").inner_text()
    screenshot(page, "organize-alternatives-1280")
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "organize-alternatives-390")
    assert horizontal_overflow(page) == 0, "the alternatives scroll sideways at 390 px"
    travel.locator("[data-testid=org-alternative-move]").click()
    page.locator("[data-testid=org-notice]", has_text="Moved card-payment.txt to travel").wait_for(timeout=30_000)
    assert (abstaining.root_path / "travel/card-payment.txt").is_file()
    assert errors == []
