"""apps.llm against the scripted OpenAI-compatible server over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from apps.llm import LLMConfig, LLMError, ProviderEventData, Tool, ToolFailure, chat, redact, run_tool_loop
from tests.fakes.openai_server import FakeOpenAI, Reply

pytestmark = pytest.mark.django_db


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server  # type: ignore[misc]


def config(fake: FakeOpenAI, **overrides: Any) -> LLMConfig:
    values: dict[str, Any] = {
        "key": f"test:{fake.port}",
        "base_url": fake.base_url,
        "api_key": "sk-test-secret",
        "model": "fake-model",
        "timeout": 5.0,
        "backoff_base": 0.01,
    }
    values.update(overrides)
    return LLMConfig(**values)


def test_chat_records_request_and_response_with_usage(fake: FakeOpenAI) -> None:
    fake.script(Reply.text("Hello there."))
    events: list[ProviderEventData] = []
    result = chat(config(fake), [{"role": "user", "content": "hi"}], events=events.append)
    assert result.content == "Hello there." and result.tool_calls == []
    assert [e.kind for e in events] == ["request", "response"]
    assert events[1].usage["total_tokens"] > 0 and events[1].latency_ms is not None
    assert fake.api_keys[-1] == "Bearer sk-test-secret"
    assert "sk-test-secret" not in repr([e.payload for e in events])


def test_429_twice_then_success_backs_off_and_honours_retry_after(fake: FakeOpenAI) -> None:
    fake.script(Reply.failure(429, retry_after="0.05"), Reply.failure(429, retry_after="0.05"), Reply.text("ok"))
    slept: list[float] = []
    events: list[ProviderEventData] = []
    result = chat(config(fake), [{"role": "user", "content": "x"}], events=events.append, sleep=slept.append)
    assert result.content == "ok" and result.attempts == 3
    assert slept == [0.05, 0.05]
    assert [(e.kind, e.category) for e in events if e.kind == "error"] == [
        ("error", "rate_limited"),
        ("error", "rate_limited"),
    ]


def test_persistent_500_raises_with_category_after_retries(fake: FakeOpenAI) -> None:
    fake.script(*[Reply.failure(500)] * 3)
    with pytest.raises(LLMError) as caught:
        chat(config(fake, max_retries=2), [{"role": "user", "content": "x"}], sleep=lambda s: None)
    assert caught.value.category == "server" and caught.value.status == 500 and caught.value.attempts == 3


def test_bad_request_is_not_retried(fake: FakeOpenAI) -> None:
    fake.script(Reply.failure(400), Reply.text("never reached"))
    with pytest.raises(LLMError) as caught:
        chat(config(fake), [{"role": "user", "content": "x"}], sleep=lambda s: None)
    assert caught.value.category == "bad_request" and caught.value.attempts == 1


def test_timeout_is_categorised(fake: FakeOpenAI) -> None:
    fake.script(Reply(content="late", delay=1.0))
    with pytest.raises(LLMError) as caught:
        chat(config(fake, timeout=0.2, max_retries=0), [{"role": "user", "content": "x"}])
    assert caught.value.category == "timeout"


def test_a_refused_connection_fails_at_once_naming_the_endpoint() -> None:
    from tests.services import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"
    dead = LLMConfig(key="dead", base_url=url, api_key="", model="m", max_retries=4, name="Local")
    slept: list[float] = []
    events: list[ProviderEventData] = []
    with pytest.raises(LLMError) as caught:
        chat(dead, [{"role": "user", "content": "x"}], sleep=slept.append, events=events.append)
    assert caught.value.category == "refused" and caught.value.attempts == 1 and slept == []
    assert str(caught.value).startswith(f"The OpenAI-compatible endpoint at {url} (API config “Local”) refused")
    assert "is it running?" in str(caught.value) and caught.value.detail == "APIConnectionError: Connection error."
    assert [e.kind for e in events] == ["request", "error"] and events[1].error == str(caught.value)


class AddArgs(BaseModel):
    a: int
    b: int


def test_tool_loop_validates_arguments_and_reports_errors_to_the_model(fake: FakeOpenAI) -> None:
    def add(args: AddArgs) -> dict[str, int]:
        if args.a < 0:
            raise ToolFailure("negative numbers are not supported", hint="use a >= 0")
        return {"sum": args.a + args.b}

    fake.script(
        Reply.calls(("add", {"a": 2, "b": 3}), ("add", '{"a": 1,'), ("add", {"a": "x"}), ("nope", {})),
        Reply.calls(("add", {"a": -1, "b": 1})),
        Reply.text("The sum is 5."),
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": "add 2 and 3"}]
    outcome = run_tool_loop(config(fake), messages, [Tool("add", "Add two integers", AddArgs, add)], step_limit=5)
    assert outcome.reason == "answered" and outcome.final == "The sum is 5." and outcome.steps == 3
    assert [r.success for r in outcome.records] == [True, False, False, False, False]
    errors = [str(r.error) for r in outcome.records[1:]]
    assert errors[0].startswith("invalid arguments: arguments are not valid JSON")
    assert errors[1].startswith("invalid arguments: a: Input should be a valid integer")
    assert errors[2] == "unknown tool 'nope'; available: add"
    assert errors[3] == "negative numbers are not supported"
    # Canonical shape: each assistant tool_calls message is followed by one tool message per call id.
    assistant = messages[1]
    ids = [call["id"] for call in assistant["tool_calls"]]
    assert [m["tool_call_id"] for m in messages[2:6]] == ids
    assert '"hint": "use a >= 0"' in messages[7]["content"]
    request = fake.chat_requests()[0]
    assert request["tools"][0]["function"]["parameters"]["required"] == ["a", "b"]


def test_tool_loop_stops_at_the_step_limit(fake: FakeOpenAI) -> None:
    fake.script(*[Reply.calls(("add", {"a": 1, "b": 1}))] * 5)
    outcome = run_tool_loop(
        config(fake),
        [{"role": "user", "content": "loop"}],
        [Tool("add", "Add", AddArgs, lambda args: args.a + args.b)],
        step_limit=3,
    )
    assert outcome.reason == "step_limit" and outcome.steps == 3 and outcome.final is None
    assert len(fake.chat_requests()) == 3


def test_redact_hides_secrets_and_shortens_long_text() -> None:
    value = redact({"api_key": "x", "nested": [{"Authorization": "Bearer y", "text": "z" * 5000}]})
    assert value["api_key"] == "[redacted]" and value["nested"][0]["Authorization"] == "[redacted]"
    assert value["nested"][0]["text"].endswith("[1000 more characters]")
