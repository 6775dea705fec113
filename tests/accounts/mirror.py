"""What the mirror tests share: the local state in the oracle's shape, the whole-state comparison, a sync."""

from __future__ import annotations

from apps.accounts.models import MailAccount, Message, MessageLocation
from apps.accounts.sync import SyncOutcome, sync_account

State = dict[str, list[tuple[str, bool, bool]]]


def local_state(account: MailAccount) -> State:
    """{folder: sorted [(Message-ID, seen, flagged)]} from the stored locations."""
    state: State = {}
    for folder, message_id, seen, flagged in MessageLocation.objects.filter(account=account).values_list(
        "folder__name", "message__message_id", "seen", "flagged"
    ):
        state.setdefault(folder, []).append((message_id, seen, flagged))
    return {folder: sorted(rows) for folder, rows in state.items()}


def assert_state_mirrors(server: State, account: MailAccount) -> None:
    """Every folder's messages and flags equal the server's; live messages are exactly the server's, each
    with a place, and a message deleted here has none."""
    assert local_state(account) == server
    live = set(Message.objects.filter(account=account, deleted_at=None).values_list("message_id", flat=True))
    assert live == {row[0] for rows in server.values() for row in rows}
    assert not Message.objects.filter(account=account, deleted_at=None, locations__isnull=True).exists()
    assert not Message.objects.filter(account=account, deleted_at__isnull=False, locations__isnull=False).exists()


def synced(account: MailAccount) -> SyncOutcome:
    outcome = sync_account(account.pk)
    assert outcome.status == "ok", outcome.error_message
    return outcome
