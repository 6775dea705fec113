# ruff: noqa: RUF001 -- the rewritten query and the sample subject are Turkish, like the statement.
"""With a language model configured: the question rewritten into the mailbox's languages (the rewrite
request carries the mailbox's own subjects) and the best threads reranked by the model — both through the
real client against the scripted OpenAI-compatible server, both best effort."""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest
from django.test import override_settings

from tests.ask.conftest import AskMailbox, is_rerank_request, is_rewrite_request, run_ask
from tests.fakes.openai_server import FakeOpenAI, Reply, last_user_text

pytestmark = pytest.mark.django_db

QUESTION = "when is my card bill due?"
STATEMENT = "qnb-e-ekstre-2026-04@qnbfinansbank.example"


def route_first(server: FakeOpenAI, predicate: Any, *replies: Reply) -> None:
    server.routes.insert(0, (predicate, deque(replies)))


def test_the_rewritten_turkish_query_finds_the_statement_the_english_words_miss(
    ask_mailbox_text: AskMailbox, fake_llm: FakeOpenAI
) -> None:
    with override_settings(ASK_LLM={}):
        plain = run_ask(ask_mailbox_text, QUESTION)
    assert STATEMENT not in [row["message_id"] for row in plain.evidence]

    route_first(fake_llm, is_rewrite_request, Reply.text('{"queries": ["card bill due", "QNB e-ekstre son ödeme"]}'))
    run = run_ask(ask_mailbox_text, QUESTION)

    rewrite = next(r for r in fake_llm.chat_requests() if is_rewrite_request(r))
    assert "Kredi kartınıza" in last_user_text(rewrite)  # one subject per sender: the mailbox's languages show
    assert run.plan["rewrites"] == ["card bill due", "QNB e-ekstre son ödeme"]
    assert "QNB e-ekstre son ödeme" in run.plan["keyword_queries"]
    assert STATEMENT in [row["message_id"] for row in run.evidence[:3]]
    plan_step = next(s for s in run.steps if s["stepId"] == "plan")
    assert "rewritten by the language model" in plan_step["detail"]


def test_the_model_reorders_the_best_threads(ask_mailbox_text: AskMailbox, fake_llm: FakeOpenAI) -> None:
    question = "when do I need to make a payment to QNB bank for my credit card"
    with override_settings(ASK_LLM={}):
        local = [row["message_id"] for row in run_ask(ask_mailbox_text, question).evidence]
    assert len(local) >= 3

    route_first(fake_llm, is_rerank_request, Reply.text('Here you go: {"ranking": [3, 1]}'))
    route_first(fake_llm, lambda body: not is_rerank_request(body) and not is_rewrite_request(body),
                Reply.failure(400, "no answer in this test"))  # fmt: skip
    run = run_ask(ask_mailbox_text, question)

    assert [row["message_id"] for row in run.evidence[:2]] == [local[2], local[0]]
    assert run.scope["llm_rerank"] == {"used": True, "order": [3, 1], "error": ""}
    rerank = next(r for r in fake_llm.chat_requests() if is_rerank_request(r))
    assert "[10]" in last_user_text(rerank) or len(local) < 10
    rerank_step = next(s for s in run.steps if s["stepId"] == "rerank")
    assert "reordered by the language model" in rerank_step["detail"]


def test_an_unreadable_rerank_reply_keeps_the_local_order(ask_mailbox_text: AskMailbox, fake_llm: FakeOpenAI) -> None:
    question = "when do I need to make a payment to QNB bank for my credit card"
    with override_settings(ASK_LLM={}):
        local = [row["message_id"] for row in run_ask(ask_mailbox_text, question).evidence]
    route_first(fake_llm, is_rerank_request, Reply.text("The third one, I think."))
    run = run_ask(ask_mailbox_text, question)

    # the top of the local order stands (lower rows may swap between two runs where bm25 scores tie)
    assert [row["message_id"] for row in run.evidence[:3]] == local[:3]
    assert run.scope["llm_rerank"]["used"] is False
    assert "no JSON object" in run.scope["llm_rerank"]["error"]
    rerank_step = next(s for s in run.steps if s["stepId"] == "rerank")
    assert "could not rerank" in rerank_step["detail"]
