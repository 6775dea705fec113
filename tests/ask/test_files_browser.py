"""Ask over library files in real Chromium against the production server: upload a file on the Organization
page, ask Ask for a photo and see its card, ask it to organize the inbox and move the file with the card's
button; at 1280 and 390 px, nothing scrolls sideways. Screenshots under var/screenshots/ for review."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from apps.organization import actions
from apps.organization.library import get_library
from apps.organization.models import Library
from apps.organization.roots import library_base
from tests.browser import horizontal_overflow, login, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FILED = {
    "finance/bank/statement-2026-01.txt": "QNB Bank monthly account statement. IBAN TR12. Closing balance 4,210 TRY.",
    "finance/bank/statement-2026-02.txt": "QNB Bank account statement for February. Card payments, closing balance.",
    "travel/flight-ist-ber.txt": "Boarding pass SkyBridge Airlines flight IST to BER seat 14C gate B12 departure.",
    "travel/hotel-pera.txt": "Pera Garden Hotel reservation confirmation, check-in 3 nights, room booking.",
}


@pytest.fixture
def prepared(user: Any, tmp_path: Path) -> Library:
    # Before the browser starts: Playwright's sync API runs an event loop, where the ORM refuses to work.
    actions.update_settings(
        owner=user, changes={"root": str(library_base(user.pk) / "library"), "suggest_threshold": 0.5}
    )
    library = get_library(owner=user)
    for relative, text in FILED.items():
        path = library.root_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    photo = library.root_path / "documents/identity/a-very-long-national-identity-card-front-side-scan-2026.jpg"
    photo.parent.mkdir(parents=True)
    Image.new("RGB", (120, 80), (30, 90, 160)).save(photo, "JPEG")
    actions.scan_library(library=library)
    return library


def _ask(page: Any, question: str, count: int) -> Any:
    page.fill("[data-testid=ask-input]", question)
    page.locator("[data-testid=ask-composer] button[type=submit]").click()
    run = page.locator("[data-testid=ask-run]").nth(count - 1)
    run.locator("[data-testid=ask-answer]").wait_for(timeout=30_000)
    return run


def _both_widths(page: Any, name: str) -> None:
    page.set_viewport_size({"width": 1280, "height": 900})
    screenshot(page, f"{name}-1280")
    assert horizontal_overflow(page) == 0, f"{name} scrolls sideways at 1280 px"
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, f"{name}-390")
    assert horizontal_overflow(page) == 0, f"{name} scrolls sideways at 390 px"
    page.set_viewport_size({"width": 1280, "height": 900})


def test_find_a_file_then_organize_and_move_it(
    prepared: Library, user: Any, asgi_server: str, browser_page: Any
) -> None:
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 900})
    login(page, asgi_server, user)

    page.goto(f"{asgi_server}/organize/")
    upload = prepared.root_path.parent / "april-statement.txt"
    upload.write_text("QNB Bank account statement for April: IBAN, card payments, closing balance.")
    page.set_input_files("[data-testid=org-file-input]", str(upload))
    page.locator("[data-testid=org-upload] button[type=submit]").click()
    page.locator("[data-testid=org-card]").first.wait_for(timeout=30_000)

    page.goto(f"{asgi_server}/ask/")
    found = _ask(page, "find my ID card photo", 1)
    card = found.locator("[data-testid=ask-file]").first
    assert "a-very-long-national-identity-card-front-side-scan-2026.jpg" in card.inner_text()
    assert card.locator("[data-testid=ask-file-folder]").inner_text() == "in documents/identity"
    # the thumbnail loads (waited for: the image request may still be in flight when the card is shown)
    page.wait_for_function(
        "img => img.complete && img.naturalWidth > 0", arg=card.locator("img").element_handle(), timeout=15_000
    )
    assert "1 file in the library matches" in found.locator("[data-testid=ask-answer]").inner_text()

    organized = _ask(page, "organize my inbox files", 2)
    suggestion = organized.locator("[data-testid=ask-suggestion]").first
    assert "april-statement.txt" in suggestion.inner_text()
    _both_widths(page, "ask-files")

    suggestion.locator("[data-testid=ask-suggestion-accept]").click()
    status = suggestion.locator("[data-testid=ask-suggestion-status]", has_text="Moved to")
    status.wait_for(timeout=30_000)
    assert "Moved to finance/bank (now finance/bank/april-statement.txt)" in status.inner_text()
    assert (prepared.root_path / "finance/bank/april-statement.txt").is_file()
    assert not (prepared.root_path / "inbox/april-statement.txt").exists()
