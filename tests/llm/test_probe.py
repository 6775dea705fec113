"""apps.llm.probe.test_connection and the worded failures, against real loopback servers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from apps.llm import client as llm_client
from apps.llm.errors import describe_failure, endpoint_name, provider_label
from apps.llm.probe import test_connection as probe
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.services import free_port


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server  # type: ignore[misc]


def test_a_working_endpoint_answers_one_token(fake: FakeOpenAI) -> None:
    fake.script(Reply.text("OK"))
    result = probe(base_url=fake.base_url, api_key="sk-probe", model="fake-model", name="Fake")
    assert result.ok and result.status == 200 and result.reply == "OK" and result.category == ""
    assert result.message.startswith(f"The OpenAI-compatible endpoint at {fake.base_url} (API config “Fake”) answered")
    [request] = fake.chat_requests()
    assert request["max_tokens"] == 1 and request["model"] == "fake-model"
    assert fake.api_keys == ["Bearer sk-probe"]
    # A probe with a typed key keeps no client (and connection pool) or limit around afterwards.
    assert not [key for key in llm_client._clients if key[:2] == (fake.base_url, "sk-probe")]
    assert "probe" not in llm_client._semaphores


def test_a_closed_port_is_named_and_not_retried() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    result = probe(base_url=url, api_key="", model="llama3.2")
    assert not result.ok and result.category == "refused" and result.status is None
    assert result.message == (
        f"The OpenAI-compatible endpoint at {url} refused the connection: is it running? "
        "Check the host and port of the base URL."
    )


@pytest.mark.parametrize(
    ("reply", "category", "words"),
    [
        (Reply.failure(401, "Incorrect API key provided"), "auth", "rejected the API key (HTTP 401)"),
        (Reply.failure(404, "model 'nope' not found"), "bad_request", "answered HTTP 404: “model 'nope' not found”"),
        (Reply.failure(503, "overloaded"), "server", "failed with HTTP 503: “overloaded”"),
    ],
)
def test_http_failures_say_status_and_what_to_fix(fake: FakeOpenAI, reply: Reply, category: str, words: str) -> None:
    fake.script(reply, Reply.text("never reached"))
    result = probe(base_url=fake.base_url, api_key="k", model="nope")
    assert not result.ok and result.category == category and result.status == reply.status
    assert f"at {fake.base_url}" in result.message and words in result.message
    assert len(fake.chat_requests()) == 1  # the probe never retries


def test_a_blank_model_is_refused_before_any_call(fake: FakeOpenAI) -> None:
    result = probe(base_url=fake.base_url, api_key="", model="  ")
    assert not result.ok and "model name" in result.message and fake.chat_requests() == []


def test_provider_is_named_from_the_url() -> None:
    assert provider_label("http://127.0.0.1:11434/v1") == "Ollama"
    assert provider_label("") == "OpenAI"
    assert provider_label("https://myres.openai.azure.com/openai/v1/") == "Azure OpenAI"
    assert endpoint_name("http://localhost:1234/v1/") == "LM Studio at http://localhost:1234/v1"


def test_ollama_refusal_reads_like_the_issue() -> None:
    # 11434 may be taken on a developer's machine: the wording is checked through the describer directly.
    text = describe_failure(
        ConnectionRefusedError(111, "Connection refused"),
        category="refused",
        status=None,
        base_url="http://127.0.0.1:11434/v1",
        model="llama3.2",
        timeout=60,
    )
    assert text.startswith("Ollama at http://127.0.0.1:11434/v1 refused the connection: is it running (ollama serve)?")


def test_speed_is_the_servers_completion_tokens_over_the_wall_time(fake: FakeOpenAI) -> None:
    from apps.llm.probe import SPEED_MAX_TOKENS, measure_speed

    # 120 characters: 31 completion tokens by this server's count, answered after 0.5 s.
    fake.script(Reply(content=" ".join(str(n) for n in range(1, 45))[:120], delay=0.5))
    speed = measure_speed(base_url=fake.base_url, api_key="", model="fake-model")
    [request] = fake.chat_requests()
    assert request["max_tokens"] == SPEED_MAX_TOKENS and request["temperature"] == 0
    assert speed.ok and speed.completion_tokens == 31
    assert speed.elapsed_ms >= 500
    assert speed.tokens_per_second == pytest.approx(31 / (speed.elapsed_ms / 1000), rel=0.02)
    assert speed.tokens_per_second < 62  # the delay is counted: at most 31 tokens / 0.5 s
    assert speed.message.startswith(f"about {speed.tokens_per_second:.1f} tokens/s (31 tokens in ")
    assert speed.message.endswith(" s, prompt processing included)")


def test_no_speed_without_usage_or_when_the_call_fails(fake: FakeOpenAI) -> None:
    from apps.llm.probe import measure_speed

    fake.script(Reply.failure(500, "model crashed"))
    failed = measure_speed(base_url=fake.base_url, api_key="", model="fake-model")
    assert not failed.ok and failed.message.startswith("Speed not measured: ") and "500" in failed.message
    assert failed.tokens_per_second == 0.0
