"""Outlook categories ⇄ tags against the fake Graph server: categories set or cleared by another client become the
message's tags after the delta sync (moves included), and tags added or taken off here reach Graph (PATCH of the
message's categories) through the write-back ledger; the fake's own categories are the oracle."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import pytest

from apps.accounts import actions
from apps.accounts.models import MailAccount, MailAction, MailActionStatus, MailTag, Message, MessageTag
from apps.accounts.providers.outlook import OutlookProvider
from tests.accounts.mirror import assert_state_mirrors, synced
from tests.accounts.test_outlook_mirror import mail
from tests.fakes.graph_server import FakeGraphServer, connect_outlook

pytestmark = pytest.mark.django_db

Capture = Callable[..., AbstractContextManager[list[Callable[[], Any]]]]


@pytest.fixture(autouse=True)
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(OutlookProvider, "delta_page_size", 2)


@pytest.fixture
def account(logged_in_client: Any, graph: FakeGraphServer) -> MailAccount:
    return connect_outlook(logged_in_client, graph)


def graph_tags(graph: FakeGraphServer) -> dict[str, set[str]]:
    """{Message-ID: {category, …}} on the fake, for the categories a tag can be (no spaces or quotes)."""
    found: dict[str, set[str]] = {}
    with graph.lock:
        for message in graph.messages.values():
            names = {name for name in message.categories if " " not in name and '"' not in name}
            if message.removed or not names:
                continue
            n = next(n for n in range(1, 100) if f"<o{n}@mirror.test>".encode() in message.mime)
            found[f"o{n}@mirror.test"] = names
    return found


def local_tags(account: MailAccount) -> dict[str, set[str]]:
    tags: dict[str, set[str]] = {}
    for message_id, name in MessageTag.objects.filter(
        message__account=account, message__deleted_at=None, tag__owner=account.owner
    ).values_list("message__message_id", "tag__name"):
        tags.setdefault(message_id, set()).add(name)
    return tags


def message(account: MailAccount, n: int) -> Message:
    return Message.objects.get(account=account, message_id=f"o{n}@mirror.test")


def test_categories_changed_in_outlook_become_tags(account: MailAccount, graph: FakeGraphServer) -> None:
    inbox = graph.folder_id("inbox")
    projects = graph.add_folder("Projects", parent_id=inbox)
    m1 = graph.add_message(inbox, mail(1), categories=["Clients", "Red category"])  # a space: not a tag
    m2 = graph.add_message(inbox, mail(2), categories=["Junk"])  # a user's category, not IMAP state
    graph.add_message(inbox, mail(3))
    synced(account)
    assert local_tags(account) == {"o1@mirror.test": {"Clients"}, "o2@mirror.test": {"Junk"}}
    assert local_tags(account) == graph_tags(graph)

    graph.update_message(m1, categories=["Red category", "Über"])
    graph.update_message(m2, categories=["Junk", "Work/Q4"])
    graph.move_message(m2, projects)
    synced(account)
    assert local_tags(account) == {"o1@mirror.test": {"Über"}, "o2@mirror.test": {"Junk", "Work/Q4"}}
    assert local_tags(account) == graph_tags(graph)
    assert not MailTag.objects.filter(owner=account.owner, key="clients").exists()
    # A move with a category taken off in the same round: the tag goes too.
    graph.update_message(m2, categories=["Work/Q4"])
    graph.move_message(m2, inbox)
    synced(account)
    assert local_tags(account) == graph_tags(graph) == {"o1@mirror.test": {"Über"}, "o2@mirror.test": {"Work/Q4"}}
    assert_state_mirrors(graph.state(), account)


def test_tags_added_and_removed_here_reach_outlook_as_categories(
    account: MailAccount, graph: FakeGraphServer, user: Any, django_capture_on_commit_callbacks: Capture
) -> None:
    inbox = graph.folder_id("inbox")
    graph.add_message(inbox, mail(1), categories=["Red category", "clients"])
    graph.add_message(inbox, mail(2))
    synced(account)

    with django_capture_on_commit_callbacks(execute=True):
        actions.add_tag(owner=user, messages=[message(account, 1), message(account, 2)], name="Receipts")
        actions.add_tag(owner=user, messages=[message(account, 2)], name="Clients")
    # The tag keeps the spelling it was first given (here: the category's, from the sync).
    assert graph_tags(graph) == {"o1@mirror.test": {"clients", "Receipts"}, "o2@mirror.test": {"Receipts", "clients"}}
    # Categories that are no tag (a space) are kept: the whole list is written back.
    with graph.lock:
        first = next(m for m in graph.messages.values() if b"<o1@mirror.test>" in m.mime)
        assert first.categories == ["Red category", "clients", "Receipts"]
    done = MailAction.objects.filter(kind="tag").order_by("pk")
    assert [a.status for a in done] == [MailActionStatus.DONE] * 3, [a.error for a in done]

    synced(account)
    assert local_tags(account) == {"o1@mirror.test": {"clients", "Receipts"}, "o2@mirror.test": {"Receipts", "clients"}}

    with django_capture_on_commit_callbacks(execute=True):
        actions.remove_tag(owner=user, messages=[message(account, 1), message(account, 2)], name="CLIENTS")
    assert graph_tags(graph) == {"o1@mirror.test": {"Receipts"}, "o2@mirror.test": {"Receipts"}}
    with graph.lock:
        assert first.categories == ["Red category", "Receipts"]
    synced(account)
    assert local_tags(account) == graph_tags(graph)
    assert_state_mirrors(graph.state(), account)
