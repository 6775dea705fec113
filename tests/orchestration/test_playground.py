"""The prompt playground: preview against a picked email, unknown variables refused on save (nothing
stored), "Try it" against the fake OpenAI server recorded as ProviderEvents, duplicate as template, and
another user's prompts, emails and model configurations are 404."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from apps.llm.models import ApiConfig
from apps.orchestration.config_actions import create_prompt
from apps.orchestration.models import Prompt, ProviderEvent
from tests.fakes.openai_server import FakeOpenAI, Reply

pytestmark = pytest.mark.django_db


@pytest.fixture
def prompt(user: Any) -> Prompt:
    return create_prompt(
        owner=user,
        name="Support",
        messages=[("system", "You help {{director.name}}."), ("user", "Subject: {{email.subject}}")],
    )


def blocks(*pairs: tuple[str, str], **extra: Any) -> dict[str, Any]:
    return {"role": [r for r, _ in pairs], "content": [c for _, c in pairs], **extra}


def test_page_lists_blocks_variables_and_choices(logged_in_client: Any, prompt: Prompt, store_mail: Any) -> None:
    store_mail(subject="Invoice 42 overdue")
    assert logged_in_client.get(reverse("prompts:list")).status_code == 200
    page = logged_in_client.get(reverse("prompts:playground", args=[prompt.pk])).content.decode()
    assert page.count('data-testid="prompt-block"') == 3  # two messages and the template for new ones
    assert "Subject: {{email.subject}}" in page
    assert '<option value="email.subject">' in page and "Invoice 42 overdue" in page
    assert "No model configured yet" in page


def test_preview_resolves_against_the_picked_email(logged_in_client: Any, prompt: Prompt, store_mail: Any) -> None:
    message = store_mail(subject="Invoice 42 overdue", sender="Ada <ada@example.com>", body="Please pay.\n")
    response = logged_in_client.post(
        reverse("prompts:preview", args=[prompt.pk]),
        blocks(
            ("system", "Reply for {{director.name}} on {{today}}."),
            ("user", "From {{email.from}}: {{ email.subject }}\n{{email.body}}"),
            ("tool", '{"ok": true}'),
            ("user", "{{email.subjet}} {{client.name}}"),
            email=str(message.pk),
        ),
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert "From Ada &lt;ada@example.com&gt;: Invoice 42 overdue\nPlease pay." in html
    assert "(the director&#x27;s name)" in html  # run-only values are shown as stand-ins
    assert html.count('data-testid="preview-message"') == 4
    assert "not sent: a tool message answers a call, so put an assistant message written as" in html
    assert "unknown: {{email.subjet}}, {{client.name}}" in html


def test_unknown_variables_are_refused_on_save_and_nothing_is_stored(logged_in_client: Any, prompt: Prompt) -> None:
    before = [(m.role, m.content) for m in prompt.messages.all()]
    response = logged_in_client.post(
        reverse("prompts:save", args=[prompt.pk]),
        blocks(("system", "Hello {{email.subjet}}"), ("user", ""), name="Renamed"),
    )
    html = response.content.decode()
    assert response.status_code == 400
    assert "message 1: unknown variable {{email.subjet}}" in html and "message 2 is empty" in html
    assert "Hello {{email.subjet}}" in html  # the unsaved text comes back to be fixed
    prompt.refresh_from_db()
    assert prompt.name == "Support" and [(m.role, m.content) for m in prompt.messages.all()] == before

    saved = logged_in_client.post(
        reverse("prompts:save", args=[prompt.pk]),
        blocks(("user", "Second {{email.body}}"), ("system", "First"), ("assistant", "Ok."), name="Renamed"),
    )
    assert saved.status_code == 302
    prompt.refresh_from_db()
    assert prompt.name == "Renamed"
    assert [(m.order, m.role, m.content) for m in prompt.messages.all()] == [
        (0, "user", "Second {{email.body}}"),
        (1, "system", "First"),
        (2, "assistant", "Ok."),
    ]


def test_try_it_sends_the_resolved_messages_and_records_provider_events(
    logged_in_client: Any, prompt: Prompt, store_mail: Any, fake_llm: FakeOpenAI, api_config: ApiConfig
) -> None:
    message = store_mail(subject="Where is my order?")
    fake_llm.script(Reply.text("Your order ships tomorrow."))
    response = logged_in_client.post(
        reverse("prompts:try", args=[prompt.pk]),
        blocks(("system", "Be brief."), ("user", "{{email.subject}}"), email=str(message.pk), api_config=api_config.pk),
    )
    html = response.content.decode()
    assert 'data-testid="try-reply"' in html and "Your order ships tomorrow." in html
    (sent,) = fake_llm.chat_requests()
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Where is my order?"},
    ]
    assert "tools" not in sent
    events = list(ProviderEvent.objects.filter(prompt=prompt).order_by("pk"))
    assert [(e.kind, e.run_id, e.thread_id) for e in events] == [("request", None, None), ("response", None, None)]

    fake_llm.script(Reply.failure(500, "upstream exploded"))
    failed = logged_in_client.post(
        reverse("prompts:try", args=[prompt.pk]), blocks(("user", "Hi"), api_config=api_config.pk)
    ).content.decode()
    assert 'data-testid="try-error"' in failed
    assert ProviderEvent.objects.filter(prompt=prompt, kind="error").count() == 1  # tried once: no retries
    no_config = logged_in_client.post(reverse("prompts:try", args=[prompt.pk]), blocks(("user", "Hi"))).content
    assert b"Choose a model configuration" in no_config


def test_duplicate_as_template(logged_in_client: Any, prompt: Prompt) -> None:
    response = logged_in_client.post(reverse("prompts:duplicate", args=[prompt.pk]), {"as_template": "on"})
    copy = Prompt.objects.exclude(pk=prompt.pk).get()
    assert response["Location"] == reverse("prompts:playground", args=[copy.pk])
    assert copy.is_template and copy.name == "Support (template)"
    assert [(m.role, m.content) for m in copy.messages.all()] == [(m.role, m.content) for m in prompt.messages.all()]


def test_other_users_prompts_emails_and_models_are_404(
    logged_in_client: Any, prompt: Prompt, store_mail: Any, api_config: ApiConfig, fake_llm: FakeOpenAI
) -> None:
    message = store_mail(subject="Mine")
    intruder = get_user_model().objects.create_user(username="intruder", email="intruder@example.com")
    theirs = create_prompt(owner=intruder, name="Theirs", messages=[("system", "x")])
    for name in ("playground",):
        assert logged_in_client.get(reverse(f"prompts:{name}", args=[theirs.pk])).status_code == 404
    for name in ("save", "preview", "try", "duplicate"):
        response = logged_in_client.post(reverse(f"prompts:{name}", args=[theirs.pk]), blocks(("user", "x"), name="x"))
        assert response.status_code == 404, name
    logged_in_client.force_login(intruder)
    own = reverse("prompts:try", args=[theirs.pk])
    assert logged_in_client.post(own, blocks(("user", "x"), email=str(message.pk))).status_code == 404
    assert logged_in_client.post(own, blocks(("user", "x"), api_config=api_config.pk)).status_code == 404
    assert fake_llm.chat_requests() == []
    assert Prompt.objects.get(pk=theirs.pk).messages.get().content == "x"


CALL = '{"tool": "lookup_order", "arguments": {"subject": "{{email.subject}}"}}'


def test_tool_blocks_are_sent_as_the_results_of_the_assistant_call_before_them(
    logged_in_client: Any, prompt: Prompt, store_mail: Any, fake_llm: FakeOpenAI, api_config: ApiConfig
) -> None:
    # Tool blocks used to be stored and shown but never sent: now the assistant block before them is the call.
    message = store_mail(subject="Where is order 7?")
    example = (
        ("system", "Answer order questions."),
        ("user", "Where is order 3?"),
        ("assistant", CALL),
        ("tool", '{"status": "shipped"}'),
        ("assistant", "Order 3 has shipped."),
        ("user", "{{email.subject}}"),
    )
    preview = logged_in_client.post(
        reverse("prompts:preview", args=[prompt.pk]), blocks(*example, email=str(message.pk))
    ).content.decode()
    assert "sent as a call: lookup_order" in preview and "sent as the result of lookup_order" in preview
    assert "not sent" not in preview

    fake_llm.script(Reply.text("Order 7 ships tomorrow."))
    tried = logged_in_client.post(
        reverse("prompts:try", args=[prompt.pk]), blocks(*example, email=str(message.pk), api_config=api_config.pk)
    ).content.decode()
    assert "Order 7 ships tomorrow." in tried
    (sent,) = fake_llm.chat_requests()
    call = {
        "id": "call_example_3_1",
        "type": "function",
        "function": {"name": "lookup_order", "arguments": '{"subject": "Where is order 7?"}'},
    }
    assert sent["messages"] == [
        {"role": "system", "content": "Answer order questions."},
        {"role": "user", "content": "Where is order 3?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_example_3_1", "content": '{"status": "shipped"}'},
        {"role": "assistant", "content": "Order 3 has shipped."},
        {"role": "user", "content": "Where is order 7?"},
    ]

    saved = logged_in_client.post(reverse("prompts:save", args=[prompt.pk]), blocks(*example, name="Orders"))
    assert saved.status_code == 302
    assert [m.role for m in prompt.messages.all()] == ["system", "user", "assistant", "tool", "assistant", "user"]


def test_a_tool_block_that_answers_no_call_is_refused_on_save(logged_in_client: Any, prompt: Prompt) -> None:
    before = [(m.role, m.content) for m in prompt.messages.all()]
    plain = logged_in_client.post(
        reverse("prompts:save", args=[prompt.pk]),
        blocks(("user", "Hi"), ("assistant", "Looking it up."), ("tool", "shipped"), name="Orders"),
    )
    assert plain.status_code == 400
    assert "message 3 (tool) is not sent: write the assistant message before it as the call it answers" in (
        plain.content.decode()
    )
    two_calls = f"[{CALL}, {CALL}]"
    short = logged_in_client.post(
        reverse("prompts:save", args=[prompt.pk]),
        blocks(("user", "Hi"), ("assistant", two_calls), ("tool", "shipped"), name="Orders"),
    )
    assert short.status_code == 400
    assert "makes 2 calls and 1 tool message answers them" in short.content.decode()
    assert [(m.role, m.content) for m in prompt.messages.all()] == before
