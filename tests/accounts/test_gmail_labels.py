"""Gmail user labels ⇄ tags against the fake Gmail server: labels added or removed by another client become the
message's tags after the history sync, and tags added or taken off here reach Gmail (messages.modify, with
labels.create for a new name) through the write-back ledger; the fake's own labels are the oracle."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest

from apps.accounts import actions
from apps.accounts.models import MailAccount, MailAction, MailActionStatus, MailTag, Message, MessageTag
from apps.accounts.providers.gmail.provider import GmailProvider
from tests.accounts.mirror import assert_state_mirrors, synced
from tests.accounts.test_gmail_mirror import connect, gmail_id, mail
from tests.conftest import _serve_fake
from tests.fakes.google_server import FakeGoogleServer

pytestmark = pytest.mark.django_db

Capture = Callable[..., AbstractContextManager[list[Callable[[], Any]]]]


@pytest.fixture
def google(settings: Any) -> Iterator[FakeGoogleServer]:
    yield from _serve_fake(FakeGoogleServer(max_page_size=3), settings)


@pytest.fixture(autouse=True)
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(GmailProvider, "batch_size", 2)


def gmail_tags(google: FakeGoogleServer) -> dict[str, set[str]]:
    """{Message-ID: {user label name, …}} on the fake (the names a tag can be: no spaces or quotes)."""
    found: dict[str, set[str]] = {}
    with google.lock:
        for message in google.messages.values():
            if "SPAM" in message.labels:
                continue
            names = {google.user_labels[label] for label in message.labels if label in google.user_labels}
            names = {name for name in names if " " not in name and '"' not in name}
            if names:
                n = next(n for n in range(1, 100) if f"<g{n}@mirror.test>".encode() in message.raw)
                found[f"g{n}@mirror.test"] = names
    return found


def local_tags(account: MailAccount) -> dict[str, set[str]]:
    tags: dict[str, set[str]] = {}
    for message_id, name in MessageTag.objects.filter(
        message__account=account, message__deleted_at=None, tag__owner=account.owner
    ).values_list("message__message_id", "tag__name"):
        tags.setdefault(message_id, set()).add(name)
    return tags


def message(account: MailAccount, n: int) -> Message:
    return Message.objects.get(account=account, message_id=f"g{n}@mirror.test")


def test_labels_changed_in_gmail_become_tags(user: Any, google: FakeGoogleServer) -> None:
    google.add_label("Label_1", "Clients")
    google.add_label("Label_2", "Work/Projects")
    google.add_label("Label_3", "Big Deal")  # a space: no tag can be named so
    google.add_label("Label_5", "Junk")  # a user's label, not the IMAP state keyword
    google.add_message(mail(1), labels=["INBOX", "Label_1", "Label_2", "Label_3"])
    google.add_message(mail(4), labels=["INBOX", "Label_5"])
    google.add_message(mail(2), labels=["Label_2"])  # archived: its folder is its first user label
    google.add_message(mail(3), labels=["INBOX", "UNREAD"])
    account = connect(user, google)
    synced(account)
    assert local_tags(account) == {
        "g1@mirror.test": {"Clients", "Work/Projects"},
        "g2@mirror.test": {"Work/Projects"},
        "g4@mirror.test": {"Junk"},
    }
    assert local_tags(account) == gmail_tags(google)
    assert_state_mirrors(google.state(), account)

    # Another client labels and unlabels: the history sync (labelAdded / labelRemoved) follows.
    google.add_label("Label_4", "Über")
    google.modify_labels(gmail_id(google, 1), remove=["Label_1"])
    google.modify_labels(gmail_id(google, 3), add=["Label_4"])
    google.modify_labels(gmail_id(google, 2), add=["INBOX"], remove=["Label_2"])  # a move, and a label gone
    synced(account)
    assert local_tags(account) == {
        "g1@mirror.test": {"Work/Projects"},
        "g3@mirror.test": {"Über"},
        "g4@mirror.test": {"Junk"},
    }
    assert local_tags(account) == gmail_tags(google)
    assert not MailTag.objects.filter(owner=user, key="clients").exists()
    assert_state_mirrors(google.state(), account)

    # The history expired: the full resync reads the labels again.
    google.modify_labels(gmail_id(google, 3), remove=["Label_4"], add=["Label_1"])
    google.expire_history()
    synced(account)
    assert (
        local_tags(account)
        == gmail_tags(google)
        == {"g1@mirror.test": {"Work/Projects"}, "g3@mirror.test": {"Clients"}, "g4@mirror.test": {"Junk"}}
    )


def test_tags_added_and_removed_here_reach_gmail_as_labels(
    user: Any, google: FakeGoogleServer, django_capture_on_commit_callbacks: Capture
) -> None:
    google.add_label("Label_1", "Clients")
    google.add_message(mail(1), labels=["INBOX"])
    google.add_message(mail(2), labels=["INBOX", "UNREAD"])
    account = connect(user, google)
    synced(account)

    # An existing label (compared as tags are, case-insensitively) is reused; a new name is created.
    with django_capture_on_commit_callbacks(execute=True):
        actions.add_tag(owner=user, messages=[message(account, 1)], name="clients")
        actions.add_tag(owner=user, messages=[message(account, 1), message(account, 2)], name="Receipts")
    assert google.label_creations == 1
    assert gmail_tags(google) == {"g1@mirror.test": {"Clients", "Receipts"}, "g2@mirror.test": {"Receipts"}}
    done = MailAction.objects.filter(kind="tag").order_by("pk")
    assert [a.status for a in done] == [MailActionStatus.DONE] * 3, [a.error for a in done]
    assert "messages.modify +Label_1" in done[0].provider_response

    # The next sync agrees (the tag's spelling here stays), and the mailbox state is unchanged.
    synced(account)
    assert local_tags(account) == {"g1@mirror.test": {"clients", "Receipts"}, "g2@mirror.test": {"Receipts"}}
    assert_state_mirrors(google.state(), account)

    with django_capture_on_commit_callbacks(execute=True):
        actions.remove_tag(owner=user, messages=[message(account, 1), message(account, 2)], name="receipts")
    assert gmail_tags(google) == {"g1@mirror.test": {"Clients"}}
    synced(account)
    assert local_tags(account) == {"g1@mirror.test": {"clients"}}

    # A tag named like one of Gmail's own labels stays here, and the ledger says why.
    with django_capture_on_commit_callbacks(execute=True):
        actions.add_tag(owner=user, messages=[message(account, 2)], name="Starred")
    refused = MailAction.objects.get(kind="tag", tag="Starred")
    assert refused.status == MailActionStatus.GAVE_UP and "kept here only" in refused.error
    assert "STARRED" not in google.messages[gmail_id(google, 2)].labels
    synced(account)
    assert local_tags(account) == {"g1@mirror.test": {"clients"}, "g2@mirror.test": {"Starred"}}
