# ruff: noqa: RUF001 -- Turkish mail is the point of the key case.
"""The whole Ask pipeline on the demo mailbox (with its QNB e-statements): the seed's key case with and without a
language model, follow-up questions, honest "no evidence" answers and refusals."""

from __future__ import annotations

import json
import mailbox
from pathlib import Path
from typing import Any

import pytest
from django.template.loader import render_to_string

from apps.accounts.actions import create_local_account
from apps.accounts.importers import import_path
from apps.ask import actions, retrieval
from apps.ask.events import AskEvent
from apps.ask.models import AskRun, RunStatus
from apps.ask.steps import STEP_LABELS
from apps.search import actions as search_actions
from apps.search.backends.sqlite import forget_vector_matrices
from apps.search.gist import forget_gist_matrix
from tests.ask.conftest import KEY_QUESTION, AskMailbox, is_answer_request, is_topic_request, qnb_mails
from tests.fakes.openai_server import FakeOpenAI, Reply, last_user_text

pytestmark = pytest.mark.django_db


def ask(mailbox: AskMailbox, question: str, *, conversation: Any = None) -> tuple[AskRun, list[AskEvent]]:
    events: list[AskEvent] = []
    run = actions.create_ask_run(owner=mailbox.user, question=question, conversation=conversation)
    finished = actions.execute_ask_run(run_id=run.pk, emit=events.append)
    assert finished is not None
    assert finished.status == RunStatus.DONE, finished.error
    return finished, events


def test_key_case_without_llm_ranks_the_turkish_statement_first(ask_mailbox: AskMailbox) -> None:
    run, events = ask(ask_mailbox, KEY_QUESTION)

    top = run.evidence[0]
    assert top["message_id"] == "qnb-e-ekstre-2026-04@qnbfinansbank.example"
    assert top["subject"] == "QNB E-Ekstre - Nisan 2026"
    assert "attachment_text" in top["sources"]
    assert top["attachment"]["filename"] == "QNB_E-Ekstre_2026-04.pdf"
    assert {"local_fts", "local_vector"} & set(top["sources"])
    assert run.answer_mode == "extractive"
    assert "11/05/2026" in run.answer
    assert "Son Ödeme Tarihi" in run.answer
    assert run.scope["citation_check"]["ok"] is True
    # The other bank's statement and QNB's advert are found but ranked below.
    subjects = [row["subject"] for row in run.evidence]
    assert (
        "Kredi kartınıza özel taksit kampanyası" in subjects[1:]
        or "Kredi kartınıza özel taksit kampanyası" not in subjects
    )
    assert all(row["score"] <= top["score"] for row in run.evidence)
    # Every step reported start and completion, in order, for this run only.
    assert {event["runId"] for event in events} == {str(run.pk)}
    assert events[0]["type"] == "started"
    assert events[-1]["type"] == "completed"
    completed = [e["stepId"] for e in events if e["type"] == "step_completed"]
    assert completed == [
        "classify", "plan", "local_fts", "local_vector", "hybrid", "provider_search", "gist", "attachment_text",
        "rerank", "read_evidence", "answer",
    ]  # fmt: skip
    assert all(e["label"] == STEP_LABELS[e["stepId"]] for e in events if e["stepId"])
    assert set(run.timings) >= {"total", "rerank", "answer"}


def test_copies_of_one_mail_take_one_evidence_row(
    ask_mailbox: AskMailbox, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    """The same statements imported again into a second account (an old laptop's mbox export): Ask's
    evidence lists each mail once and says it has a copy, and the ten rows hold ten different mails."""
    export = mailbox.mbox(tmp_path / "export.mbox")
    for raw in qnb_mails():
        export.add(raw)
    export.flush()
    second = create_local_account(owner=ask_mailbox.user, name="Old laptop export")
    with django_capture_on_commit_callbacks(execute=True):
        assert import_path(second, tmp_path / "export.mbox").imported == len(qnb_mails())
    search_actions.backfill_embeddings(requeue=False, seconds=0)
    try:
        run, _events = ask(ask_mailbox, KEY_QUESTION)
    finally:
        forget_vector_matrices()
        forget_gist_matrix()

    top = run.evidence[0]
    assert top["subject"] == "QNB E-Ekstre - Nisan 2026"
    assert top["copies"] == 1
    shown = [(row["sender"], row["subject"], row["date"]) for row in run.evidence]
    assert len(shown) == len(set(shown))
    assert "11/05/2026" in run.answer
    html = render_to_string("ask/partials/evidence_row.html", {"row": top})
    assert "+ 1 copy" in html


def test_a_period_that_filters_every_mail_out_is_widened_and_said(ask_mailbox: AskMailbox) -> None:
    # The demo mailbox's mail is dated up to DEMO_ANCHOR (2026-11-20): nothing in it is from yesterday.
    run, events = ask(ask_mailbox, "when do I need to make a payment to QNB bank for my credit card yesterday")
    assert run.scope["widened"] == "yesterday"
    assert run.answer.startswith("Nothing in your mail from yesterday matched, so I searched all of it.")
    # (which of the two monthly statements comes first is the ranking's call; one of them answers)
    assert run.evidence and run.evidence[0]["subject"].startswith("QNB E-Ekstre - ")
    assert "11/05/2026" in run.answer or "11/04/2026" in run.answer
    # the steps searched twice and say so; the step rows were replaced, not duplicated on the page
    assert [e["stepId"] for e in events if e["type"] == "step_completed"].count("local_fts") == 2
    answer_step = next(s for s in run.steps if s["stepId"] == "answer")
    assert "searched all mail" in answer_step["detail"]


def test_key_case_with_llm_grounds_the_answer_in_numbered_evidence(
    ask_mailbox: AskMailbox, fake_llm: FakeOpenAI
) -> None:
    def statement_is_evidence_one(body: dict[str, Any]) -> bool:
        prompt = last_user_text(body)
        first = prompt.split("[1]", 1)[1].split("[2]", 1)[0] if "[1]" in prompt else ""
        return "QNB E-Ekstre - Nisan 2026" in first and "11/05/2026" in first

    fake_llm.when(
        statement_is_evidence_one,
        Reply.text("Your QNB credit card payment is due on 11/05/2026 (statement debt 8.406,90 TL) [1]."),
    )
    fake_llm.default = Reply.text("I could not find the QNB statement.")

    run, _events = ask(ask_mailbox, KEY_QUESTION)

    assert run.answer_mode == "llm"
    assert "11/05/2026" in run.answer
    assert run.evidence[0]["message_id"] == "qnb-e-ekstre-2026-04@qnbfinansbank.example"
    check = run.scope["citation_check"]
    assert check["ok"] is True and check["cited"] == [1] and check["checked_values"] == 2
    request = next(r for r in fake_llm.chat_requests() if is_answer_request(r))
    assert request["model"] == "fake-model"
    assert "only the numbered evidence" in request["messages"][0]["content"]


def test_llm_answer_with_an_unsupported_date_is_regenerated(ask_mailbox: AskMailbox, fake_llm: FakeOpenAI) -> None:
    fake_llm.script(
        Reply.text("Pay by 15/05/2026 [1]."),  # not in the evidence
        Reply.text("The payment is due on 11/05/2026 [1]."),
    )
    run, _events = ask(ask_mailbox, KEY_QUESTION)

    assert run.answer == "The payment is due on 11/05/2026 [1]."
    assert run.scope["citation_check"]["regenerated"] is True
    rejected = run.scope["llm"]["rejected"][0]
    assert rejected["check"]["unsupported"] == ["15/05/2026"]
    answers = [r for r in fake_llm.chat_requests() if is_answer_request(r)]
    assert "15/05/2026" in answers[1]["messages"][-1]["content"]


def test_llm_that_keeps_inventing_values_falls_back_to_the_extractive_answer(
    ask_mailbox: AskMailbox, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.text("Pay by 01/01/2027 [1]."), Reply.text("It is 02/02/2027 [1]."))
    run, _events = ask(ask_mailbox, KEY_QUESTION)

    assert run.answer_mode == "extractive"
    assert "11/05/2026" in run.answer
    assert run.scope["llm"]["fallback"] == "extractive"
    # The footer says why the model's answer is not the one shown, not "no language model configured".
    assert answerer(run) == (
        "Quoted from the evidence: the language model's answer was discarded "
        "(values not in the mail it cited: 02/02/2027)"
    )


def test_llm_failure_falls_back_to_the_extractive_answer(ask_mailbox: AskMailbox, fake_llm: FakeOpenAI) -> None:
    fake_llm.script(Reply.failure(401, "bad key"))
    run, _events = ask(ask_mailbox, KEY_QUESTION)

    assert run.answer_mode == "extractive"
    assert "11/05/2026" in run.answer
    assert "bad key" in run.scope["llm"]["error"]
    assert answerer(run).startswith("Quoted from the evidence: the language model failed (")
    assert "bad key" in answerer(run)


def answerer(run: AskRun) -> str:
    """The answer's footer as the run page renders it."""
    from apps.ask.presentation import run_context

    html = render_to_string("ask/partials/run.html", {"item": run_context(run), "run": run})
    start = html.index('data-testid="ask-answerer">') + len('data-testid="ask-answerer">')
    return html[start : html.index("</span>", start)].replace("&#x27;", "'")


def test_without_a_model_the_footer_says_so(ask_mailbox_text: AskMailbox) -> None:
    run, _events = ask(ask_mailbox_text, KEY_QUESTION)
    assert run.answer_mode == "extractive"
    assert answerer(run) == "Quoted from the evidence (no language model configured)"


def test_follow_up_uses_the_previous_turn(ask_mailbox: AskMailbox) -> None:
    first, _ = ask(ask_mailbox, KEY_QUESTION)
    second, _ = ask(ask_mailbox, "and the one before that?", conversation=first.conversation)

    assert second.scope["topic"]["continues"] is True
    assert second.plan["follow_up"] is True
    assert second.plan["entities"] == ["QNB"]
    assert second.evidence[0]["message_id"] == "qnb-e-ekstre-2026-03@qnbfinansbank.example"
    assert "11/04/2026" in second.answer


def test_no_reliable_evidence_is_said_honestly_with_the_searched_scope(ask_mailbox: AskMailbox) -> None:
    run, _events = ask(ask_mailbox, "when is my Garanti BBVA credit card payment due?")

    assert run.answer_mode == "no_evidence"
    assert "could not find reliable evidence" in run.answer
    assert "Garanti" in run.answer
    assert "local keywords" in run.answer and "attachments" in run.answer
    assert all(row["related"] for row in run.evidence)


def test_destructive_requests_are_refused_and_change_nothing(ask_mailbox: AskMailbox) -> None:
    from apps.accounts.models import Message

    before = list(Message.objects.filter(account=ask_mailbox.account).values_list("pk", "seen", "flagged", "folder"))
    for question, action in (
        ("delete all newsletters from last month", "delete mail"),
        ("please archive everything from CodeHarbor", "archive mail"),
        ("mark all parcel notifications as read", "change read/done marks"),
        ("send a follow-up to Priya", "send mail"),
        ("create a rule that moves invoices to a folder", "create rules or filters"),
    ):
        run, events = ask(ask_mailbox, question)
        assert run.intent == "unsupported", question
        assert run.answer_mode == "refusal"
        assert f"I can't {action}" in run.answer
        assert [e["stepId"] for e in events if e["type"] == "step_completed"] == ["classify", "answer"]
    after = list(Message.objects.filter(account=ask_mailbox.account).values_list("pk", "seen", "flagged", "folder"))
    assert after == before


def test_german_invoice_amount_question(ask_mailbox: AskMailbox) -> None:
    run, _ = ask(ask_mailbox, "how much is the Schreiber invoice?")
    assert run.evidence[0]["subject"].startswith("Rechnung Nr. 2026-1187")
    assert "1.428,00 EUR" in run.answer
    assert json.dumps(run.scope)  # the scope is plain JSON


def test_every_shortlisted_mail_is_compared_with_the_question_by_meaning(
    ask_mailbox: AskMailbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mail found by its words only (outside the semantic search's own top hits, here its first 3) still gets
    its similarity to the question as a rerank signal, instead of counting as not similar at all."""
    monkeypatch.setattr(retrieval, "SEMANTIC_LIMIT", 3)
    run, _events = ask(ask_mailbox, "did Ergoform ship my replacement desk, and what is the tracking number?")
    assert run.scope["sources"]["local_vector"]["hits"] <= 3
    assert len(run.evidence) > 3
    assert all(row["features"]["semantic"] > 0 for row in run.evidence), [r["features"] for r in run.evidence]
    assert "Ticket #77104" in run.evidence[0]["subject"]
    rerank = next(step for step in run.steps if step["stepId"] == "rerank")
    assert f"({run.scope['shortlist']} compared with the question by meaning)" in rerank["detail"]


def test_an_unrelated_question_in_the_same_conversation_starts_a_new_topic(
    ask_mailbox: AskMailbox, client: Any
) -> None:
    first, _ = ask(ask_mailbox, "How much is my Telvio phone bill (Handyrechnung) this month?")
    second, events = ask(ask_mailbox, "Which parcels were delivered last week?", conversation=first.conversation)

    assert second.conversation_id == first.conversation_id
    assert second.scope["topic"]["continues"] is False
    assert second.plan["follow_up"] is False
    planned = json.dumps(second.plan).casefold()
    assert "telvio" not in planned and "handyrechnung" not in planned
    assert "telvio" not in second.answer.casefold() and "handyrechnung" not in second.answer.casefold()
    topic = [e for e in events if e["stepId"] == "topic" and e["type"] == "step_completed"]
    assert len(topic) == 1 and topic[0]["detail"].startswith("a new topic")
    # The first question of a conversation has nothing to follow: no topic step.
    assert "topic" not in [step["stepId"] for step in first.steps]
    # The conversation page says so where the question is shown.
    client.force_login(ask_mailbox.user)
    page = client.get(f"/ask/?c={first.conversation_id}").content.decode()
    assert page.count('data-testid="ask-topic"') == 1
    assert "New topic: the earlier questions of this conversation were not used" in page


def test_with_a_model_configured_the_model_decides_the_topic(ask_mailbox: AskMailbox, fake_llm: FakeOpenAI) -> None:
    fake_llm.when(is_topic_request, Reply.text('{"follow_up": false}'), Reply.text('{"follow_up": true}'))
    first, _ = ask(ask_mailbox, KEY_QUESTION)
    # Short and elliptical, but the model says it starts over: the previous plan is not inherited.
    second, _ = ask(ask_mailbox, "and the one before that?", conversation=first.conversation)
    assert second.scope["topic"] == {"continues": False, "reason": "model: new topic", "previous": KEY_QUESTION}
    assert second.plan["follow_up"] is False and second.plan["entities"] != ["QNB"]
    judged = [r for r in fake_llm.chat_requests() if is_topic_request(r)]
    assert len(judged) == 1 and KEY_QUESTION in judged[0]["messages"][-1]["content"]
    assert "New question: and the one before that?" in judged[0]["messages"][-1]["content"]
    # The model's yes is followed too (the previous turn is now the second question).
    third, _ = ask(ask_mailbox, "which parcels were delivered last week?", conversation=first.conversation)
    assert third.scope["topic"]["continues"] is True and third.scope["topic"]["reason"].startswith("model")
