"""Every demo message, oldest first: the sections run in a fixed order over one seeded random source."""

from __future__ import annotations

import datetime as dt
import random

from apps.accounts.demo_mailbox.bills import german_invoice, qnb_statements, receipts, travel, turkish_statements
from apps.accounts.demo_mailbox.bulk import newsletters, notifications
from apps.accounts.demo_mailbox.everyday import personal, team_updates
from apps.accounts.demo_mailbox.model import DEMO_ANCHOR, DEMO_MESSAGE_COUNT, DEMO_SEED, DemoMail, MailboxBuilder
from apps.accounts.demo_mailbox.threads import meeting_thread, proposal_thread, support_thread


def build_demo_messages(*, anchor: dt.datetime | None = None, seed: int = DEMO_SEED) -> list[DemoMail]:
    """Every demo message, oldest first. Deterministic for a given anchor and seed."""
    builder = MailboxBuilder(anchor or DEMO_ANCHOR, random.Random(seed))
    for section in (
        proposal_thread,
        meeting_thread,
        support_thread,
        turkish_statements,
        qnb_statements,
        german_invoice,
        newsletters,
        receipts,
        travel,
        team_updates,
        personal,
    ):
        section(builder)
    notifications(builder, DEMO_MESSAGE_COUNT - len(builder.mails))
    keys = [mail.key for mail in builder.mails]
    if len(set(keys)) != len(keys):
        raise AssertionError("demo message keys must be unique")
    return sorted(builder.mails, key=lambda mail: (mail.when, mail.key))
