"""The local store mirrors Outlook: another client deletes, moves (immutable ids) and flags mail, then a
sync, then the *whole* state (each folder's Message-IDs with seen and flagged, from MessageLocation) compared
with the fake Graph's own view; and read, flag, archive, trash and move made here reach Graph through the
write-back ledger and survive the next sync."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from email.message import EmailMessage
from typing import Any

import pytest

from apps.accounts.models import MailAccount, MailAction, MailActionStatus, MailFolder, Message
from apps.accounts.providers.base import ProviderError
from apps.accounts.providers.outlook import OutlookProvider
from apps.accounts.sync import sync_account
from apps.accounts.writeback import request_mail_actions, undo_mail_action
from tests.accounts.mirror import assert_state_mirrors, synced
from tests.fakes.graph_server import FakeGraphServer, connect_outlook

pytestmark = pytest.mark.django_db

Capture = Callable[..., AbstractContextManager[list[Callable[[], Any]]]]


@pytest.fixture(autouse=True)
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(OutlookProvider, "delta_page_size", 2)


@pytest.fixture
def account(logged_in_client: Any, graph: FakeGraphServer) -> MailAccount:
    return connect_outlook(logged_in_client, graph)


def mail(n: int) -> bytes:
    message = EmailMessage()
    message["From"] = f"Customer {n} <customer{n}@example.com>"
    message["To"] = "owner@outlook.test"
    message["Subject"] = f"Outlook message {n}"
    message["Message-ID"] = f"<o{n}@mirror.test>"
    message["Date"] = f"Tue, 03 Nov 2026 09:{n % 60:02d}:00 +0000"
    message.set_content(f"Hello {n}\n")
    return bytes(message)


def value_fetches(graph: FakeGraphServer) -> int:
    with graph.lock:
        return sum(1 for _, path in graph.log if path.startswith("/v1.0/me/messages/") and path.endswith("/$value"))


def assert_mirrors(graph: FakeGraphServer, account: MailAccount) -> None:
    assert_state_mirrors(graph.state(), account)


def seed(graph: FakeGraphServer) -> dict[str, str]:
    inbox = graph.folder_id("inbox")
    projects = graph.add_folder("Projects", parent_id=inbox)
    ids = {"projects": projects}
    for n in range(1, 7):
        ids[f"m{n}"] = graph.add_message(inbox, mail(n), is_read=n % 2 == 0, flagged=n == 6)
    ids["m7"] = graph.add_message(projects, mail(7))
    ids["m8"] = graph.add_message(graph.folder_id("archive"), mail(8), is_read=True)
    ids["m9"] = graph.add_message(graph.folder_id("sentitems"), mail(9), is_read=True)
    return ids


def test_every_change_made_in_outlook_is_mirrored(account: MailAccount, graph: FakeGraphServer) -> None:
    ids = seed(graph)
    assert synced(account).created == 9
    assert_mirrors(graph, account)
    fetched = value_fetches(graph)

    # Read and flag changes by another client.
    graph.update_message(ids["m1"], is_read=True, flagged=True)
    graph.update_message(ids["m6"], flagged=False)
    synced(account)
    assert_mirrors(graph, account)

    # Deleted for good: @removed takes its place away, the sync marks it deleted.
    graph.delete_message(ids["m2"])
    outcome = synced(account)
    assert (outcome.removed, outcome.deleted, outcome.created) == (1, 1, 0)
    assert_mirrors(graph, account)

    # Moves both ways round the folder order (Inbox is synced before Archive, Projects right after Inbox),
    # a move to Deleted Items, and a flag set in the new folder: locations move, nothing is downloaded.
    graph.move_message(ids["m3"], graph.folder_id("archive"))
    graph.move_message(ids["m8"], graph.folder_id("inbox"))
    graph.move_message(ids["m4"], ids["projects"])
    graph.move_message(ids["m5"], graph.folder_id("deleteditems"))
    graph.update_message(ids["m3"], flagged=True)
    outcome = synced(account)
    assert (outcome.created, outcome.deleted, outcome.located) == (0, 0, 4)
    assert_mirrors(graph, account)
    moved = Message.objects.get(account=account, message_id="o3@mirror.test")
    assert (moved.folder, moved.flagged, moved.provider_id) == (graph.folder_id("archive"), True, ids["m3"])

    # Moved away and back between two syncs, and a new message moved before it was ever synced.
    graph.move_message(ids["m7"], graph.folder_id("inbox"))
    graph.move_message(ids["m7"], ids["projects"])
    newcomer = graph.add_message(graph.folder_id("inbox"), mail(10))
    graph.move_message(newcomer, graph.folder_id("archive"))
    outcome = synced(account)
    assert (outcome.created, outcome.deleted) == (1, 0)
    assert_mirrors(graph, account)
    assert value_fetches(graph) - fetched == 1

    # An expired delta link after more moves and a deletion: every folder is read again from scratch (no
    # '@removed' then), what is no longer listed goes, nothing is stored twice.
    graph.move_message(ids["m1"], graph.folder_id("archive"))
    graph.move_message(ids["m8"], ids["projects"])
    graph.delete_message(ids["m6"])
    graph.expire_delta_tokens()
    outcome = synced(account)
    assert (outcome.created, outcome.deleted) == (0, 1)
    assert_mirrors(graph, account)
    assert value_fetches(graph) - fetched == 1

    quiet = synced(account)
    assert (quiet.created, quiet.located, quiet.removed, quiet.deleted) == (0, 0, 0, 0)
    assert_mirrors(graph, account)


def test_read_flag_archive_trash_move_and_undo_reach_outlook(
    account: MailAccount, graph: FakeGraphServer, django_capture_on_commit_callbacks: Capture
) -> None:
    ids = seed(graph)
    synced(account)
    fetched = value_fetches(graph)

    def act(n: int, kind: str, folder: str = "") -> MailAction:
        message = Message.objects.get(account=account, message_id=f"o{n}@mirror.test")
        with django_capture_on_commit_callbacks(execute=True):
            (action,) = request_mail_actions(messages=[message], kind=kind, folder=folder)
        action.refresh_from_db()
        assert action.status == MailActionStatus.DONE, action.error
        return action

    read = act(1, "read")
    assert graph.messages[ids["m1"]].is_read and "PATCH isRead=True" in read.provider_response
    act(1, "flag")
    assert graph.messages[ids["m1"]].flagged
    act(6, "unflag")
    act(2, "unread")
    assert not graph.messages[ids["m6"]].flagged and not graph.messages[ids["m2"]].is_read
    synced(account)
    assert_mirrors(graph, account)

    archive = act(3, "archive")
    assert graph.messages[ids["m3"]].folder_id == graph.folder_id("archive")
    assert archive.target_folder == graph.folder_id("archive")
    assert_mirrors(graph, account)
    trash = act(4, "trash")
    assert graph.messages[ids["m4"]].folder_id == graph.folder_id("deleteditems")
    assert_mirrors(graph, account)
    act(5, "move", folder=ids["projects"])
    assert graph.messages[ids["m5"]].folder_id == ids["projects"]
    assert_mirrors(graph, account)

    with django_capture_on_commit_callbacks(execute=True):
        undo = undo_mail_action(action=trash)
    undo.refresh_from_db()
    assert undo.status == MailActionStatus.DONE, undo.error
    assert graph.messages[ids["m4"]].folder_id == graph.folder_id("inbox")
    synced(account)
    assert_mirrors(graph, account)
    assert value_fetches(graph) == fetched  # every move was followed without downloading anything
    assert MailFolder.objects.get(account=account, name=graph.folder_id("deleteditems")).role == "trash"


def test_a_message_graph_no_longer_has_is_reported_not_retried(
    account: MailAccount, graph: FakeGraphServer, django_capture_on_commit_callbacks: Capture
) -> None:
    ids = seed(graph)
    synced(account)
    graph.delete_message(ids["m1"])
    message = Message.objects.get(account=account, message_id="o1@mirror.test")
    with django_capture_on_commit_callbacks(execute=True):
        (action,) = request_mail_actions(messages=[message], kind="flag")
    action.refresh_from_db()
    assert (action.status, action.provider_response) == (
        MailActionStatus.DONE,
        f"{ids['m1']}: already gone from Outlook",
    )
    synced(account)
    assert_mirrors(graph, account)


def test_a_round_from_scratch_cut_short_by_a_crash_still_drops_what_is_gone(
    account: MailAccount, graph: FakeGraphServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A round from scratch lists no '@removed': only its end tells what left while no delta link covered it.
    # Cut short after its first page (the network dropped; a killed worker is the same), the next sync used to
    # resume from the stored nextLink, never knew what the first page had listed, and kept a deleted message
    # in its folder for good.
    ids = seed(graph)
    synced(account)
    fetched = value_fetches(graph)
    graph.delete_message(ids["m2"])
    graph.expire_delta_tokens()

    pages = 0
    real_page = OutlookProvider._delta_page

    def crash_after_the_first_page(self: OutlookProvider, url: str) -> dict[str, Any]:
        nonlocal pages
        pages += 1
        if pages == 3:  # the inbox's expired link, then its first page from scratch, then the network drops
            raise ProviderError("Could not reach Microsoft Graph: connection reset", category="network")
        return real_page(self, url)

    monkeypatch.setattr(OutlookProvider, "_delta_page", crash_after_the_first_page)
    assert sync_account(account.pk).status == "error"
    inbox = MailFolder.objects.get(account=account, name=graph.folder_id("inbox"))
    assert inbox.sync_token.startswith("scratch-round "), inbox.sync_token  # the round's nextLink, marked
    monkeypatch.setattr(OutlookProvider, "_delta_page", real_page)

    outcome = synced(account)
    assert (outcome.created, outcome.deleted) == (0, 1)
    assert_mirrors(graph, account)
    assert value_fetches(graph) == fetched  # the round started over on metadata pages: no MIME fetched again
    assert not MailFolder.objects.get(pk=inbox.pk).sync_token.startswith("scratch-round ")
