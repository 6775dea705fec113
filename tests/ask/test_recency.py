"""Recurring mail (issue 35, item 3): a series of mails from one sender with one subject template —
monthly invoices, bills, order confirmations — answers from its newest member unless the question names a
period, then from the member sent in it. The demo mailbox's Cloudnest invoices (August to November: EUR 18.40,
18.40, 23.10, 23.10), Telvio bills (24,99 / 24,99 / 31,48 / 24,99 EUR) and coffee orders (#5120 to #5123).
Before the change, noise in how close each member's meaning was to the question picked the member: "my
last Cloudnest invoice" answered September's EUR 18.40 and "the Telvio bill for October" November's."""

from __future__ import annotations

import pytest

from tests.ask.conftest import AskMailbox
from tests.ask.test_pipeline import ask

pytestmark = pytest.mark.django_db

CASES = [
    ("how much was my last Cloudnest invoice?", "Your Cloudnest invoice CN-2026-11-3391", "23.10"),
    ("how much is my Cloudnest invoice?", "Your Cloudnest invoice CN-2026-11-3391", "23.10"),
    ("wie hoch war meine letzte Telvio Rechnung?", "Ihre Telvio Mobilfunkrechnung 11/2026", "24,99"),
    ("my latest coffee order number?", "Order #5123 confirmed: your coffee subscription", "5123"),
    ("how much was the Telvio bill for October?", "Ihre Telvio Mobilfunkrechnung 10/2026", "31,48"),
    ("what did I pay Cloudnest in September?", "Your Cloudnest invoice CN-2026-09-3391", None),
]


@pytest.mark.parametrize(("question", "subject", "value"), CASES)
def test_a_series_answers_from_its_newest_member_or_the_period_named(
    ask_mailbox: AskMailbox, question: str, subject: str, value: str | None
) -> None:
    run, _ = ask(ask_mailbox, question)
    assert run.evidence[0]["subject"] == subject, [row["subject"] for row in run.evidence[:4]]
    if value is not None:
        assert value in run.answer
