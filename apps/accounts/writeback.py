"""Write-back: what is decided here (read, flag, archive, move, trash, tag) reaches the server through one ledger.

`request_mail_actions` records one MailAction per message, applies flag changes to the local store at once
(the page shows them) and queues the provider call on commit. `apply_mail_action` performs it outside any
transaction (IMAP STORE / MOVE, …), records the provider's answer, and syncs the account so the store
confirms the server's state (a move becomes the new location through the mirror, nothing is downloaded).
A failure is recorded with its error and retried with backoff by `retry_due_mail_actions` (a maintenance
schedule) until MAX_ATTEMPTS; the server's state always wins at the next sync.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from apps.accounts import labels, locations
from apps.accounts.models import (
    MailAccount,
    MailAction,
    MailActionKind,
    MailActionStatus,
    MailFolder,
    Message,
    MessageLocation,
    Provider,
)
from apps.accounts.providers import get_provider
from apps.accounts.providers.base import ProviderError, WriteBackPlace
from apps.accounts.sync import sync_account

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 6
RETRY_BASE = dt.timedelta(minutes=1)
RETRY_BATCH = 200
FLAG_KINDS = {
    MailActionKind.READ: ("seen", True),
    MailActionKind.UNREAD: ("seen", False),
    MailActionKind.FLAG: ("flagged", True),
    MailActionKind.UNFLAG: ("flagged", False),
}
MOVE_KINDS = {MailActionKind.MOVE, MailActionKind.ARCHIVE, MailActionKind.TRASH}
ROLE_OF_KIND = {MailActionKind.ARCHIVE: "archive", MailActionKind.TRASH: "trash"}
TAG_KINDS = {MailActionKind.TAG, MailActionKind.UNTAG}
# Where a tag is a label on the server (an IMAP keyword, a Gmail user label, an Outlook category).
TAG_PROVIDERS = {Provider.IMAP, Provider.GMAIL, Provider.OUTLOOK}
INVERSE = {
    MailActionKind.TAG: MailActionKind.UNTAG,
    MailActionKind.UNTAG: MailActionKind.TAG,
    MailActionKind.READ: MailActionKind.UNREAD,
    MailActionKind.UNREAD: MailActionKind.READ,
    MailActionKind.FLAG: MailActionKind.UNFLAG,
    MailActionKind.UNFLAG: MailActionKind.FLAG,
}


class MailActionRefused(ValueError):
    """The action cannot be asked for (no Archive folder, an unknown folder, …): say what to do instead."""


@dataclass(slots=True)
class ApplyOutcome:
    action_id: int
    status: str
    error: str = ""


def target_folder_for(*, account: MailAccount, kind: str, folder: str = "") -> str:
    """The MailFolder.name a move/archive/trash goes to, or MailActionRefused saying why there is none."""
    if kind == MailActionKind.MOVE:
        if not MailFolder.objects.filter(account=account, name=folder).exists():
            raise MailActionRefused(f"There is no folder {folder!r} in {account.name}.")
        return folder
    role = ROLE_OF_KIND[MailActionKind(kind)]
    found = MailFolder.objects.filter(account=account, role=role).order_by("pk").values_list("name", flat=True).first()
    if found is None:
        raise MailActionRefused(
            f"{account.name} has no {role.capitalize()} folder on the server; choose “Move to…” and a folder instead."
        )
    return found


def request_mail_actions(
    *,
    messages: Sequence[Message],
    kind: str,
    folder: str = "",
    source_folder: str | None = None,
    requested_by: Any = None,
    origin: str = "user",
    tag: str = "",
) -> list[MailAction]:
    """Record and queue `kind` on each message (skipping those already in that state or place). Flag changes
    show here at once; moves show once the server has done them (the sync that follows confirms them). Tag
    and untag carry the tag's name; the tag itself is changed here by the caller (apps.accounts.actions), and
    only accounts whose server has labels (TAG_PROVIDERS) get an action."""
    kind = MailActionKind(kind)
    if kind in TAG_KINDS and not tag:
        raise ValueError("a tag or untag action needs the tag's name")
    created: list[MailAction] = []
    by_account: dict[int, list[Message]] = {}
    for message in messages:
        by_account.setdefault(message.account_id, []).append(message)
    with transaction.atomic():
        for account_id, group in by_account.items():
            account = MailAccount.objects.get(pk=account_id)
            if kind in TAG_KINDS and account.provider not in TAG_PROVIDERS:
                continue
            target = target_folder_for(account=account, kind=kind, folder=folder) if kind in MOVE_KINDS else ""
            places = _places_by_message([m.pk for m in group], source_folder=source_folder)
            for message in group:
                here = places.get(message.pk, [])
                if not _needed(kind, here, target):
                    continue
                created.append(
                    MailAction.objects.create(
                        account=account,
                        message=message,
                        requested_by=requested_by if getattr(requested_by, "pk", None) else None,
                        origin=origin,
                        kind=kind,
                        target_folder=target,
                        source_folders=sorted({loc.folder.name for loc in here}),
                        tag=tag if kind in TAG_KINDS else "",
                    )
                )
            if kind in FLAG_KINDS:
                _apply_flags_locally(
                    account=account, kind=kind, places=[p for m in group for p in places.get(m.pk, [])]
                )
                # A message whose own state had drifted from its places (they already say so) follows them.
                changed = locations.refresh_messages(account=account, message_ids=[m.pk for m in group])
                locations.announce_changed(account_id=account.pk, message_ids=changed)
        ids = [action.pk for action in created]
        transaction.on_commit(lambda: _enqueue(ids))
    return created


def undo_mail_action(*, action: MailAction, requested_by: Any = None) -> MailAction:
    """The inverse of a done action: unread for read, unflag for flag, a move back to where it was."""
    if action.status != MailActionStatus.DONE or action.message is None:
        raise MailActionRefused("Only an action done on the server can be undone.")
    kind = MailActionKind(action.kind)
    if kind in TAG_KINDS:
        # The tag here changes back at once; the server follows through the ledger.
        owner_id = action.account.owner_id
        change = {action.message.pk: {action.tag}}
        if kind == MailActionKind.TAG:
            labels.detach_tags(owner_id=owner_id, tags=change)
        else:
            labels.attach_tags(owner_id=owner_id, tags=change)
        undone = request_mail_actions(
            messages=[action.message], kind=INVERSE[kind], requested_by=requested_by, tag=action.tag
        )
    elif kind in INVERSE:
        undone = request_mail_actions(messages=[action.message], kind=INVERSE[kind], requested_by=requested_by)
    else:
        back = next(iter(action.source_folders), "")
        if not back:
            raise MailActionRefused("Where the message was is not known, so the move cannot be undone.")
        undone = request_mail_actions(
            messages=[action.message], kind=MailActionKind.MOVE, folder=back, requested_by=requested_by
        )
    if not undone:
        raise MailActionRefused("Nothing to undo: the message is already back as it was.")
    MailAction.objects.filter(pk=undone[0].pk).update(undo_of=action)
    undone[0].undo_of = action
    return undone[0]


def _places_by_message(message_ids: list[int], *, source_folder: str | None) -> dict[int, list[MessageLocation]]:
    rows = MessageLocation.objects.filter(message_id__in=message_ids).select_related("folder").order_by("pk")
    by_message: dict[int, list[MessageLocation]] = {}
    for row in rows:
        by_message.setdefault(row.message_id, []).append(row)
    if source_folder:
        # Acting from one folder moves the copy in that folder; flags still go to every copy.
        return {
            pk: [p for p in places if p.folder.name == source_folder] or places for pk, places in by_message.items()
        }
    return by_message


def _needed(kind: MailActionKind, places: list[MessageLocation], target: str) -> bool:
    if not places:
        return False
    if kind in TAG_KINDS:
        return True
    if kind in FLAG_KINDS:
        field, value = FLAG_KINDS[kind]
        return any(getattr(place, field) != value for place in places)
    return any(place.folder.name != target for place in places)


def _apply_flags_locally(*, account: MailAccount, kind: MailActionKind, places: list[MessageLocation]) -> None:
    field, value = FLAG_KINDS[kind]
    changes = {
        place.provider_id: (value if field == "seen" else place.seen, value if field == "flagged" else place.flagged)
        for place in places
    }
    locations.update_flags(account=account, changes=changes)


def _enqueue(action_ids: list[int]) -> None:
    from django_q.tasks import async_task

    for action_id in action_ids:
        async_task("apps.accounts.tasks.apply_mail_action_task", action_id, task_name=f"write-back {action_id}")


def apply_mail_action(action_id: int) -> ApplyOutcome:
    """Perform one recorded action at the provider. Never raises for provider trouble: the ledger says it."""
    claimed = MailAction.objects.filter(
        pk=action_id, status__in=[MailActionStatus.PENDING, MailActionStatus.FAILED]
    ).update(attempts=F("attempts") + 1, next_attempt_at=None)
    action = MailAction.objects.select_related("account", "message").filter(pk=action_id).first()
    if action is None or not claimed:
        return ApplyOutcome(action_id=action_id, status=action.status if action else "missing")
    account = action.account
    if action.message is None:
        return _finish(action, MailActionStatus.GAVE_UP, error="The message no longer exists here.")
    if account.provider == Provider.LOCAL:
        return _finish(action, MailActionStatus.DONE, response="A local archive: stored here only.")
    places = list(MessageLocation.objects.filter(message=action.message).select_related("folder").order_by("pk"))
    if action.kind in MOVE_KINDS:
        places = [p for p in places if p.folder.name in set(action.source_folders)] or places
    if not places:
        return _finish(action, MailActionStatus.GAVE_UP, error="The message is no longer on the server.")
    provider = get_provider(account)
    try:
        response = provider.write_back(
            kind=action.kind,
            places=[WriteBackPlace(folder=p.folder.name, provider_id=p.provider_id) for p in places],
            target=action.target_folder,
            tag=action.tag,
        )
    except ProviderError as exc:
        give_up = action.attempts >= MAX_ATTEMPTS or exc.category == "unsupported"
        return _finish(action, MailActionStatus.GAVE_UP if give_up else MailActionStatus.FAILED, error=str(exc))
    finally:
        provider.close()
    outcome = _finish(action, MailActionStatus.DONE, response=response)
    if action.kind in MOVE_KINDS:
        # The store follows the server: the moved copy becomes a location (recognised, not downloaded).
        sync_account(account.pk)
    return outcome


def _finish(action: MailAction, status: str, *, response: str = "", error: str = "") -> ApplyOutcome:
    now = timezone.now()
    fields: dict[str, Any] = {"status": status, "provider_response": response[:4000], "error": error[:4000]}
    if status == MailActionStatus.DONE:
        fields["done_at"] = now
    elif status == MailActionStatus.FAILED:
        fields["next_attempt_at"] = now + RETRY_BASE * (2 ** max(0, action.attempts - 1))
    MailAction.objects.filter(pk=action.pk).update(**fields)
    if error:
        logger.warning("write-back %s (%s) failed: %s", action.pk, action.kind, error)
    return ApplyOutcome(action_id=action.pk, status=status, error=error)


def retry_due_mail_actions(*, now: dt.datetime | None = None) -> int:
    """Scheduled: try again the failed actions whose backoff has passed, and pending ones whose task was lost."""
    at = now or timezone.now()
    due = list(
        MailAction.objects.filter(status=MailActionStatus.FAILED, next_attempt_at__lte=at).values_list("pk", flat=True)[
            :RETRY_BATCH
        ]
    )
    # A pending action older than a few minutes lost its task (the process died before it ran).
    stuck = list(
        MailAction.objects.filter(
            status=MailActionStatus.PENDING, created_at__lte=at - dt.timedelta(minutes=5)
        ).values_list("pk", flat=True)[:RETRY_BATCH]
    )
    for action_id in [*due, *stuck]:
        apply_mail_action(action_id)
    return len(due) + len(stuck)
