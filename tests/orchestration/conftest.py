from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from apps.llm.models import ApiConfig
from apps.orchestration.models import Agent, Director, OrchestrationSettings, Prompt, PromptMessage
from tests.fakes.openai_server import FakeOpenAI


@pytest.fixture
def fake_llm() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server  # type: ignore[misc]


@pytest.fixture
def api_config(user: Any, fake_llm: FakeOpenAI) -> ApiConfig:
    return ApiConfig.objects.create(
        owner=user,
        name="fake",
        base_url=fake_llm.base_url,
        api_key="sk-fake-key",
        model="fake-model",
        timeout_seconds=10,
    )


@pytest.fixture
def make_prompt(user: Any) -> Callable[..., Prompt]:
    def make(name: str, *messages: tuple[str, str]) -> Prompt:
        prompt = Prompt.objects.create(owner=user, name=name)
        for order, (role, content) in enumerate(messages):
            PromptMessage.objects.create(prompt=prompt, order=order, role=role, content=content)
        return prompt

    return make


@pytest.fixture
def client_manager(user: Any, api_config: ApiConfig, make_prompt: Any, add_filter: Any) -> Director:
    """The spec's real-life workflow: client mail goes to a director with a psychologist and a response agent."""
    director = Director.objects.create(
        owner=user,
        name="Client Manager",
        api_config=api_config,
        prompt=make_prompt(
            "director prompt",
            ("system", "You manage client mail for {{director.name}}. Today is {{today}}."),
            ("user", "A client wrote:\n{{email}}"),
        ),
        step_limit=8,
    )
    Agent.objects.create(
        director=director,
        order=0,
        name="Psychologist",
        slug="psychologist",
        summary="Analyses the mood of the sender and remembers it",
        prompt=make_prompt("psy", ("system", "Analyse moods. Known facts:\n{{memories}}")),
        allowed_tools=["memory_add", "memory_search"],
    )
    Agent.objects.create(
        director=director,
        order=1,
        name="Response",
        slug="response",
        summary="Drafts replies and creates follow-up tasks",
        allowed_tools=["todo_add", "calendar_read"],
    )
    add_filter(director, "from", r"client.*@domain\.com")
    return director


@pytest.fixture
def orchestration_settings(tmp_path: Any) -> OrchestrationSettings:
    current, _ = OrchestrationSettings.objects.get_or_create(pk=1)
    return current


def is_agent(name: str) -> Callable[[dict[str, Any]], bool]:
    return lambda body: any(
        m.get("role") == "system" and f"agent “{name}”" in str(m.get("content")) for m in body.get("messages", [])
    )


def is_director(body: dict[str, Any]) -> bool:
    first = (body.get("messages") or [{}])[0]
    return str(first.get("content", "")).startswith("You are the director")
