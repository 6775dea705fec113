"""Controls look alike in real Chromium against the production server, at 1280 and 390 px: a newcomer found
the IMAP "Test connection" smaller than the buttons beside it, and the Workspaces and Prompts name fields in the
browser's own small font (inputs written without type= missed the stylesheet)."""

from __future__ import annotations

from typing import Any

import pytest

from apps.accounts.actions import create_imap_account
from apps.orchestration.config_actions import create_prompt
from apps.workspaces.actions import create_user_workspace
from tests.browser import console_errors, horizontal_overflow, login, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FIELDS = (
    "main input:not([type=checkbox]):not([type=radio]):not([type=hidden]):not([type=file]):not([type=range]),"
    " main select, main textarea"
)
# Fields the stylesheet missed keep the browser's square corners (our fields have var(--radius)).
UNSTYLED = f"""() => [...document.querySelectorAll('{FIELDS}')].filter(el => el.getClientRects().length)
  .filter(el => getComputedStyle(el).borderTopLeftRadius !== '8px')
  .map(el => el.outerHTML.slice(0, 120))"""
# In a row of controls (a form's or a page's actions), those side by side are one height.
UNEVEN_ROWS = f"""() => [...document.querySelectorAll(
    'main .page-actions, main .inline-fields, main .prompt-new-row, main .playground-name, main .row-actions,'
    + ' main .form-actions')].flatMap(row => {{
  const controls = [...row.querySelectorAll('button:not(.link), a.button, {FIELDS.replace("main ", "")}')]
    .filter(el => el.getClientRects().length).map(el => ({{el, rect: el.getBoundingClientRect()}}));
  return controls.flatMap((a, i) => controls.slice(i + 1)
    .filter(b => Math.abs(a.rect.top + a.rect.height / 2 - b.rect.top - b.rect.height / 2) < 4)
    .filter(b => Math.abs(a.rect.height - b.rect.height) > 1.5)
    .map(b => `${{(a.el.textContent || a.el.name).trim()}} ${{Math.round(a.rect.height)}} px beside `
      + `${{(b.el.textContent || b.el.name).trim()}} ${{Math.round(b.rect.height)}} px`));
}})"""


def test_fields_are_styled_and_controls_in_a_row_are_one_height(user: Any, asgi_server: str, chromium: Any) -> None:
    account = create_imap_account(
        owner=user,
        name="Work",
        address="owner@example.com",
        host="127.0.0.1",
        port=1,
        security="none",
        username="owner",
        password="secret",
    )
    workspace = create_user_workspace(owner=user, label="Research desk")
    prompt = create_prompt(owner=user, name="Client support", messages=[("system", "You help clients.")])
    pages = {
        "accounts": "/mail/accounts/",
        "account": f"/mail/accounts/{account.pk}/",
        "workspaces": "/inbox/workspaces/",
        "workspace": f"/inbox/workspaces/{workspace.pk}/",
        "prompts": "/prompts/",
        "playground": f"/prompts/{prompt.pk}/",
        "filters": "/settings/filters/",
    }
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    errors = console_errors(page)
    login(page, asgi_server, user)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        for name, path in pages.items():
            page.goto(f"{asgi_server}{path}")
            assert page.evaluate(UNSTYLED) == [], (name, width)
            assert page.evaluate(UNEVEN_ROWS) == [], (name, width)
            assert horizontal_overflow(page) == 0, (name, width)
            screenshot(page, f"controls-{name}-{width}")
    assert errors == []
