"""Picking a local model server in Chromium at 1280 and 390 px (issue 39, item 1): the wizard lists the
servers found on loopback, one click fills the form, and the connection test shows the measured speed.
The production web server runs in a subprocess, so it is pointed at the test servers through the
environment (MAILAGENT_LOCAL_ENDPOINTS), as an operator would point it at non-default ports."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakes.ollama_server import FakeOllama
from tests.fakes.openai_server import FakeOpenAI, Reply

MODELS = ["llama3.2:3b", "qwen2.5:1.5b", "smollm2:135m"]


@pytest.fixture
def local_servers(monkeypatch: Any, fake_llm: FakeOpenAI) -> Iterator[tuple[FakeOllama, FakeOpenAI]]:
    with FakeOllama(MODELS) as ollama:
        monkeypatch.setenv(
            "MAILAGENT_LOCAL_ENDPOINTS", f"ollama=127.0.0.1:{ollama.port},llamacpp=127.0.0.1:{fake_llm.port}"
        )
        yield ollama, fake_llm  # type: ignore[misc]


@pytest.mark.browser
def test_pick_a_local_model_in_chromium(
    local_servers: tuple[FakeOllama, FakeOpenAI], asgi_server: str, chromium: Any, user: Any
) -> None:
    from tests.browser import console_errors, horizontal_overflow, login, screenshot

    ollama, llamacpp = local_servers
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors = console_errors(page)
    login(page, asgi_server, user)
    page.goto(f"{asgi_server}/setup/model/")
    page.wait_for_selector("[data-testid=local-endpoint][data-kind=ollama]")
    text = page.inner_text("[data-testid=local-endpoints]")
    assert f"Found Ollama at 127.0.0.1:{ollama.port} with 3 models" in text
    assert f"Found llama.cpp server at 127.0.0.1:{llamacpp.port} with 1 model" in text
    screenshot(page, "local-models-wizard-1280")
    assert horizontal_overflow(page) == 0
    # One click on the llama.cpp server's model fills the form (URL, model, CPU defaults).
    page.click("[data-kind=llamacpp] [data-testid=use-local-model]")
    page.wait_for_selector("[data-testid=local-endpoints]")
    assert page.input_value("input[name=base_url]") == llamacpp.base_url
    assert page.input_value("input[name=model]") == "fake-model"
    assert page.input_value("input[name=timeout_seconds]") == "300"
    assert page.input_value("input[name=max_concurrency]") == "1"
    assert page.input_value("select[name=tool_call_mode]") == "json_schema"
    llamacpp.script(Reply.text("OK"), Reply(content="1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20", delay=0.2))
    page.click("[data-testid=test-connection]")
    speed = page.wait_for_selector("[data-testid=probe-speed]")
    assert speed.inner_text().startswith("Speed: about ") and "tokens/s (13 tokens in " in speed.inner_text()
    screenshot(page, "local-models-tested-1280")
    page.click("button:has-text('Save model and continue')")
    page.wait_for_selector("[data-testid=wizard-step-director]")

    phone = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    small = phone.new_page()
    errors += console_errors(small)
    login(small, asgi_server, user)
    small.goto(f"{asgi_server}/settings/models/")
    small.wait_for_selector("[data-testid=local-endpoint][data-kind=ollama]")
    screenshot(small, "local-models-settings-390")
    assert horizontal_overflow(small) == 0
    # Typing or choosing a base URL on this machine applies the CPU defaults to fields still at the generic
    # ones (a value the user changed stays), and a URL elsewhere restores them.
    assert small.input_value("input[name=timeout_seconds]") == "60"
    small.fill("input[name=max_concurrency]", "3")
    small.select_option("select[name=provider]", "ollama")
    assert small.input_value("input[name=base_url]") == "http://127.0.0.1:11434/v1"
    assert small.input_value("input[name=timeout_seconds]") == "300"
    assert small.input_value("select[name=tool_call_mode]") == "json_schema"
    assert small.input_value("input[name=max_output_tokens]") == "512"
    assert small.input_value("input[name=max_concurrency]") == "3"
    assert small.is_visible("[data-local-defaults-note]")
    screenshot(small, "local-models-defaults-390")
    small.select_option("select[name=provider]", "openai")
    assert small.input_value("input[name=base_url]") == "https://api.openai.com/v1"
    assert small.input_value("input[name=timeout_seconds]") == "60"
    assert small.input_value("select[name=tool_call_mode]") == "auto"
    assert not small.is_visible("[data-local-defaults-note]")
    small.fill("input[name=base_url]", "http://192.168.1.20:11434/v1")  # a model server on the local network
    assert small.input_value("input[name=timeout_seconds]") == "300"
    assert small.input_value("input[name=max_concurrency]") == "3"  # still the user's own value
    small.fill("input[name=base_url]", "https://api.example.com/v1")
    assert small.input_value("input[name=timeout_seconds]") == "60"
    small.fill("input[name=base_url]", "http://localhost:8080/v1")
    assert small.input_value("input[name=max_retries]") == "1"
    small.click("[data-kind=ollama] [data-testid=use-local-model]:has-text('qwen2.5:1.5b')")
    small.wait_for_selector("[data-testid=local-endpoints]")
    assert small.input_value("input[name=model]") == "qwen2.5:1.5b"
    assert small.input_value("input[name=name]") == "Ollama: qwen2.5:1.5b"
    screenshot(small, "local-models-picked-390")
    assert horizontal_overflow(small) == 0
    assert errors == []
