"""The planner and intent classifier: pure functions of the question, the earlier turns and "now"."""

from __future__ import annotations

import datetime as dt

import pytest

from apps.ask.planner import PreviousTurn, classify_intent, parse_date_range, plan_question

NOW = dt.datetime(2026, 11, 23, 12, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("question", "intent", "refusal"),
    [
        ("when do I need to make a payment to QNB bank for my credit card", "question", ""),
        ("did Tom send the budget?", "question", ""),
        ("who asked me to file the expense report?", "question", ""),
        ("draft a follow-up to everyone who hasn't replied to my proposal in 3 days", "follow_up_drafts", ""),
        ("Please write a reminder to people who haven't answered my invoice", "follow_up_drafts", ""),
        ("draft and send a follow-up to everyone who hasn't replied", "unsupported", "send mail"),
        ("delete all newsletters", "unsupported", "delete mail"),
        ("can you archive everything from CodeHarbor", "unsupported", "archive mail"),
        ("Mark all parcel mails as read", "unsupported", "change read/done marks"),
        ("forward the invoice to my accountant", "unsupported", "forward mail"),
        ("create a filter that moves receipts into a folder", "unsupported", "create rules or filters"),
        ("unsubscribe me from the weekly commit", "unsupported", "unsubscribe you from lists"),
    ],
)
def test_classify_intent(question: str, intent: str, refusal: str) -> None:
    assert classify_intent(question) == (intent, refusal)


def test_key_question_plan() -> None:
    plan = plan_question("when do I need to make a payment to QNB bank for my credit card", now=NOW)
    assert plan.entities == ["QNB"]
    assert plan.sender_hints == ["QNB"]
    assert plan.answer_type == "date"
    assert {"payment", "due_date", "credit_card"} <= set(plan.concepts)
    assert plan.wants_attachments
    assert plan.keyword_queries[0] == "QNB"
    due = next(q for q in plan.keyword_queries if "son ödeme tarihi" in q)
    assert due.startswith("QNB ")
    assert "ödeme" in next(q for q in plan.keyword_queries if "pagamento" in q)
    assert plan.provider_queries == {"gmail": "QNB", "graph": "QNB"}
    assert plan.date_range.start is None and plan.date_range.end is None


def test_amount_question_and_entities() -> None:
    plan = plan_question("how much was the Schreiber invoice last month?", now=NOW)
    assert plan.answer_type == "amount"
    assert plan.entities == ["Schreiber"]
    assert "invoice" in plan.concepts and "amount" in plan.concepts
    assert plan.keywords == ["schreiber", "invoice"]  # "much", "last", "month" are not search words
    assert plan.date_range.label == "last month"
    assert plan.provider_queries["gmail"] == "Schreiber after:2026/10/01 before:2026/11/01"
    assert (
        plan_question("who organises the holiday party", now=NOW).provider_queries["gmail"] == "organises holiday party"
    )


def test_sender_hints() -> None:
    assert plan_question("what did Lena say about the portal?", now=NOW).sender_hints == ["Lena"]
    assert plan_question("mail from jeff.skilling@enron.com about the merger", now=NOW).sender_hints == [
        "jeff.skilling@enron.com"
    ]
    assert plan_question("what does the portal proposal cost", now=NOW).entities == []


UTC = dt.UTC


def day(year: int, month: int, number: int) -> dt.datetime:
    return dt.datetime(year, month, number, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "start", "end", "label"),
    [
        ("mail from today", day(2026, 11, 23), None, "today"),
        ("what came yesterday", day(2026, 11, 22), None, "yesterday"),
        ("invoices last month", day(2026, 10, 1), day(2026, 10, 31), "last month"),
        ("what did Lena send in March", day(2026, 3, 1), day(2026, 3, 31), "in March 2026"),
        ("the bill in December", day(2025, 12, 1), day(2025, 12, 31), "in December 2025"),
        ("payments in march 2025", day(2025, 3, 1), day(2025, 3, 31), "in March 2025"),
        ("mail in 2024", day(2024, 1, 1), day(2024, 12, 31), "in 2024"),
        ("receipts from the last 10 days", day(2026, 11, 13), None, "last 10 days"),
        ("since March", day(2026, 3, 1), None, "since March 2026"),
    ],
)  # fmt: skip
def test_date_ranges(text: str, start: dt.datetime, end: dt.datetime | None, label: str) -> None:
    found = parse_date_range(text, NOW)
    assert found.label == label
    assert found.start is not None and found.start.date() == start.date()
    if end is not None:
        assert found.end is not None and found.end.date() == end.date()


def test_named_months_limit_the_search_only_for_mail_sent_then() -> None:
    assert plan_question("what did Lena send in March", now=NOW).date_range.label == "in March 2026"
    assert plan_question("two places left on the fly away trip in December", now=NOW).date_range.label == ""
    assert plan_question("invoices from last month", now=NOW).date_range.label == "last month"


def test_no_date_words_no_range() -> None:
    assert parse_date_range("when do I pay my credit card", NOW).label == ""
    assert parse_date_range("the may meeting notes", NOW).label == ""  # "may" alone is not a range


def test_follow_up_inherits_the_previous_plan_and_moves_before_its_answer() -> None:
    first = plan_question("when do I need to make a payment to QNB bank for my credit card", now=NOW)
    answered = dt.datetime(2026, 4, 27, 6, 40, tzinfo=dt.UTC)
    turn = PreviousTurn(question=first.question, plan=first.as_json(), top_evidence_date=answered)

    before = plan_question("and the one before that?", now=NOW, history=[turn])
    assert before.follow_up
    assert before.entities == ["QNB"]
    assert before.concepts == first.concepts
    assert before.answer_type == "date"
    assert before.date_range.start is None
    assert before.date_range.end == answered - dt.timedelta(seconds=1)
    assert before.semantic_query.startswith(first.question)

    other = plan_question("what about the Marmara Bank statement?", now=NOW, history=[turn])
    assert other.entities == ["Marmara"]  # a new entity replaces the old one
    fresh = plan_question("how much is the Schreiber invoice?", now=NOW, history=[turn])
    assert not fresh.follow_up and fresh.entities == ["Schreiber"]


def test_draft_request() -> None:
    plan = plan_question("draft a follow-up to everyone who hasn't replied to my proposal in 2 weeks", now=NOW)
    assert plan.intent == "follow_up_drafts"
    assert plan.draft is not None
    assert plan.draft.topic_terms == ["proposal"]
    assert plan.draft.min_days == 14
