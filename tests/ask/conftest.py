"""Ask fixtures: the demo mailbox (with its QNB credit-card e-statements: Turkish mail, the due date only
in the PDF), imported through the ordinary importer, indexed and embedded as ingest would do it.

The module-scoped `ask_mailbox` commits its data once per test module (imports and embeddings take
seconds) and removes it afterwards; tests on it run inside rolled-back transactions as usual."""

from __future__ import annotations

import io
import itertools
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from apps.accounts.demo_mailbox.generator import build_demo_messages
from apps.accounts.demo_mailbox.importing import import_demo_mailbox
from apps.accounts.demo_mailbox.model import DEMO_ACCOUNT_NAME
from apps.accounts.models import MailAccount
from apps.ask import actions as ask_actions
from apps.ask.models import AskRun, RunStatus
from apps.search import actions as search_actions
from apps.search.backends.sqlite import forget_vector_matrices
from apps.search.gist import forget_gist_matrix
from tests.fakes.openai_server import FakeOpenAI, Reply, system_text


def is_rewrite_request(body: dict[str, Any]) -> bool:
    return "full-text search queries" in system_text(body)


def is_rerank_request(body: dict[str, Any]) -> bool:
    return "You rank e-mails" in system_text(body)


def is_topic_request(body: dict[str, Any]) -> bool:
    return "refers to the previous exchange" in system_text(body)


def is_intent_request(body: dict[str, Any]) -> bool:
    return "what kind of request this is" in system_text(body)


def is_answer_request(body: dict[str, Any]) -> bool:
    return not (
        is_rewrite_request(body) or is_rerank_request(body) or is_topic_request(body) or is_intent_request(body)
    )


KEY_QUESTION = "when do I need to make a payment to QNB bank for my credit card"
_users = itertools.count(1)


def qnb_mails() -> list[bytes]:
    """The demo mailbox's QNB e-statements and advert, as raw RFC 822 (for the provider-search fakes)."""
    return [
        mail.to_email().as_bytes()
        for mail in build_demo_messages()
        if mail.sender.address.endswith("@qnbfinansbank.example")
    ]


@dataclass
class AskMailbox:
    user: Any
    account: MailAccount


def build_ask_mailbox(*, embeddings: bool) -> AskMailbox:
    number = next(_users)
    user = get_user_model().objects.create_user(
        username=f"asker{number}", email=f"asker{number}@example.com", password="ask-test-password-42"
    )
    import_demo_mailbox(owner=user, stdout=io.StringIO())
    account = MailAccount.objects.get(owner=user, name=DEMO_ACCOUNT_NAME)
    if embeddings:
        # The background backfill's own entry point: search vectors, then gists (apps/search/gist.py).
        search_actions.backfill_embeddings(requeue=False, seconds=0)
    return AskMailbox(user=user, account=account)


def remove_ask_mailbox(mailbox: AskMailbox) -> None:
    mailbox.user.delete()  # accounts, messages, index documents and runs cascade


@pytest.fixture(scope="module")
def ask_mailbox(django_db_setup: Any, django_db_blocker: Any) -> Iterator[AskMailbox]:
    """Demo mailbox + QNB mail, full text and embeddings, committed for the module."""
    with django_db_blocker.unblock():
        forget_vector_matrices()
        forget_gist_matrix()
        mailbox = build_ask_mailbox(embeddings=True)
    try:
        yield mailbox
    finally:
        with django_db_blocker.unblock():
            remove_ask_mailbox(mailbox)
            forget_vector_matrices()
            forget_gist_matrix()


@pytest.fixture
def fake_llm(settings: Any) -> Iterator[FakeOpenAI]:
    """The scripted OpenAI-compatible server, selected for Ask through settings.ASK_LLM."""
    server = FakeOpenAI()
    server.start()
    settings.ASK_LLM = {"base_url": server.base_url, "api_key": "sk-ask-test", "model": "fake-model"}
    # Query rewriting and LLM reranking (apps/ask/rewrite.py) answer "nothing to add" unless a test
    # routes them itself (a route added later is only reached once these run out: tests add theirs first).
    server.routes.append((is_rewrite_request, deque([Reply.text('{"queries": []}')] * 50)))
    server.routes.append((is_rerank_request, deque([Reply.text('{"ranking": []}')] * 50)))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def ask_mailbox_text(django_db_setup: Any, django_db_blocker: Any) -> Iterator[AskMailbox]:
    """The same mailbox with the full-text index only (no embeddings): quicker, for non-ranking tests."""
    with django_db_blocker.unblock():
        forget_vector_matrices()
        forget_gist_matrix()
        mailbox = build_ask_mailbox(embeddings=False)
    try:
        yield mailbox
    finally:
        with django_db_blocker.unblock():
            remove_ask_mailbox(mailbox)
            forget_vector_matrices()
            forget_gist_matrix()


def run_ask(mailbox: AskMailbox, question: str) -> AskRun:
    """Ask a question as the mailbox's owner through the same actions the web view and worker use; the run
    must finish."""
    run = ask_actions.create_ask_run(owner=mailbox.user, question=question)
    finished = ask_actions.execute_ask_run(run_id=run.pk, emit=lambda event: None)
    assert finished is not None and finished.status == RunStatus.DONE, finished and finished.error
    return finished
