"""The organize agent against the scripted OpenAI-compatible server: it reads the guideline, the folder tree
and the file through the seed's tools and creates the suggestion; its transcript and provider events are
kept; a provider failure falls back to the classifier and says so."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.urls import reverse

from apps.llm.models import ApiConfig
from apps.organization import actions
from apps.organization.models import Library, SuggestionSource
from apps.organization.suggesting import suggest_for_file
from tests.fakes.openai_server import FakeOpenAI, Reply


@pytest.fixture
def fake_llm() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server  # type: ignore[misc]


@pytest.fixture
def agent_library(seeded_library: Library, fake_llm: FakeOpenAI) -> Library:
    config = ApiConfig.objects.create(
        owner=seeded_library.owner,
        name="fake",
        base_url=fake_llm.base_url,
        api_key="sk-fake",
        model="m",
        timeout_seconds=10,
        max_retries=0,
    )
    actions.update_settings(owner=seeded_library.owner, changes={"api_config_id": config.pk})
    actions.write_guideline(library=seeded_library, text="Insurance papers go to finance/insurance.\n")
    return seeded_library


def _file(library: Library, name: str, text: str) -> Any:
    return actions.save_upload(library=library, name=name, chunks=[text.encode()])


def test_the_agent_uses_the_seed_tools_and_creates_the_suggestion(agent_library: Library, fake_llm: FakeOpenAI) -> None:
    file = _file(agent_library, "policy.txt", "Household insurance policy, yearly premium and coverage.")
    fake_llm.script(
        Reply.calls(
            ("get_file", {"path": "inbox/policy.txt"}), ("read_guideline", {}), ("get_folder_tree", {"depth": 2})
        ),
        Reply.calls(
            (
                "create_suggestion",
                {
                    "file_path": "inbox/policy.txt",
                    "target_folder": "finance/insurance",
                    "reasoning": "The guideline sends insurance papers to finance/insurance.",
                    "confidence": 0.9,
                    "alternatives": [{"folder": "finance/bank", "confidence": 0.1}],
                },
            )
        ),
        Reply.text("Suggested finance/insurance."),
    )
    suggestion = suggest_for_file(file=file)
    assert suggestion is not None
    assert (suggestion.source, suggestion.target_folder) == (SuggestionSource.LLM, "finance/insurance")
    assert "guideline" in suggestion.reasoning
    # The model was given the classifier's candidates, and saw the tools' answers.
    first = fake_llm.requests[0]
    assert "learned classifier" in first["messages"][0]["content"]
    assert {t["function"]["name"] for t in first["tools"]} == {
        "read_guideline",
        "get_folder_tree",
        "get_file",
        "list_recent_files",
        "create_suggestion",
    }
    tool_answers = [m for m in fake_llm.requests[1]["messages"] if m["role"] == "tool"]
    assert "Household insurance policy" in tool_answers[0]["content"]
    assert "Insurance papers go to finance/insurance" in tool_answers[1]["content"]
    assert "travel" in json.loads(tool_answers[2]["content"])
    assert [m["role"] for m in suggestion.transcript][:2] == ["system", "user"]
    assert [e["kind"] for e in suggestion.provider_events].count("response") == 3


def test_a_provider_failure_falls_back_to_the_classifier(agent_library: Library, fake_llm: FakeOpenAI) -> None:
    file = _file(agent_library, "may.txt", "QNB Bank account statement May: IBAN, closing balance.")
    fake_llm.script(Reply.failure(500))
    suggestion = suggest_for_file(file=file)
    assert suggestion is not None and suggestion.source == SuggestionSource.CLASSIFIER
    assert "organize agent failed" in suggestion.reasoning
    assert suggestion.target_folder == "finance/bank"
    assert any(e["kind"] == "error" for e in suggestion.provider_events)


def test_a_folder_excluded_by_the_owner_is_refused_to_the_model(agent_library: Library, fake_llm: FakeOpenAI) -> None:
    actions.update_settings(owner=agent_library.owner, changes={"exclude_folders": ["school"]})
    file = _file(agent_library, "trip.txt", "School trip permission slip.")
    fake_llm.script(
        Reply.calls(
            (
                "create_suggestion",
                {"file_path": "inbox/trip.txt", "target_folder": "school", "reasoning": "school", "confidence": 0.9},
            )
        ),
        Reply.text("done"),
    )
    suggestion = suggest_for_file(file=file)
    assert suggestion is not None and suggestion.source == SuggestionSource.CLASSIFIER
    refused = next(m for m in fake_llm.requests[1]["messages"] if m["role"] == "tool")
    assert "excluded" in refused["content"]


def test_the_agent_transcript_and_provider_events_are_shown_from_the_card(
    agent_library: Library, fake_llm: FakeOpenAI, client: Any
) -> None:
    file = _file(agent_library, "policy.txt", "Household insurance policy, yearly premium and coverage.")
    fake_llm.script(
        Reply.calls(("read_guideline", {})),
        Reply.calls(
            (
                "create_suggestion",
                {
                    "file_path": "inbox/policy.txt",
                    "target_folder": "finance/insurance",
                    "reasoning": "The guideline sends insurance papers to finance/insurance.",
                    "confidence": 0.9,
                },
            )
        ),
        Reply.text("Suggested finance/insurance."),
    )
    suggestion = suggest_for_file(file=file)
    assert suggestion is not None
    client.force_login(agent_library.owner)
    link = reverse("organization:transcript", args=[suggestion.pk])
    assert link in client.get(reverse("organization:page")).content.decode()
    page = client.get(link).content.decode()
    assert "Organize agent transcript" in page and "finance/insurance" in page
    assert "</svg> read_guideline</summary>" in page and "</svg> create_suggestion</summary>" in page
    assert "tool · read_guideline" in page and "Insurance papers go to finance/insurance" in page
    assert 'data-testid="org-provider-events"' in page and page.count("<td>response</td>") == 3

    # A classifier-only suggestion has no agent link; its page says why there is no transcript.
    actions.update_settings(owner=agent_library.owner, changes={"api_config_id": None})
    plain = suggest_for_file(file=_file(agent_library, "may.txt", "QNB Bank account statement May: IBAN, balance."))
    assert plain is not None and not plain.transcript
    workspace = client.get(reverse("organization:page")).content.decode()
    assert reverse("organization:transcript", args=[plain.pk]) not in workspace
    assert "No agent transcript" in client.get(reverse("organization:transcript", args=[plain.pk])).content.decode()
