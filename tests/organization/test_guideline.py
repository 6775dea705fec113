"""Guideline proposals from the owner's decisions: from the learned pattern without an LLM; written by the
organization model (against the scripted OpenAI-compatible server) when one is configured, with its provider
events kept; a failed or unusable reply falls back to the pattern's text and says why."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from django.urls import reverse

from apps.llm.models import ApiConfig
from apps.organization import actions, selectors
from apps.organization.decisions import respond
from apps.organization.guideline import decide_proposal, propose_from_decisions
from apps.organization.models import GuidelineProposal, Library, SuggestionSource
from apps.organization.suggesting import suggest_for_file
from tests.fakes.openai_server import FakeOpenAI, Reply

SENDER = "ekstre@qnb.example"


@pytest.fixture
def fake_llm() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server  # type: ignore[misc]


def _decide_three(library: Library) -> None:
    """Three statements from one sender, filed by the owner into finance/bank."""
    for month in ("april", "may", "june"):
        file = actions.save_upload(
            library=library,
            name=f"{month}.txt",
            chunks=[f"QNB Bank account statement {month}: IBAN, closing balance.".encode()],
            provenance={"sender": SENDER, "subject": f"Statement {month}"},
        )
        suggestion = suggest_for_file(file=file)
        assert suggestion is not None
        respond(suggestion=suggestion, action="choose", folder="finance/bank")


def _use_model(library: Library, fake_llm: FakeOpenAI, timeout: int = 10) -> None:
    config = ApiConfig.objects.create(
        owner=library.owner, name="fake", base_url=fake_llm.base_url, api_key="sk-fake", model="m",
        timeout_seconds=timeout, max_retries=0,
    )  # fmt: skip
    actions.update_settings(owner=library.owner, changes={"api_config_id": config.pk})


def test_without_a_model_the_learned_pattern_is_proposed_once(seeded_library: Library, client: Any) -> None:
    _decide_three(seeded_library)
    (proposal,) = propose_from_decisions(library=seeded_library)
    assert proposal.text == f"Files from {SENDER} go to finance/bank: 3 of 3 decisions."
    assert proposal.source == SuggestionSource.RULE and not proposal.fallback_reason
    assert propose_from_decisions(library=seeded_library) == []  # not proposed twice
    client.force_login(seeded_library.owner)
    page = client.get(reverse("organization:page")).content.decode()
    assert "Learned from your decisions" in page and f"sender {SENDER} → finance/bank, 3 of 3" in page
    decide_proposal(proposal=proposal, accept=True)
    assert f"- Files from {SENDER} go to finance/bank.\n" in selectors.read_guideline(library=seeded_library)
    assert propose_from_decisions(library=seeded_library) == []


def test_the_model_writes_the_line_from_the_pattern_and_the_guideline(
    seeded_library: Library, fake_llm: FakeOpenAI, client: Any
) -> None:
    actions.write_guideline(library=seeded_library, text="School papers go to school.\n")
    _decide_three(seeded_library)
    _use_model(seeded_library, fake_llm)
    fake_llm.script(Reply.text(f"- Bank statements from QNB ({SENDER}) go to finance/bank."))
    (proposal,) = propose_from_decisions(library=seeded_library)
    assert proposal.source == SuggestionSource.LLM and not proposal.fallback_reason
    assert proposal.text == f"Bank statements from QNB ({SENDER}) go to finance/bank."
    assert [e["kind"] for e in proposal.provider_events] == ["request", "response"]
    sent = fake_llm.requests[0]["messages"][1]["content"]
    assert "School papers go to school." in sent and f"3 of 3 decided files from {SENDER}" in sent
    client.force_login(seeded_library.owner)
    assert "Written by the organize model" in client.get(reverse("organization:page")).content.decode()
    client.post(reverse("organization:proposal", args=[proposal.pk, "accept"]))
    assert selectors.read_guideline(library=seeded_library) == (
        f"School papers go to school.\n- Bank statements from QNB ({SENDER}) go to finance/bank.\n"
    )


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (Reply.failure(500), "the model failed (server"),
        (dataclasses.replace(Reply.text("Files go to finance/bank."), delay=1.5), "the model failed (timeout"),
        (Reply.text("Sure! Here is a line:\nQNB goes to finance/bank."), "the reply has 2 lines instead of one"),
        (Reply.text("Bank statements go to the bank folder."), "does not name the folder finance/bank"),
    ],
)
def test_a_failed_or_unusable_reply_falls_back_to_the_pattern_and_says_why(
    seeded_library: Library, fake_llm: FakeOpenAI, client: Any, reply: Reply, reason: str
) -> None:
    _decide_three(seeded_library)
    _use_model(seeded_library, fake_llm, timeout=1)
    fake_llm.script(reply)
    (proposal,) = propose_from_decisions(library=seeded_library)
    assert proposal.source == SuggestionSource.RULE
    assert proposal.text == f"Files from {SENDER} go to finance/bank: 3 of 3 decisions."
    assert reason in proposal.fallback_reason and proposal.provider_events
    client.force_login(seeded_library.owner)
    page = client.get(reverse("organization:page")).content.decode()
    assert "could not write this line" in page
    assert GuidelineProposal.objects.count() == 1
