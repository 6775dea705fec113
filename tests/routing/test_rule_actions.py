"""Rules the user enabled write back: a filter's mail action (read, flag, archive, move) is applied to each new
mail it matches, on a real Dovecot (checked with `doveadm fetch`), recorded in the ledger with origin "rule";
a rule that cannot apply is shown on the filter and loses nothing. Filters are made through the real API."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from apps.accounts.models import MailAccount, MailAction, MailActionStatus, Message
from apps.routing.models import Filter
from tests.accounts.test_imap_mirror import assert_mirrors, connect, synced
from tests.fakes.dovecot import Mailbox, make_message

pytestmark = pytest.mark.services


def new_mail(n: int, sender: str) -> bytes:
    # A filter only acts on mail newer than itself (older mail goes through an explicit replay); a Date header
    # has whole seconds, so "now" rounded down could be older than a filter made in the same second.
    when = timezone.now() + dt.timedelta(seconds=1)
    return make_message(subject=f"Note {n}", message_id=f"<rule{n}@rules.test>", sender=sender, date=when)


def add_filter(client: Client, director: Any, regex: str, **extra: Any) -> Any:
    return client.post(
        "/api/filters",
        {"directorId": director.pk, "field": "from", "regex": regex, **extra},
        content_type="application/json",
    )


def folders_of(box: Mailbox, message_id: str) -> dict[str, tuple[bool, bool]]:
    return {
        folder: (seen, flagged)
        for folder, rows in box.doveadm_state().items()
        for mid, seen, flagged in rows
        if mid == message_id
    }


@pytest.mark.django_db(transaction=True)
def test_enabled_rules_archive_move_and_mark_read_on_the_server(
    imap_mailbox: Mailbox, user: Any, logged_in_client: Client, director: Any
) -> None:
    box = imap_mailbox
    box.create_folder("Projects")
    account = connect(box, user)
    synced(account)
    sorter = director("Sorter")
    assert add_filter(logged_in_client, sorter, r"news@", mailAction="archive").status_code == 201
    assert (
        add_filter(logged_in_client, sorter, r"bank@", mailAction="move", mailActionFolder="Projects").status_code
        == 201
    )
    assert add_filter(logged_in_client, sorter, r"boss@", mailAction="read").status_code == 201
    nowhere = add_filter(logged_in_client, sorter, r"shop@", mailAction="move", mailActionFolder="Nope")
    assert nowhere.status_code == 201
    # A move without a folder is refused with the field named, and nothing is stored.
    refused = add_filter(logged_in_client, sorter, r"x@", mailAction="move")
    assert refused.status_code == 400 and refused.json()["field"] == "mail_action_folder"
    assert Filter.objects.count() == 4

    for n, sender in enumerate(
        ["news@list.test", "bank@money.test", "boss@work.test", "shop@store.test", "friend@x.test"]
    ):
        box.append("INBOX", new_mail(n, sender))
    synced(account)  # stores, routes (rules queue their write-back), the write-back applies and syncs again

    assert folders_of(box, "rule0@rules.test") == {"Archive": (False, False)}
    assert folders_of(box, "rule1@rules.test") == {"Projects": (False, False)}
    assert folders_of(box, "rule2@rules.test") == {"INBOX": (True, False)}
    assert folders_of(box, "rule3@rules.test") == {"INBOX": (False, False)}
    assert folders_of(box, "rule4@rules.test") == {"INBOX": (False, False)}
    # The write-back's follow-up sync found the routing sync still holding the account: it asked for one more
    # pass, which the routing sync queued when it was done, and that pass brought the moves home without
    # downloading anything. No further sync is needed for the store to mirror the server.
    assert_mirrors(box, account)
    assert not MailAccount.objects.get(pk=account.pk).sync_again_requested
    assert synced(account).created == 0
    ledger = MailAction.objects.filter(account=account).order_by("pk")
    assert [(a.message.message_id, a.kind, a.origin, a.status) for a in ledger if a.message] == [
        ("rule0@rules.test", "archive", "rule", MailActionStatus.DONE),
        ("rule1@rules.test", "move", "rule", MailActionStatus.DONE),
        ("rule2@rules.test", "read", "rule", MailActionStatus.DONE),
    ]
    # The rule that could not apply says why on the filter; its mail is untouched and still here.
    broken = Filter.objects.get(pk=nowhere.json()["id"])
    assert "There is no folder 'Nope'" in broken.last_error
    assert Message.objects.filter(account=account, message_id="rule3@rules.test", folder="INBOX").exists()
    listing = logged_in_client.get(reverse("settings:filters")).content.decode()
    assert "then: archive" in listing and "then: move to a folder “Projects”" in listing


@pytest.mark.django_db(transaction=True)
def test_a_rule_that_adds_a_tag_puts_the_keyword_on_the_server(
    imap_mailbox: Mailbox, user: Any, logged_in_client: Client, director: Any
) -> None:
    """Issue 33: tags as a rule's action. The tag is added here and written back as an IMAP keyword (ledger
    origin "rule"); only the matching mail gets it; a rule without a tag or with a bad one is refused."""
    from apps.accounts.selectors import tags_by_message
    from tests.accounts.test_imap_keywords import server_keywords

    box = imap_mailbox
    account = connect(box, user)
    synced(account)
    sorter = director("Sorter")
    created = add_filter(logged_in_client, sorter, r"bills@", mailAction="tag", mailActionTag="receipts")
    assert created.status_code == 201 and created.json()["mailActionTag"] == "receipts"
    missing = add_filter(logged_in_client, sorter, r"x@", mailAction="tag")
    assert missing.status_code == 400 and missing.json()["field"] == "mail_action_tag"
    bad = add_filter(logged_in_client, sorter, r"y@", mailAction="tag", mailActionTag="two words")
    assert bad.status_code == 400 and bad.json()["field"] == "mail_action_tag"
    assert Filter.objects.count() == 1

    box.append("INBOX", new_mail(10, "bills@power.test"))
    box.append("INBOX", new_mail(11, "friend@x.test"))
    synced(account)

    keywords = server_keywords(box)["INBOX"]
    assert "receipts" in keywords["rule10@rules.test"]
    assert "receipts" not in keywords.get("rule11@rules.test", set())
    tagged = Message.objects.get(account=account, message_id="rule10@rules.test")
    other = Message.objects.get(account=account, message_id="rule11@rules.test")
    assert tags_by_message(message_ids=[tagged.pk, other.pk]) == {tagged.pk: ["receipts"], other.pk: []}
    ledger = [(a.kind, a.origin, a.status, a.requested_by_id) for a in MailAction.objects.filter(account=account)]
    assert ledger == [("tag", "rule", MailActionStatus.DONE, None)]
    assert_mirrors(box, account)
    listing = logged_in_client.get(reverse("settings:filters")).content.decode()
    assert "then: add a tag “receipts”" in listing
