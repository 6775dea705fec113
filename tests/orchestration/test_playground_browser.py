"""The prompt playground in Chromium against the production server: blocks added, a variable inserted from
the menu, an unknown one flagged and refused before saving, reordered by keyboard and by drag, saved, the
live preview and Try it against the fake OpenAI server; at 1280 and 390 px without sideways scrolling."""

from __future__ import annotations

from typing import Any

import pytest

from apps.llm.models import ApiConfig
from apps.orchestration.config_actions import create_prompt
from apps.orchestration.models import Prompt, ProviderEvent
from tests.browser import horizontal_overflow, login, screenshot
from tests.fakes.openai_server import FakeOpenAI, Reply

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def contents(page: Any) -> list[str]:
    return list(page.eval_on_selector_all("#prompt-blocks textarea", "areas => areas.map(a => a.value)"))


def test_playground_edit_preview_try_at_two_widths(
    asgi_server: str, chromium: Any, user: Any, store_mail: Any, fake_llm: FakeOpenAI, api_config: ApiConfig
) -> None:
    store_mail(subject="Invoice 42 overdue", sender="Ada <ada@example.com>")
    prompt = create_prompt(owner=user, name="Support", messages=[("system", "You answer for {{director.name}}.")])
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    login(page, asgi_server, user)
    page.goto(f"{asgi_server}/prompts/{prompt.pk}/")
    preview = page.locator("[data-testid=preview-message]")
    preview.first.wait_for()
    assert "(the director's name)" in preview.first.inner_text()

    page.click("[data-testid=add-block]")
    blocks = page.locator("#prompt-blocks [data-testid=prompt-block]")
    assert blocks.count() == 2
    new_area = blocks.nth(1).locator("textarea")
    new_area.fill("About: ")
    page.select_option("[data-testid=variable-menu]", "email.subject")
    assert new_area.input_value() == "About: {{email.subject}}"
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=preview-message]')].some("
        "m => m.innerText.includes('About: Invoice 42 overdue'))"
    )

    new_area.press("End")
    new_area.type(" for {{client.name}}")
    flag = blocks.nth(1).locator("[data-testid=unknown-variables]")
    assert flag.is_visible() and "{{client.name}}" in flag.inner_text()
    page.click("[data-testid=save]")  # refused in the page: nothing is sent, the flag stays
    assert page.url.endswith(f"/prompts/{prompt.pk}/") and flag.is_visible()
    assert [m.content for m in Prompt.objects.get(pk=prompt.pk).messages.all()] == ["You answer for {{director.name}}."]
    new_area.fill("About: {{email.subject}}")
    assert not flag.is_visible()

    blocks.nth(1).locator(".drag-handle").focus()
    page.keyboard.press("Alt+ArrowUp")
    assert contents(page) == ["About: {{email.subject}}", "You answer for {{director.name}}."]
    below = blocks.nth(1).bounding_box()
    assert below is not None  # dropped on the lower half of the second block: the first goes after it
    blocks.nth(0).locator(".drag-handle").drag_to(blocks.nth(1), target_position={"x": 20, "y": below["height"] - 6})
    assert contents(page) == ["You answer for {{director.name}}.", "About: {{email.subject}}"]
    screenshot(page, "playground-1280")

    fake_llm.script(Reply.text("I will look into invoice 42."))
    page.click("[data-testid=try]")
    page.locator("[data-testid=try-reply]").wait_for()
    assert "I will look into invoice 42." in page.inner_text("[data-testid=try-reply]")
    assert fake_llm.chat_requests()[0]["messages"][1] == {"role": "user", "content": "About: Invoice 42 overdue"}
    assert ProviderEvent.objects.filter(prompt=prompt, kind="response").count() == 1

    page.click("[data-testid=save]")
    page.wait_for_url(f"{asgi_server}/prompts/{prompt.pk}/")
    page.locator(".flash").wait_for()
    assert [(m.role, m.content) for m in Prompt.objects.get(pk=prompt.pk).messages.all()] == [
        ("system", "You answer for {{director.name}}."),
        ("user", "About: {{email.subject}}"),
    ]

    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    page.locator("[data-testid=preview-message]").first.wait_for()
    assert horizontal_overflow(page) == 0
    screenshot(page, "playground-390")


@pytest.mark.parametrize("width", [1280, 390])
def test_a_tool_example_is_previewed_and_tried_as_a_call_and_its_result(
    width: int, asgi_server: str, chromium: Any, user: Any, fake_llm: FakeOpenAI, api_config: ApiConfig
) -> None:
    call = '{"tool": "lookup_order", "arguments": {"order": "3"}}'
    prompt = create_prompt(
        owner=user,
        name="Orders",
        messages=[("user", "Where is order 3?"), ("assistant", call), ("tool", "shipped"), ("user", "And order 7?")],
    )
    page = chromium.new_page(viewport={"width": width, "height": 900})
    login(page, asgi_server, user)
    page.goto(f"{asgi_server}/prompts/{prompt.pk}/")
    notes = page.locator("[data-testid=preview-note]")
    notes.nth(1).wait_for()
    assert notes.all_inner_texts() == ["sent as a call: lookup_order", "sent as the result of lookup_order"]
    # Made a plain reply, the tool message answers no call: the preview says so and what to write instead.
    page.locator("#prompt-blocks textarea").nth(1).fill("Let me look.")
    page.locator("[data-testid=preview-note]", has_text="not sent").wait_for()
    page.locator("#prompt-blocks textarea").nth(1).fill(call)
    page.locator("[data-testid=preview-note]", has_text="sent as the result").wait_for()
    fake_llm.script(Reply.text("Order 7 ships tomorrow."))
    page.click("[data-testid=try]")
    page.locator("[data-testid=try-reply]").wait_for()
    assert [m["role"] for m in fake_llm.chat_requests()[0]["messages"]] == ["user", "assistant", "tool", "user"]
    screenshot(page, f"playground-tool-{width}")
    assert horizontal_overflow(page) == 0
