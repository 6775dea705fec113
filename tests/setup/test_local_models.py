"""Local model servers in the wizard and Settings → Models (issue 39, item 1), through the real URLconf: the
servers found on loopback are listed with their models, one click fills the API config form (URL, model and
CPU-friendly defaults), saving keeps them, and the connection test shows the measured speed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
from django.test import override_settings
from django.urls import reverse

from apps.llm.models import ApiConfig
from tests.fakes.ollama_server import FakeOllama
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.services import free_port

pytestmark = pytest.mark.django_db

MODELS = ["llama3.2:3b", "qwen2.5:1.5b", "smollm2:135m"]


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    with (
        FakeOllama(MODELS) as server,
        override_settings(
            LLM_LOCAL_ENDPOINTS=[
                ("ollama", "Ollama", f"127.0.0.1:{server.port}"),
                ("llamacpp", "llama.cpp server", f"127.0.0.1:{free_port()}"),
            ]
        ),
    ):
        yield server  # type: ignore[misc]


def pick_link(ollama: FakeOllama, model: str, page: str = "") -> str:
    query = urlencode({"local_kind": "ollama", "local_url": f"http://127.0.0.1:{ollama.port}/v1", "local_model": model})
    return f"{page or reverse('settings:models')}?{query}"


@pytest.mark.parametrize("wizard", [False, True])
def test_found_servers_are_listed_with_one_link_per_model(
    logged_in_client: Any, ollama: FakeOllama, wizard: bool
) -> None:
    url = reverse("settings:local_models") + ("?for=wizard" if wizard else "")
    response = logged_in_client.get(url, HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert response.status_code == 200
    assert f"Found Ollama at 127.0.0.1:{ollama.port} with 3 models" in page
    target = reverse("setup:step", args=["model"]) if wizard else reverse("settings:models")
    for model in MODELS:
        assert f"Use {model}</a>" in page
    assert f'href="{target}?local_kind=ollama&amp;local_url=http%3A//127.0.0.1%3A{ollama.port}/v1' in page
    # The page that holds the form loads the list after rendering (a slow port never delays the page).
    holder = logged_in_client.get(target)
    assert reverse("settings:local_models") in holder.content.decode()


def test_nothing_found_says_where_it_looked(logged_in_client: Any) -> None:
    closed = free_port()
    with override_settings(LLM_LOCAL_ENDPOINTS=[("ollama", "Ollama", f"127.0.0.1:{closed}")]):
        page = logged_in_client.get(reverse("settings:local_models")).content.decode()
    assert "No model server found on this machine" in page and f"Ollama 127.0.0.1:{closed}" in page


@pytest.mark.parametrize("wizard", [False, True])
def test_one_click_fills_the_form_with_the_model_and_cpu_defaults(
    logged_in_client: Any, ollama: FakeOllama, wizard: bool
) -> None:
    page_url = reverse("setup:step", args=["model"]) if wizard else reverse("settings:models")
    response = logged_in_client.get(pick_link(ollama, "qwen2.5:1.5b", page_url))
    form = response.context["form"]
    assert form.initial == {
        "provider": "ollama",
        "name": "Ollama: qwen2.5:1.5b",
        "base_url": f"http://127.0.0.1:{ollama.port}/v1",
        "model": "qwen2.5:1.5b",
        "timeout_seconds": 300,
        "max_concurrency": 1,
        "max_retries": 1,
        "tool_call_mode": "json_schema",
        "max_output_tokens": 512,
    }
    html = response.content.decode()
    assert f'value="http://127.0.0.1:{ollama.port}/v1"' in html and 'value="qwen2.5:1.5b"' in html


def test_a_link_cannot_prefill_a_host_off_this_machine(logged_in_client: Any) -> None:
    query = urlencode({"local_kind": "ollama", "local_url": "https://evil.example/v1", "local_model": "x"})
    response = logged_in_client.get(f"{reverse('settings:models')}?{query}")
    assert response.context["form"].initial == {}


def test_saving_the_picked_model_keeps_the_cpu_defaults(logged_in_client: Any, user: Any, ollama: FakeOllama) -> None:
    form = logged_in_client.get(pick_link(ollama, "llama3.2:3b")).context["form"]
    data = {name: value for name, value in form.initial.items()}
    data.update(api_key="", input_cost_per_mtok="0", output_cost_per_mtok="0")
    response = logged_in_client.post(reverse("settings:models"), data)
    assert response.status_code == 302
    config = ApiConfig.objects.get(owner=user)
    assert (config.base_url, config.model, config.timeout_seconds, config.max_concurrency) == (
        f"http://127.0.0.1:{ollama.port}/v1",
        "llama3.2:3b",
        300,
        1,
    )
    assert (config.tool_call_mode, config.max_output_tokens, config.max_retries) == ("json_schema", 512, 1)
    # Editing shows and keeps them too.
    edit = logged_in_client.get(reverse("settings:model_edit", args=[config.pk])).context["form"]
    assert edit.initial["tool_call_mode"] == "json_schema" and edit.initial["max_output_tokens"] == 512


def test_the_connection_test_shows_the_measured_speed(logged_in_client: Any, fake_llm: FakeOpenAI) -> None:
    fake_llm.script(Reply.text("OK"), Reply(content="1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20", delay=0.2))
    data = {
        "provider": "custom",
        "name": "Local",
        "base_url": fake_llm.base_url,
        "model": "fake-model",
        "timeout_seconds": 30,
        "max_retries": 0,
        "max_concurrency": 1,
        "input_cost_per_mtok": "0",
        "output_cost_per_mtok": "0",
    }
    page = logged_in_client.post(reverse("settings:model_test"), data, HTTP_HX_REQUEST="true").content.decode()
    assert "Connection works." in page and "Speed: about " in page and "13 tokens in 0." in page
    assert [r["max_tokens"] for r in fake_llm.chat_requests()] == [1, 32]
    # A server that cannot generate (here: no reply left) still passes the connection test, without a number.
    fake_llm.script(Reply.text("OK"))
    page = logged_in_client.post(reverse("settings:model_test"), data, HTTP_HX_REQUEST="true").content.decode()
    assert "Connection works." in page and "Speed not measured:" in page and "tokens/s" not in page


def test_the_form_carries_both_sets_of_defaults_for_the_page_script(logged_in_client: Any) -> None:
    html = logged_in_client.get(reverse("settings:models")).content.decode()
    assert 'name="timeout_seconds" value="60"' in html
    assert 'data-local-default="300" data-generic-default="60"' in html
    assert 'data-local-default="json_schema" data-generic-default="auto"' in html
    assert html.count('data-local-default="1" data-generic-default="4"') == 2  # parallel requests, retries
