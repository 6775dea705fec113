"""Safe follow-up drafts: reviewable Draft rows with the account signature, never sent, one per thread.

"Hasn't replied in N days" is relative to now, and the demo mailbox is dated relative to a fixed anchor, so
every run here is given `now` explicitly: the tests mean the same thing whatever day they run on."""

from __future__ import annotations

import datetime as dt

import pytest

from apps.accounts.actions import update_signature
from apps.accounts.demo_mailbox.model import DEMO_ANCHOR
from apps.accounts.models import Message
from apps.ask import actions
from apps.ask.models import Draft
from tests.ask.conftest import AskMailbox

pytestmark = pytest.mark.django_db

QUESTION = "draft a follow-up to everyone who hasn't replied to my proposal in 3 days"
# The demo's reminder to Priya and Tom (proposal-portal-006) was sent 5 days before the anchor.
NOW = DEMO_ANCHOR + dt.timedelta(hours=1)


def test_follow_up_drafts_are_created_then_skipped(ask_mailbox_text: AskMailbox) -> None:
    mailbox = ask_mailbox_text
    update_signature(account=mailbox.account, mode="custom", text="Deniz Kaya · Kaya Consulting")
    messages_before = Message.objects.count()

    created = actions.create_ask_run(owner=mailbox.user, question=QUESTION)
    run = actions.execute_ask_run(run_id=created.pk, now=NOW)
    assert run is not None and run.status == "done", run.error if run else None

    assert run.intent == "follow_up_drafts"
    assert run.answer_mode == "drafts"
    assert run.scope["drafts"]["created"] == 1
    assert run.scope["drafts"]["skipped"] == 0
    draft = Draft.objects.get(owner=mailbox.user)
    # Priya and Tom never answered the proposal; Lena, Marco and Sofia did.
    assert sorted(p["address"] for p in draft.to) == [
        "priya.raman@nordlicht-retail.example",
        "tom.becker@nordlicht-retail.example",
    ]
    assert draft.subject == "Re: Proposal: Nordlicht customer portal redesign (Q1 2027)"
    assert draft.body.startswith("Hi Priya, hi Tom,")
    assert draft.body.endswith("-- \nDeniz Kaya · Kaya Consulting")
    assert draft.thread is not None and draft.in_reply_to is not None
    assert draft.in_reply_to.message_id == "proposal-portal-006@demo.mailagent.example"
    assert draft.ask_run_id == run.pk
    assert "Created 1 follow-up draft" in run.answer and "Nothing was sent" in run.answer
    assert run.evidence[0]["draft"] == "created"
    assert Message.objects.count() == messages_before  # nothing was sent or stored as mail

    repeated = actions.create_ask_run(owner=mailbox.user, question=QUESTION, conversation=run.conversation)
    again = actions.execute_ask_run(run_id=repeated.pk, now=NOW)
    assert again is not None
    assert again.scope["drafts"]["created"] == 0
    assert again.scope["drafts"]["skipped"] == 1
    assert again.evidence[0]["draft"] == "skipped"
    assert Draft.objects.filter(owner=mailbox.user).count() == 1


def test_a_longer_wait_finds_nothing_to_follow_up_until_that_much_time_passed(ask_mailbox_text: AskMailbox) -> None:
    question = "write a follow-up to people who haven't replied to my proposal in 30 days"
    created = actions.create_ask_run(owner=ask_mailbox_text.user, question=question)
    run = actions.execute_ask_run(run_id=created.pk, now=NOW)
    assert run is not None
    assert run.scope["drafts"]["created"] == 0
    assert "No thread is waiting for a reply" in run.answer
    assert not Draft.objects.exists()

    # 26 days later the same reminder has waited more than 30 days: now it is due.
    later = actions.create_ask_run(owner=ask_mailbox_text.user, question=question)
    run = actions.execute_ask_run(run_id=later.pk, now=NOW + dt.timedelta(days=26))
    assert run is not None and run.scope["drafts"]["created"] == 1
    assert Draft.objects.get(owner=ask_mailbox_text.user).in_reply_to.message_id == (  # type: ignore[union-attr]
        "proposal-portal-006@demo.mailagent.example"
    )
